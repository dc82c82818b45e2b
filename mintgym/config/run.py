"""Layer 1: the one typed spec of a run, loaded from YAML and overridable from the command line, read by every
entry point: ``mintgym train``, ``mintgym eval --config`` (the same file and overrides), the rollout workers and a
run's final evaluation.

One pydantic model per section (model, tasks, envs, engine, agent, rollout, train, eval, weights, log, warm
start), every field documented (``Field(description=...)``), types and ranges enforced and unknown keys refused,
so a typo or a wrong value fails at load time with one line naming the key::

    >>> cfg = RunConfig.from_dict({"model": {"path": "/tmp/m"}, "tasks": [{"id": "null/echo"}]})
    >>> cfg.train.correction, cfg.engine.name, cfg.weights.transport
    ('truncated_is', 'hf', 'ray')

Where env servers run is chosen per domain (``envs[].provider``: ``local``, ``docker``, ``ray``, or given
``urls``); the engine (:mod:`mintgym.config.engine`) and the weight transport (:mod:`mintgym.config.weights`)
are unions keyed on their kind; the agent's options are typed by its registered class's constructor.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import pydantic
from pydantic import Field, ValidationInfo, field_validator, model_validator

from mintgym import observe as observation
from mintgym.config.base import ConfigError, Section
from mintgym.config.engine import EngineConfig, HFEngineConfig
from mintgym.config.files import apply_overrides, read_yaml
from mintgym.config.weights import RayWeights, WeightsConfig
from mintgym.env import declarations
from mintgym.plugin_options import check_options
from mintgym.validation import one_line


class ModelConfig(Section):
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


class AgentConfig(Section):
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
    observe: list[str] = Field(["screenshot"], description="The observation channels the agent is given "
                               "(``mintgym eval --observe`` takes the same): ``screenshot``, ``som`` "
                               "(set-of-marks), ``a11y``, ``dom``, ``text`` (see mintgym.observe); each "
                               "domain of ``envs`` must have them.")

    @field_validator("kind")
    @classmethod
    def _samples_from_an_engine(cls, kind: str) -> str:
        if not getattr(_agent_class(kind), "needs_engine", False):
            raise ValueError(f"{kind!r} does not sample from an inference engine (its class does not say "
                             "needs_engine), so there is nothing to train; use answer, vlm or an agent that does")
        return kind

    @field_validator("observe")
    @classmethod
    def _known_channels(cls, observe: list[str]) -> list[str]:
        return list(observation.parse(observe))

    @field_validator("options")
    @classmethod
    def _options_fit_the_agent(cls, options: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        """Typed by the registered class's constructor (:mod:`mintgym.plugin_options`): agents are plug-ins,
        so their options' model comes from their code, a user's agent's as a built-in's."""
        if "kind" not in info.data:
            return options  # the kind itself was refused
        return check_options(_agent_class(info.data["kind"]), options, "", skip=("engine",))


def _agent_class(kind: str) -> Any:
    """The agent registered as ``kind`` (the ``mintgym.agents`` entry points; unknown: a one-line error)."""
    return importlib.import_module("mintgym.agents").agent_factory(kind)  # by name: agents sit above this layer


class EnvConfig(Section):
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


class TaskConfig(Section):
    id: str = Field(description="Task id (``pytool/count-shapes-0``); its domain is the part before the slash.")
    seeds: list[int] | None = Field(None, min_length=1, description="Seeds episodes draw from (None: any seed "
                                    "from the worker's stream). Here and in the other seed lists, ``'A..B'`` "
                                    "stands for the seeds A to B, both included.")
    eval_seeds: list[int] | None = Field(None, min_length=1, description="Seeds of the final evaluation, held out "
                                         "from training: none may be in ``seeds`` or ``oracle_seeds``, and a task "
                                         "without ``seeds`` never draws them (None: the training seeds); "
                                         "``eval.groups`` groups take them in turn.")
    oracle_seeds: list[int] | None = Field(None, min_length=1, description="Seeds the warm start's oracle "
                                           "plays (``warm_start.oracle``; None: ``seeds``). Chosen apart from "
                                           "``seeds``, RL is rewarded on seeds the warm start never showed.")
    env_domain: str | None = Field(None, description="The env domain serving it, where it differs from the id's "
                                   "prefix (``miniwob/...`` is served by ``web``).")
    weight: int = Field(1, ge=1, description="How often the task comes up in each worker's schedule, relative "
                        "to the others.")

    @field_validator("seeds", "eval_seeds", "oracle_seeds", mode="before")
    @classmethod
    def _seed_range(cls, value: Any) -> Any:
        """``"A..B"``: the seeds A to B, both included (a list of seeds otherwise)."""
        if not isinstance(value, str):
            return value
        first, dots, last = value.partition("..")
        if not dots or not first.strip().isdigit() or not last.strip().isdigit() or int(first) > int(last):
            raise ValueError(f"a seed range is 'FIRST..LAST' with FIRST <= LAST (non-negative whole numbers, "
                             f"both included), got {value!r}")
        return list(range(int(first), int(last) + 1))

    @model_validator(mode="after")
    def _eval_seeds_held_out(self) -> TaskConfig:
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


class RolloutConfig(Section):
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


class TrainConfig(Section):
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
    lr: float = Field(1e-5, ge=0, description="Adam learning rate (constant; a resume may change it: the "
                      "optimizer then trains at this one, not the checkpoint's, and says so). 0: the RL steps "
                      "move no weight (the RL-free ablation of a warm-started run).")
    lr_schedule: Literal["constant", "linear"] = Field(
        "constant", description="The RL steps' learning rate: ``constant`` (``lr`` at every step) or ``linear`` "
                                "(``lr`` at the first step, down in equal decrements to 0 after ``steps``, the PPO "
                                "annealing: full moves while the policy is far off, ever smaller ones as it "
                                "settles, so the final weights are not one noisy step's). A resumed run takes the "
                                "schedule up at its step, with the ``steps`` it is resumed with.")
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
    seed: int = Field(0, description="Seed of the trainer's random number generators (Python, NumPy, torch; a "
                      "resume restores them from its checkpoint) and of the task streams.")

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, data: Any) -> Any:
        moved = [k for k in ("eval_groups", "eval_temperature") if isinstance(data, dict) and k in data]
        if moved:
            raise ValueError(f"{moved[0]} is now eval.{moved[0].removeprefix('eval_')} (the final evaluation has a "
                             "section of its own)")
        return data

    def lr_at(self, step: int) -> float:
        """The learning rate of RL step ``step`` (1 to ``steps``) under ``lr_schedule``."""
        if self.lr_schedule == "linear":
            return self.lr * max(0.0, 1.0 - (step - 1) / max(1, self.steps))
        return self.lr

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


class EvalConfig(Section):
    """The run's final evaluation: its checkpoint played as ``mintgym eval --model OUT`` plays it."""

    groups: int = Field(0, ge=0, description="After the last step, one episode on each of the first this many "
                        "held-out seeds of every task (``eval_seeds``, else ``seeds``), results in ``OUT/eval/`` "
                        "and the mean reward per domain in ``final_eval.json`` (0: no evaluation).")
    temperature: float | None = Field(None, ge=0, description="Sampling temperature of that evaluation (None: "
                                      "``rollout.temperature``; 0: greedy, the policy's best answer).")
    every: int = Field(0, ge=0, description="The held-out curve (0: none): at step 0 of a fresh run (after the warm "
                       "start), every this many steps and at the last, the trainer's weights play the first "
                       "``every_groups`` held-out seeds of every task at ``temperature``; logged as ``eval/mean``, "
                       "``eval/<domain>`` in the step's metrics and drawn on the reward curve.")
    every_groups: int = Field(32, ge=1, description="Held-out seeds of every task the curve's evaluations play "
                              "(the first this many of ``eval_seeds``, else of ``seeds``).")


