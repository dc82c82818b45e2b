"""Layer 6: the typed configuration of a training run, loaded from YAML, overridable from the command line.

One pydantic model per part of the run, every field documented (``Field(description=...)``), types and
ranges enforced and unknown keys refused, so a typo or a wrong value fails at load time with one line
naming the key::

    >>> cfg = RunConfig.from_dict({"model": {"path": "/tmp/m"}, "tasks": [{"id": "null/echo"}]})
    >>> cfg.train.correction
    'truncated_is'
    >>> apply_overrides({"train": {"lr": 0.1}}, ["train.lr=3e-4", "rollout.group_size=4"])
    {'train': {'lr': '3e-4'}, 'rollout': {'group_size': 4}}

Where env servers run is chosen per domain (``envs[].provider``: ``local``, ``docker``, ``ray``, or given
``urls``) and how weights travel by ``weights.transport`` (``ray`` object store, ``filesystem``, or
``vllm``: files each vLLM engine loads in place).
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, Literal

import annotated_types
import pydantic
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from mintgym.buffer.mixer import unhonoured


class ConfigError(ValueError):
    """A run config (file, key, type or value) that cannot be used; the message is one line naming the key."""


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        """``true`` where a number is expected is an error, not 1 (pydantic's lax mode would take it)."""
        annotation = cls.model_fields[info.field_name].annotation
        if not _takes_bool(annotation) and _holds_bool(value):
            raise ValueError(f"expected {_type_words(annotation, [])}, got {value!r}")
        return value


class ModelConfig(_Part):
    path: str = Field(min_length=1, description="Checkpoint directory (a Hugging Face VLM). With ``build_tiny`` "
                                                "it is built there first if missing.")
    build_tiny: bool = Field(False, description="Build the tiny random Qwen2-VL "
                                                "(:func:`mintgym.models.tiny.build_tiny_vlm`) at ``path`` if absent; "
                                                "one built there with another seed or options is refused.")
    tiny_seed: int = Field(0, description="Seed of the tiny model's random weights.")
    tiny_options: dict[str, Any] = Field(default_factory=dict, description="Other keyword options of "
                                         "``build_tiny_vlm`` (``vocab_size``, ``hidden_size`` ...).")
    device: str = Field("cpu", description="Trainer device (``cpu``, ``cuda``, ``cuda:1``).")
    dtype: Literal["float32", "bfloat16", "float16"] | None = Field(
        None, description="Trainer weights dtype; None: float32.")


class EngineConfig(_Part):
    name: Literal["hf", "vllm"] = Field("hf", description="Inference engine: ``hf`` (transformers, CPU) or ``vllm``.")
    options: dict[str, Any] = Field(default_factory=dict, description="Keyword options of the engine, checked "
                                    "against its constructor (``aligned_logprobs``, ``max_batch_size``, vllm's "
                                    "``gpu_memory_utilization``...).")

    @model_validator(mode="after")
    def _options_fit_the_engine(self) -> EngineConfig:
        import importlib

        from mintgym.inference import ENGINES
        from mintgym.plugin_options import check_options

        module, _, name = ENGINES[self.name].partition(":")
        check_options(getattr(importlib.import_module(module), name), self.options, "options",
                      skip=("model_path", "model", "processor", "policy_version"))
        return self


class AgentConfig(_Part):
    kind: str = Field("answer", description="A registered agent that samples from its engine (the "
                      "``mintgym.agents`` entry points): ``answer``, one short sampled answer, submitted as "
                      "``done(answer=...)`` or, with ``click_grid``, clicked as the grid cell it names; ``vlm``, "
                      "the full VLMAgent; or an installed package's.")
    options: dict[str, Any] = Field(default_factory=dict, description="Options of the agent, checked against its "
                                    "constructor (``answer``: ``choices`` per domain; ``vlm``: VLMAgent keyword "
                                    "options). ``max_new_tokens``, ``temperature`` (and vlm's ``top_p``) here take "
                                    "the place of the rollout's.")
    max_turns: int | None = Field(None, ge=1, description="Most env steps per episode (an invalid action's "
                                  "step and the answer agent's closing ``done()`` count): the env session "
                                  "truncates the episode there and scores its state (None: the task's limit).")

    @model_validator(mode="after")
    def _a_trainable_agent_with_its_options(self) -> AgentConfig:
        import importlib

        from mintgym.plugin_options import check_options

        factory = importlib.import_module("mintgym.agents").agent_factory(self.kind)  # by name: see rollout.agents
        if not getattr(factory, "needs_engine", False):
            raise ValueError(f"kind {self.kind!r} does not sample from an inference engine (its class does not say "
                             "needs_engine), so there is nothing to train; use answer, vlm or an agent that does")
        check_options(factory, self.options, "options", skip=("engine",))
        return self


class EnvConfig(_Part):
    domain: str = Field(description="Domain served (a registered host: ``null``, ``pytool``, ``web`` ...).")
    provider: Literal["local", "docker", "ray"] = Field(
        "local", description="Where this domain's env servers run: ``local`` (subprocesses of the trainer), "
                             "``docker`` (a container each), ``ray`` (a Ray actor each, placed by ``resources``). "
                             "Ignored when ``urls`` are given.")
    servers: int = Field(1, ge=1, description="Env servers of this domain. Each rollout worker plays "
                         "on its share (server i serves worker i mod ``rollout.workers``; with fewer servers "
                         "than workers, workers share one), its sessions spread over them.")
    num_cpus: float | None = Field(None, ge=0, description="``ray`` provider: CPUs each server reserves on its "
                                   "node (None: 0, nothing reserved).")
    resources: dict[str, float] = Field(default_factory=dict, description="``ray`` provider: custom Ray "
                                        "resources each server reserves, so it lands on a node that has them "
                                        "(``{envnode: 1}``).")
    provider_options: dict[str, Any] = Field(default_factory=dict, description="Other options of the provider: "
                                             "docker's ``image``, ``network``, ``cpus``, ``memory`` ...; ray's "
                                             "``bind``, ``scheduling``, ``memory`` ... (see mintgym.runtime).")
    host_options: dict[str, Any] = Field(default_factory=dict, description="Host options passed to each server "
                                         "(as ``mintgym serve -o KEY=VALUE`` gives them).")
    session_options: dict[str, Any] = Field(default_factory=dict, description="Options of every env session the "
                                            "workers open on this domain (web's ``miniwob_time_limit_ms``, "
                                            "``viewport`` ...); the server validates them when a worker starts.")
    urls: list[str] = Field(default_factory=list, description="Use these running servers instead of starting any.")

    @model_validator(mode="after")
    def _ray_fields_need_ray(self) -> EnvConfig:
        if self.provider != "ray" and not self.urls and (self.resources or self.num_cpus is not None):
            raise ValueError(f"num_cpus and resources place env servers on Ray nodes: they need provider: ray, "
                             f"not {self.provider!r}")
        return self


class TaskConfig(_Part):
    id: str = Field(description="Task id (``pytool/count-shapes-0``); its domain is the part before the slash.")
    seeds: list[int] | None = Field(None, min_length=1, description="Seeds episodes draw from (None: any seed "
                                    "from the worker's stream).")
    eval_seeds: list[int] | None = Field(None, min_length=1, description="Seeds of the final evaluation, held out "
                                         "from training: none may be in ``seeds`` or ``oracle_seeds``, and a task "
                                         "without ``seeds`` never draws them (None: the training seeds); "
                                         "``train.eval_groups`` groups take them in turn.")
    oracle_seeds: list[int] | None = Field(None, min_length=1, description="Seeds the warm start's oracle "
                                           "plays (``warm_start.oracle``; None: ``seeds``). Chosen apart from "
                                           "``seeds``, RL is rewarded on seeds the warm start never showed.")
    env_domain: str | None = Field(None, description="The env domain serving it, where it differs from the id's "
                                   "prefix (``miniwob/...`` is served by ``web``).")
    weight: int = Field(1, ge=1, description="How often the task comes up in each worker's schedule, relative "
                        "to the others.")

    @model_validator(mode="after")
    def _eval_seeds_held_out(self) -> "TaskConfig":
        for name, seeds, what in (("seeds", self.seeds, "RL would train"),
                                  ("oracle_seeds", self.oracle_seeds, "the warm start would train")):
            leaked = sorted(set(seeds or ()) & set(self.eval_seeds or ()))
            if leaked:
                raise ValueError(f"{name} and eval_seeds share seed(s) {leaked[:5]}: {what} on the held-out "
                                 "evaluation")
        return self

    @property
    def domain(self) -> str:
        return self.env_domain or self.id.split("/", 1)[0]


class RolloutConfig(_Part):
    workers: int = Field(1, ge=1, description="Ray rollout worker actors.")
    groups_in_flight: int = Field(2, ge=1, description="Groups each worker plays at once in each domain (each "
                                  "group runs its G episodes concurrently; the worker's env pool per domain "
                                  "holds groups_in_flight x G sessions).")
    group_size: int = Field(8, ge=2, description="Samples per group (G): same task and seed; at least 2, "
                            "advantages are relative to the group.")
    temperature: float = Field(1.0, ge=0, description="Sampling temperature.")
    max_new_tokens: int = Field(16, ge=1, description="Most tokens sampled per turn.")
    max_restarts: int = Field(3, ge=0, description="Restarts Ray gives a worker that dies (its in-flight "
                              "episodes are counted lost).")
    episode_timeout: float = Field(300.0, gt=0, description="Seconds an episode may take before it ends as "
                                   "``timeout``.")
    simulated_step_seconds: tuple[float, float] | None = Field(
        None, description="Benchmarks only: [mean, sigma] of a lognormal delay added to every env step "
                          "(None: none).")
    torch_threads: int = Field(1, ge=1, description="CPU threads torch may use in each worker (and in the trainer).")
    worker_num_cpus: float = Field(0.0, ge=0, description="Ray CPUs reserved per worker actor (0 on a small "
                                   "local machine).")
    worker_num_gpus: float = Field(0.0, ge=0, description="Ray GPUs per worker actor (vllm engines).")
    worker_resources: dict[str, float] = Field(default_factory=dict, description="Custom Ray resources each "
                                               "worker actor reserves, so it lands on a node that has them "
                                               "(``{envnode: 1}``).")


class TrainConfig(_Part):
    mode: Literal["async", "sync"] = Field("async", description="``async`` (workers never wait for the trainer) "
                                           "or ``sync`` (generate, train, sync, repeat).")
    steps: int = Field(50, ge=1, description="Optimizer steps to run (a rerun past them says the run is finished).")
    groups_per_step: int = Field(8, ge=1, description="Groups per step (the batch), split over domains by "
                                 "``domain_weights``.")
    domain_weights: dict[str, float] | None = Field(None, description="Domain weights of the mixer, each > 0, one "
                                                    "for every domain of the tasks (None: equal shares). Each "
                                                    "domain's share of the run, steps x groups_per_step x its "
                                                    "weight / their sum, must reach one group.")
    max_lag: int | None = Field(4, ge=0, description="Most versions a sample may lag the trainer; enforced at "
                                "admission and at batch time (None: unbounded; ``sync`` mode uses 0).")
    correction: Literal["none", "unclipped_token_is", "truncated_is", "ppo_clip"] = Field(
        "truncated_is", description="Off-policy correction (see :mod:`mintgym.trainer.loss`): ``truncated_is`` "
                                    "weighs each token by min(ratio, ``is_cap``); ``unclipped_token_is`` by the "
                                    "ratio itself, bounded by nothing but the gradient norm clip.")
    advantage: Literal["grpo", "rloo"] = Field("grpo", description="Advantage estimator: ``grpo`` "
                                               "(group-normalized) or ``rloo`` (leave-one-out).")
    scale_advantages: bool = Field(True, description="Divide GRPO advantages by the group's reward std.")
    entropy_coef: float = Field(0.0, ge=0, description="Entropy bonus: the loss subtracts this times the entropy "
                                "of the policy's next-token distribution at each response token, so a policy does "
                                "not settle on one answer before its rewards show which (0: none). A step whose "
                                "advantages are all 0 is still skipped (``skip_no_signal``): the bonus alone, "
                                "scaled up by Adam, would move a converged policy.")
    is_cap: float = Field(2.0, gt=0, description="The truncation cap C of ``truncated_is``; every step logs the "
                          "fraction of tokens whose ratio exceeds it (``is/capped_fraction``).")
    clip_eps: float = Field(0.2, gt=0, lt=1, description="The clip range of ``ppo_clip``.")
    lr: float = Field(1e-5, gt=0, description="Adam learning rate (constant; a resume may change it: the "
                      "optimizer then trains at this one, not the checkpoint's, and says so).")
    max_grad_norm: float | None = Field(1.0, gt=0, description="Gradient norm clip (None: no clipping).")
    precision: Literal["mixed", "pure"] = Field(
        "mixed", description="How a ``model.dtype`` below float32 trains: ``mixed`` keeps float32 master weights, "
                             "gradients and Adam state, runs the forward and backward under autocast in "
                             "``model.dtype`` and publishes the weights in ``model.dtype``; ``pure`` has Adam step "
                             "the low-precision weights themselves (half the memory, but in bfloat16 an update "
                             "much below 1/256 of a weight rounds to nothing). No effect on a float32 model.")
    skip_no_signal: bool = Field(True, description="Leave the weights as they are on a step whose advantages are "
                                 "all 0 (every group's rewards equal): Adam would otherwise keep moving them on "
                                 "its momentum alone, on a zero gradient.")
    sync_every: int = Field(1, ge=1, description="Publish weights every this many steps.")
    sync_timeout: float = Field(120.0, gt=0, description="Seconds every worker has to load published weights "
                                "before the run fails naming who is behind.")
    batch_timeout: float = Field(600.0, gt=0, description="Seconds to wait for a full batch before training on "
                                 "a short one (shortfall counted per domain).")
    micro_batch: int = Field(16, ge=1, description="Sequences per forward/backward chunk: their graphs are alive "
                             "together until the chunk's backward frees them, so the step's activation memory is "
                             "that of this many sequences (docs/train.md, \"Memory and sharding\"); the gradient "
                             "does not depend on it.")
    activation_checkpointing: bool | None = Field(
        None, description="Keep only each decoder layer's and vision block's input for the backward and recompute "
                          "the rest there (about a third more compute, a small fraction of the activations); None: "
                          "on for models of at least 100M parameters (off for the tiny test model).")
    checkpoint_every: int = Field(10, ge=0, description="Checkpoint every this many steps (0: only at the end).")
    mismatch_snapshots: int = Field(0, ge=0, description="Keep this many past weight versions to measure the "
                                    "mismatch of lagged turns too (one extra no-grad forward per lagged sequence; "
                                    "0: measure lag-0 turns only).")
    publish_delay: int = Field(0, ge=0, description="Lag studies: publish the weights of this many versions ago, "
                               "so every sample lags the trainer by at least this much (async only, <= ``max_lag``).")
    max_failed_steps: int = Field(3, ge=0, description="Fail the run after this many steps in a row that "
                                  "trained on nothing because every episode failed, naming the most frequent "
                                  "episode error (0: never).")
    eval_groups: int = Field(0, ge=0, description="After the last step, evaluate the final checkpoint as ``mintgym "
                             "eval --model OUT`` does: one episode on each of the first this many held-out seeds "
                             "of every task (``eval_seeds``, else ``seeds``), results in ``OUT/eval/`` and the "
                             "mean reward per domain in ``final_eval.json`` (0: no evaluation).")
    eval_temperature: float | None = Field(None, ge=0, description="Sampling temperature of that evaluation "
                                           "(None: ``rollout.temperature``; 0: greedy, the policy's best answer).")
    seed: int = Field(0, description="Seed of the trainer's random number generators (Python, NumPy, torch; a "
                      "resume restores them from its checkpoint) and of the task streams.")

    @model_validator(mode="after")
    def _publish_delay_fits(self) -> TrainConfig:
        if self.publish_delay and self.mode == "sync":
            raise ValueError("publish_delay needs mode: async (sync mode trains on the current weights only)")
        if self.max_lag is not None and self.publish_delay > self.max_lag:
            raise ValueError(f"publish_delay {self.publish_delay} > max_lag {self.max_lag}: every sample would "
                             "lag more than max_lag, so admission would refuse all of them")
        if self.domain_weights and any(w <= 0 for w in self.domain_weights.values()):
            raise ValueError(f"domain_weights must all be > 0, got {self.domain_weights}")
        return self


class WeightsConfig(_Part):
    transport: Literal["ray", "filesystem", "vllm"] = Field(
        "ray", description="How published weights reach the engines: ``ray`` (Ray's object store, one copy per "
                           "node), ``filesystem`` (``.npz`` files in ``folder``, which every node must see), "
                           "``vllm`` (safetensors files in ``folder`` that each vLLM worker loads in place; needs "
                           "CUDA GPUs and engine.name vllm).")
    folder: str | None = Field(None, description="``filesystem`` and ``vllm``: the shared folder (None: "
                               "``<out>/weights``).")
    keep: int = Field(2, ge=1, description="``filesystem`` and ``vllm``: weight versions kept on disk.")


class WandbConfig(_Part):
    enabled: bool = Field(False, description="Log every step's metrics to Weights & Biases too "
                                             "(``pip install 'mintgym[wandb]'``).")
    project: str = Field("mintgym", description="W&B project.")
    entity: str | None = Field(None, description="W&B entity (team or user; None: the default).")
    name: str | None = Field(None, description="Run name (None: the --out folder's name).")
    mode: Literal["online", "offline", "disabled"] | None = Field(
        None, description="W&B mode (None: WANDB_MODE or online); ``offline`` writes under ``<out>/wandb`` only.")
    tags: list[str] = Field(default_factory=list, description="W&B run tags.")


class LogConfig(_Part):
    ray: bool = Field(False, description="Show Ray's own log lines (worker stdout/stderr, startup) on the "
                                         "console; ``mintgym train --verbose`` sets it.")
    sample_episodes_every: int = Field(0, ge=0, description="Every this many steps, write some of the trained "
                                       "episodes as trajectories under ``<out>/episodes/step_<k>/`` "
                                       "(``mintgym view <out>/episodes``); 0: never.")
    sample_episodes: int = Field(4, ge=1, description="Episodes written each time (the first of each group, "
                                 "then the next, until this many).")
    wandb: WandbConfig = Field(default_factory=WandbConfig, description="Weights & Biases logging, beside "
                               "TensorBoard.")


#: The warm start's learning rate for the tiny random model (``model.build_tiny``) when none is given.
TINY_WARM_START_LR = 1e-3


class WarmStartConfig(_Part):
    """Supervised steps before RL: behaviour cloning of a teacher in the run's own agent format
    (:mod:`mintgym.trainer.sft`). Only a fresh run warm-starts; a resumed one continues from its checkpoint."""

    oracle: bool = Field(False, description="Play every task's oracle (the scripted agent) on its "
                         "``oracle_seeds`` (else its training ``seeds``) through the run's env servers, export "
                         "those episodes with the run's agent (as ``mintgym export --agent`` does) to "
                         "``<out>/warm_start/dataset``, and train on it. Held-out ``eval_seeds`` are never "
                         "played (a task's ``seeds`` and ``oracle_seeds`` may not hold any).")
    dataset: str | None = Field(None, description="Or a dataset written by ``mintgym export RUN --agent KIND``.")
    steps: int = Field(0, ge=0, description="Supervised steps (0: no warm start).")
    lr: float | None = Field(None, gt=0, description="Adam learning rate of the supervised steps (None: "
                             f"{TINY_WARM_START_LR} for the tiny model of ``model.build_tiny``; any other model needs "
                             "it given: that lr would wreck a real checkpoint, which takes about 1e-5).")
    batch_size: int = Field(16, ge=1, description="Sequences per supervised step.")

    @model_validator(mode="after")
    def _one_source(self) -> "WarmStartConfig":
        if self.oracle and self.dataset:
            raise ValueError("give oracle: true or a dataset, not both")
        if self.steps and not (self.oracle or self.dataset):
            raise ValueError("steps needs a source: set oracle: true, or dataset: PATH")
        return self


class RunConfig(_Part):
    model: ModelConfig = Field(description="The policy's checkpoint.")
    tasks: list[TaskConfig] = Field(min_length=1, description="Tasks the run trains on; their domains are the "
                                    "mixer's domains.")
    engine: EngineConfig = Field(default_factory=EngineConfig, description="The rollout workers' inference engine.")
    agent: AgentConfig = Field(default_factory=AgentConfig, description="The agent the workers play with.")
    envs: list[EnvConfig] = Field(default_factory=list, description="Env servers per domain (a domain of a task "
                                  "without an entry gets one local server).")
    rollout: RolloutConfig = Field(default_factory=RolloutConfig, description="Rollout workers.")
    train: TrainConfig = Field(default_factory=TrainConfig, description="The learner and the loop.")
    weights: WeightsConfig = Field(default_factory=WeightsConfig, description="The weight transport.")
    log: LogConfig = Field(default_factory=LogConfig, description="Console, W&B and sample-episode logging.")
    warm_start: WarmStartConfig = Field(default_factory=WarmStartConfig, description="Supervised steps on a "
                                        "teacher's episodes before RL.")
    ray_address: str | None = Field(None, description="Ray cluster address (``auto``, ``HOST:PORT``; None: start "
                                    "a local one).")

    @property
    def domains(self) -> list[str]:
        return list(dict.fromkeys(t.domain for t in self.tasks))

    def env_for(self, domain: str) -> EnvConfig:
        for env in self.envs:
            if env.domain == domain:
                return env
        return EnvConfig(domain=domain)

    @model_validator(mode="after")
    def _parts_agree(self) -> RunConfig:
        weights = self.train.domain_weights
        if weights and set(weights) - set(self.domains):
            raise ValueError(f"train.domain_weights name {sorted(set(weights) - set(self.domains))}, "
                             f"not domains of the tasks ({self.domains})")
        problem = unhonoured(self.domains, weights, self.train.groups_per_step, self.train.steps)
        if problem:
            raise ValueError(f"train.domain_weights, train.groups_per_step, train.steps: {problem}")
        seen = [e.domain for e in self.envs]
        if len(seen) != len(set(seen)):
            raise ValueError(f"envs: each domain once, got {seen}")
        ids = [t.id for t in self.tasks]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:  # the held-out check is per entry: two entries of one task could train on the other's eval seeds
            raise ValueError(f"tasks: each task id once (its weight repeats it), got {twice[:3]} more than once")
        if self.weights.transport == "vllm" and self.engine.name != "vllm":
            raise ValueError("weights.transport vllm is vLLM's own update path: it needs engine.name: vllm")
        return self

    @model_validator(mode="after")
    def _warm_start_lr(self) -> RunConfig:
        """The tiny model's warm start lr by default; a real checkpoint's must be chosen."""
        if self.warm_start.steps and self.warm_start.lr is None:
            if not self.model.build_tiny:
                raise ValueError(f"warm_start.lr: required for a model other than the tiny one (model.build_tiny is "
                                 f"false); about 1e-5 suits a real checkpoint, the tiny model's {TINY_WARM_START_LR} "
                                 "would wreck it")
            self.warm_start.lr = TINY_WARM_START_LR
        return self

    @classmethod
    def from_dict(cls, data: Any) -> RunConfig:
        if not isinstance(data, dict):
            raise ConfigError(f"a run config is a mapping at the top level, got {type(data).__name__}")
        try:
            return cls.model_validate(data)
        except pydantic.ValidationError as err:
            raise ConfigError(describe_errors(err)) from None

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: list[str] = ()) -> RunConfig:
        """Load ``path`` and apply ``key.path=value`` overrides (see :func:`apply_overrides`)."""
        return cls.from_dict(apply_overrides(read_yaml(path), overrides))

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def _takes_bool(annotation: Any) -> bool:
    """Whether a field of this type may hold a bool anywhere (``bool``, ``Any``, a dict of anything ...)."""
    if annotation is bool or annotation is Any:
        return True
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is Literal:
        return any(isinstance(a, bool) for a in args)
    if typing.get_origin(annotation) is dict:
        return _takes_bool(args[1]) if len(args) == 2 else True
    return any(_takes_bool(a) for a in args if a is not Ellipsis)