class WandbConfig(Section):
    enabled: bool = Field(False, description="Log every step's metrics to Weights & Biases too "
                                             "(``pip install 'mintgym[wandb]'``).")
    project: str = Field("mintgym", description="W&B project.")
    entity: str | None = Field(None, description="W&B entity (team or user; None: the default).")
    name: str | None = Field(None, description="Run name (None: the --out folder's name).")
    mode: Literal["online", "offline", "disabled"] | None = Field(
        None, description="W&B mode (None: WANDB_MODE or online); ``offline`` writes under ``<out>/wandb`` only.")
    tags: list[str] = Field(default_factory=list, description="W&B run tags.")


class LogConfig(Section):
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


class WarmStartConfig(Section):
    """Supervised steps before RL: behaviour cloning of a teacher in the run's own agent format
    (:mod:`mintgym.trainer.sft`). Only a fresh run warm-starts; a resumed one continues from its checkpoint."""

    oracle: bool = Field(False, description="Play every task's oracle (the scripted agent) on its "
                         "``oracle_seeds`` (else its training ``seeds``) through the run's env servers, export "
                         "those episodes with the run's agent (as ``mintgym export --agent`` does) to "
                         "``<out>/warm_start/dataset``, and train on it. Held-out ``eval_seeds`` are never "
                         "played (a task's ``seeds`` and ``oracle_seeds`` may not hold any).")
    demonstrator: str = Field("scripted", description="With ``oracle: true``, the agent that plays the "
                              "demonstrations: ``scripted`` (the task's own oracle) or your ``module:Class`` / "
                              "``module:factory``, which is given the oracle too (an imperfect teacher, a heuristic "
                              "bot; the built-in ``mistaken-oracle`` is one, agents/scripted.py).")
    demonstrator_options: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments of the "
                                                 "demonstrator.")
    successful_only: bool = Field(True, description="With ``oracle: true``, clone only the demonstrations the task "
                                  "scored a success; false: every one as the demonstrator played it, its mistakes "
                                  "included (a teacher whose demonstrations are not checked).")
    dataset: str | None = Field(None, description="Or a dataset written by ``mintgym export RUN --agent KIND``.")
    steps: int = Field(0, ge=0, description="Supervised steps (0: no warm start).")
    lr: float | None = Field(None, gt=0, description="Adam learning rate of the supervised steps (None: "
                             f"{TINY_WARM_START_LR} for the tiny model of ``model.build_tiny``; any other model needs "
                             "it given: that lr would wreck a real checkpoint, which takes about 1e-5).")
    batch_size: int = Field(16, ge=1, description="Sequences per supervised step.")

    @model_validator(mode="after")
    def _one_source(self) -> WarmStartConfig:
        if self.oracle and self.dataset:
            raise ValueError("give oracle: true or a dataset, not both")
        if self.steps and not (self.oracle or self.dataset):
            raise ValueError("steps needs a source: set oracle: true, or dataset: PATH")
        if (self.demonstrator != "scripted" or self.demonstrator_options or not self.successful_only) \
                and not self.oracle:
            raise ValueError("demonstrator, demonstrator_options and successful_only are about the demonstrations "
                             "of oracle: true; set oracle: true")
        return self


class RunConfig(Section):
    model: ModelConfig = Field(description="The policy's checkpoint.")
    tasks: list[TaskConfig] = Field(min_length=1, description="Tasks the run trains on; their domains are the "
                                    "mixer's domains.")
    engine: EngineConfig = Field(default_factory=HFEngineConfig, description="The rollout workers' inference "
                                 "engine, by ``name``: ``hf`` or ``vllm``, each with its typed ``options``.")
    agent: AgentConfig = Field(default_factory=AgentConfig, description="The agent the workers play with.")
    envs: list[EnvConfig] = Field(default_factory=list, description="Env servers per domain (a domain of a task "
                                  "without an entry gets one local server).")
    rollout: RolloutConfig = Field(default_factory=RolloutConfig, description="Rollout workers.")
    train: TrainConfig = Field(default_factory=TrainConfig, description="The learner and the loop.")
    eval: EvalConfig = Field(default_factory=EvalConfig, description="The final evaluation.")
    weights: WeightsConfig = Field(default_factory=RayWeights, description="How weights reach the engines, by "
                                   "``transport``: ``ray`` (the object store), ``filesystem`` or ``vllm`` (files in "
                                   "a shared ``folder``).")
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
        for domain in self.domains:
            if problem := declarations.unsupported_channels(domain, self.agent.observe):
                raise ValueError(f"agent.observe: {problem}")
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
            raise ConfigError(one_line(err, data, cls)) from None

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: list[str] = ()) -> RunConfig:
        """Load ``path`` and apply ``key.path=value`` overrides (see :func:`apply_overrides`)."""
        return cls.from_dict(apply_overrides(read_yaml(path), overrides))

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def unhonoured(domains: Sequence[str], weights: Mapping[str, float] | None, groups_per_step: int,
               steps: int) -> str | None:
    """Why a run of ``steps`` batches of ``groups_per_step`` groups cannot give every one of ``domains`` its
    share under the mixer's schedule (None if it can): a domain without a weight (it would never be trained, its
    groups never admitted), or one whose share of the run, ``steps * groups_per_step * p_d``, is below one group
    (the schedule guarantees ``floor`` of it, so it might get none).

        >>> unhonoured(["a", "b"], {"a": 1, "b": 0.05}, groups_per_step=2, steps=100)
        >>> unhonoured(["a", "b"], {"a": 1, "b": 0.001}, groups_per_step=2, steps=100).split(":")[0]
        "domain 'b' (weight 0.001 of 1.001) would get 0.2 of a group over the run's 100 steps of 2 groups"
    """
    weights = dict(weights) if weights else {d: 1.0 for d in domains}
    missing = [d for d in domains if weights.get(d, 0) <= 0]
    if missing:
        return f"no weight > 0 for domain(s) {missing} of the tasks: it would never be trained"
    total = sum(weights[d] for d in domains)
    for d in domains:
        expected = steps * groups_per_step * Fraction(weights[d]) / Fraction(total)
        if expected < 1:
            return (f"domain {d!r} (weight {weights[d]:g} of {total:g}) would get {float(expected):.2g} of a group "
                    f"over the run's {steps} steps of {groups_per_step} groups: it needs at least 1 (raise its "
                    "weight, groups_per_step or steps)")
    return None