def _holds_bool(value: Any) -> bool:
    """A bool, or a list or tuple holding one (``seeds: [true]``)."""
    return isinstance(value, bool) or (isinstance(value, (list, tuple)) and any(isinstance(v, bool) for v in value))


# -- YAML and overrides ------------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (YAML would keep the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} given twice",
                                                        key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

def read_yaml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file" if not path.exists() else f"{path} is not a file")
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)  # SafeLoader, no repeated keys
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: not valid YAML ({getattr(err, 'problem', None) or err})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a run config is a mapping at the top level, got {type(data).__name__}")
    return data


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Set ``dotted.key=value`` items into ``data`` (in place, and returned). Values are YAML scalars or flow
    collections (``3e-4``, ``true``, ``null``, ``[1, 2]``, ``{a: 1}``); list items are addressed by index
    (``tasks.0.seeds=[1,2]``). Whether the key exists and the value fits is checked by validation after."""
    for item in overrides:
        key, sep, text = item.partition("=")
        parts = key.strip().split(".")
        if not sep or not all(parts):
            raise ConfigError(f"override {item!r}: expected key.path=value (e.g. train.lr=3e-4)")
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError:
            value = text  # not YAML: the text itself; validation says if a string does not fit
        node: Any = data
        for depth, part in enumerate(parts):
            here = ".".join(parts[:depth + 1])
            last = depth == len(parts) - 1
            if isinstance(node, list):
                if not part.isdigit() or int(part) > len(node):
                    raise ConfigError(f"{here}: no such item ({'.'.join(parts[:depth])} has {len(node)}; "
                                      f"address items by index, {len(node)} to add one)")
                part = int(part)
                if part == len(node):
                    node.append(None)
            elif not isinstance(node, dict):
                raise ConfigError(f"{here}: {'.'.join(parts[:depth])} is {node!r}, not a section")
            if last:
                node[part] = value
            else:
                if (node[part] if isinstance(node, list) else node.get(part)) is None:
                    node[part] = [] if parts[depth + 1].isdigit() else {}
                node = node[part]
    return data


# -- one-line errors ---------------------------------------------------------------------------------------

def describe_errors(err: pydantic.ValidationError) -> str:
    """The first validation error as ``key: expected ..., got ...`` (and how many more there are). Unknown keys
    come first: a misspelt key usually explains the missing one beside it."""
    problems = sorted(err.errors(include_url=False), key=lambda p: p.get("type") != "extra_forbidden")
    first = _describe(problems[0])
    return first if len(problems) == 1 else f"{first} (and {len(problems) - 1} more problem(s))"


def _describe(problem: dict[str, Any]) -> str:
    loc = ".".join(str(p) for p in problem["loc"] if not (isinstance(p, str) and "[" in p)) or "config"
    kind, got = problem["type"], problem.get("input")
    if kind == "extra_forbidden":
        known = _known_keys(problem["loc"][:-1])
        return f"{loc}: unknown key" + (f" (known: {', '.join(known)})" if known else "")
    if kind == "too_short":
        return f"{loc}: expected at least {problem['ctx']['min_length']} item(s), got {got!r}"
    if kind == "missing":
        return f"{loc}: missing (required)"
    if kind == "finite_number":
        return f"{loc}: expected a finite number, got {got!r}"
    if kind == "string_too_short":
        return f"{loc}: expected a non-empty string, got {got!r}"
    if kind == "value_error":
        return f"{loc}: {problem['msg'].removeprefix('Value error, ')}" if problem["loc"] else \
            problem["msg"].removeprefix("Value error, ")
    expected = _expected_at(tuple(problem["loc"])) or problem["msg"]
    return f"{loc}: expected {expected}, got {got!r}"


def _known_keys(loc: tuple) -> list[str]:
    """The keys of the section at ``loc`` (none where ``loc`` is not a section)."""
    found = _declared_at(loc)
    section = _inner(*found)[0] if found is not None else None
    return list(section.model_fields) if isinstance(section, type) and issubclass(section, BaseModel) else []


def _expected_at(loc: tuple) -> str | None:
    """What the config takes at ``loc`` (a field, or an item or value inside one), in words; None where ``loc``
    names nothing the config declares."""
    found = _declared_at(loc)
    return _type_words(*found) if found is not None else None


def _declared_at(loc: tuple) -> tuple[Any, list[Any]] | None:
    """The type the config declares at ``loc`` (a section, a field, or an item or value inside one) and its
    metadata (bounds); None where ``loc`` names nothing the config declares."""
    annotation: Any = RunConfig
    metadata: list[Any] = []
    for part in loc:
        annotation, metadata = _inner(annotation, metadata)
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if not isinstance(part, str) or part not in annotation.model_fields:
                return None
            info = annotation.model_fields[part]
            annotation, metadata = info.annotation, list(info.metadata)
        elif origin is list and isinstance(part, int):
            annotation, metadata = args[0], []
        elif origin is tuple and isinstance(part, int) and args:
            annotation, metadata = (args[0] if args[-1] is Ellipsis else args[min(part, len(args) - 1)]), []
        elif origin is dict:
            annotation, metadata = args[1], []
        else:
            return None
    return annotation, metadata


def _inner(annotation: Any, metadata: list[Any]) -> tuple[Any, list[Any]]:
    """What is inside ``annotation``: ``Annotated`` unwrapped (its metadata added), and X for X or null."""
    annotation, metadata = _unwrapped(annotation, metadata)
    members = _members(annotation)
    return _unwrapped(members[0], metadata) if len(members) == 1 else (annotation, metadata)


def _unwrapped(annotation: Any, metadata: list[Any]) -> tuple[Any, list[Any]]:
    """``Annotated[X, ...]`` as X with its metadata added."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation, *extra = typing.get_args(annotation)
        return annotation, [*metadata, *extra]
    return annotation, metadata


def _members(annotation: Any) -> list[Any]:
    """The non-null members of a union annotation ([annotation] for any other)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [a for a in typing.get_args(annotation) if a is not type(None)]
    return [annotation]


def _type_words(annotation: Any, metadata: list[Any]) -> str:
    """``annotation`` in words: ``an integer >= 0``, ``a number > 0 or null``, ``one of 'async', 'sync'``."""
    annotation, metadata = _unwrapped(annotation, metadata)
    members = _members(annotation)
    optional = type(None) in typing.get_args(annotation)
    if len(members) > 1:
        return " or ".join(_type_words(m, []) for m in members) + (" or null" if optional else "")
    annotation, metadata = _unwrapped(members[0], metadata)
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        text = "one of " + ", ".join(repr(v) for v in args)
    elif annotation in names:
        bounds = []
        for meta in metadata:
            for attr, sign in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
                bound = getattr(meta, attr, None)
                if bound is not None and isinstance(meta, (annotated_types.Gt, annotated_types.Ge,
                                                           annotated_types.Lt, annotated_types.Le)):
                    bounds.append(f"{sign} {bound}")
        text = " ".join([names[annotation], " and ".join(bounds)]).strip()
    elif origin is list:
        text = "a list"
    elif origin is tuple:
        text = "a list" if args and args[-1] is Ellipsis else f"a list of {len(args)}"
    elif origin is dict:
        text = "a mapping"
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        text = "a mapping (a section)"
    else:
        text = str(annotation)
    return text + (" or null" if optional else "")
