"""Layer 6: the typed configuration of a training run, loaded from YAML.

One dataclass per part of the run; every field has a docstring (the ``#:`` comment above it). Unknown
keys are errors, so a typo in a recipe fails at load time::

    >>> cfg = RunConfig.from_dict({"model": {"path": "/tmp/m"}, "tasks": [{"id": "null/echo"}]})
    >>> cfg.train.correction
    'unclipped_token_is'
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml


@dataclass
class ModelConfig:
    #: Checkpoint directory (a Hugging Face VLM). With ``build_tiny`` it is built there first if missing.
    path: str
    #: Build the tiny random Qwen2-VL (:func:`mintgym.models.tiny.build_tiny_vlm`) at ``path`` if absent.
    build_tiny: bool = False
    #: Seed of the tiny model's random weights.
    tiny_seed: int = 0
    #: Other keyword options of ``build_tiny_vlm`` (``vocab_size``, ``hidden_size`` ...).
    tiny_options: dict[str, Any] = field(default_factory=dict)
    #: Trainer device (``cpu`` or ``cuda``).
    device: str = "cpu"
    #: Trainer weights dtype (``float32``, ``bfloat16``); None: float32.
    dtype: str | None = None


@dataclass
class EngineConfig:
    #: Inference engine: ``hf`` (transformers, CPU; weights through Ray's object store) or ``vllm``.
    name: Literal["hf", "vllm"] = "hf"
    #: Keyword options of the engine (``aligned_logprobs``, ``max_batch_size``, vllm's ``gpu_memory_utilization``...).
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class AgentConfig:
    #: ``answer``: one short sampled answer submitted as ``done(answer=...)``; ``vlm``: the full VLMAgent.
    kind: Literal["answer", "vlm"] = "answer"
    #: Options of the agent (``answer``: ``choices`` per domain; ``vlm``: VLMAgent keyword options).
    options: dict[str, Any] = field(default_factory=dict)
    #: Most model turns per episode; the episode is ended with ``done()`` after that (None: the env's limit).
    max_turns: int | None = None


@dataclass
class EnvConfig:
    #: Domain served (a registered host: ``null``, ``pytool``, ``web`` ...).
    domain: str
    #: Env servers of this domain (local provider subprocesses); workers are spread over them.
    servers: int = 1
    #: Host options passed to each server (``mintgym serve --host-options``).
    host_options: dict[str, Any] = field(default_factory=dict)
    #: Options of every env session the workers open on this domain (the session's ``env_options``:
    #: web's ``miniwob_time_limit_ms``, ``viewport`` ...); the server validates them when a worker starts.
    session_options: dict[str, Any] = field(default_factory=dict)
    #: Use these running servers instead of starting any.
    urls: list[str] = field(default_factory=list)


@dataclass
class TaskConfig:
    #: Task id (``pytool/count-shapes-0``); its domain is the part before the slash.
    id: str
    #: Seeds episodes draw from (None: any seed from the worker's stream).
    seeds: list[int] | None = None
    #: The env domain serving it, where it differs from the id's prefix (``miniwob/...`` is served by ``web``).
    env_domain: str | None = None
    #: How often the task comes up in each worker's schedule, relative to the others (an integer >= 1).
    weight: int = 1

    @property
    def domain(self) -> str:
        return self.env_domain or self.id.split("/", 1)[0]


@dataclass
class RolloutConfig:
    #: Ray rollout worker actors.
    workers: int = 1
    #: Groups each worker plays at once (each group runs its G episodes concurrently).
    groups_in_flight: int = 2
    #: Samples per group (G): same task and seed.
    group_size: int = 8
    #: Sampling temperature.
    temperature: float = 1.0
    #: Most tokens sampled per turn.
    max_new_tokens: int = 16
    #: Restarts Ray gives a worker that dies (its in-flight episodes are counted lost).
    max_restarts: int = 3
    #: Seconds an episode may take before it ends as ``timeout``.
    episode_timeout: float = 300.0
    #: Benchmarks only: [mean, sigma] of a lognormal delay added to every env step (None: none).
    simulated_step_seconds: list[float] | None = None
    #: CPU threads torch may use in each worker (and in the trainer).
    torch_threads: int = 1
    #: Ray CPUs reserved per worker actor (0 on a small local machine).
    worker_num_cpus: float = 0.0
    #: Ray GPUs per worker actor (vllm engines).
    worker_num_gpus: float = 0.0


@dataclass
class TrainConfig:
    #: ``async`` (workers never wait for the trainer) or ``sync`` (generate, train, sync, repeat).
    mode: Literal["async", "sync"] = "async"
    #: Optimizer steps to run.
    steps: int = 50
    #: Groups per step (the batch), split over domains by ``domain_weights``.
    groups_per_step: int = 8
    #: Domain weights of the mixer (None: equal shares).
    domain_weights: dict[str, float] | None = None
    #: Most versions a sample may lag the trainer; enforced at admission and at batch time (None: unbounded).
    max_lag: int | None = 4
    #: Off-policy correction: ``unclipped_token_is``, ``truncated_is``, ``ppo_clip`` or ``none``.
    correction: Literal["none", "unclipped_token_is", "truncated_is", "ppo_clip"] = "unclipped_token_is"
    #: Advantage estimator: ``grpo`` (group-normalized) or ``rloo`` (leave-one-out).
    advantage: Literal["grpo", "rloo"] = "grpo"
    #: Divide GRPO advantages by the group's reward std.
    scale_advantages: bool = True
    #: The truncation cap C of ``truncated_is``.
    is_cap: float = 2.0
    #: The clip range of ``ppo_clip``.
    clip_eps: float = 0.2
    #: Adam learning rate.
    lr: float = 1e-5
    #: Gradient norm clip (None: no clipping).
    max_grad_norm: float | None = 1.0
    #: Publish weights every this many steps.
    sync_every: int = 1
    #: Seconds every worker has to load published weights before the run fails naming who is behind.
    sync_timeout: float = 120.0
    #: Seconds to wait for a full batch before training on a short one (shortfall counted per domain).
    batch_timeout: float = 600.0
    #: Sequences per forward/backward chunk.
    micro_batch: int = 16
    #: Checkpoint every this many steps (0: only at the end).
    checkpoint_every: int = 10
    #: Keep this many past weight versions to measure the mismatch of lagged turns too (one extra
    #: no-grad forward per lagged sequence; 0: measure lag-0 turns only).
    mismatch_snapshots: int = 0
    #: Lag studies: publish the weights of this many versions ago, so every sample lags the trainer by
    #: at least this much (async only, <= ``max_lag``; the run holds that many past weight copies).
    publish_delay: int = 0
    #: After the last step, play this many groups of every task with the final weights (not trained
    #: on) and write their mean reward per domain to ``final_eval.json`` (0: no evaluation).
    eval_groups: int = 0
    #: Seed of torch and the task streams.
    seed: int = 0


@dataclass
class RunConfig:
    model: ModelConfig
    #: Tasks the run trains on; their domains are the mixer's domains.
    tasks: list[TaskConfig]
    engine: EngineConfig = field(default_factory=EngineConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    #: Env servers per domain (a domain of a task without an entry gets one local server).
    envs: list[EnvConfig] = field(default_factory=list)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    #: Ray cluster address (None: ``ray.init()`` a local one).
    ray_address: str | None = None

    @property
    def domains(self) -> list[str]:
        return list(dict.fromkeys(t.domain for t in self.tasks))

    def env_for(self, domain: str) -> EnvConfig:
        for env in self.envs:
            if env.domain == domain:
                return env
        return EnvConfig(domain=domain)

    def __post_init__(self) -> None:
        if not self.tasks:
            raise ValueError("a run needs at least one task")
        weights = self.train.domain_weights
        if weights and set(weights) - set(self.domains):
            raise ValueError(f"domain_weights name {sorted(set(weights) - set(self.domains))}, "
                             f"not domains of the tasks ({self.domains})")
        if self.rollout.group_size < 2:
            raise ValueError("group_size must be >= 2: advantages are relative to the group")
        train = self.train
        if train.publish_delay < 0 or train.eval_groups < 0:
            raise ValueError(f"train.publish_delay and train.eval_groups must be >= 0, got "
                             f"{train.publish_delay} and {train.eval_groups}")
        if train.publish_delay and train.mode == "sync":
            raise ValueError("train.publish_delay needs mode: async (sync mode trains on the current weights only)")
        if train.max_lag is not None and train.publish_delay > train.max_lag:
            raise ValueError(f"train.publish_delay {train.publish_delay} > max_lag {train.max_lag}: every sample "
                             "would lag more than max_lag, so admission would refuse all of them")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunConfig":
        return _build(cls, data, "config")

    @classmethod
    def from_yaml(cls, path: str | Path) -> "RunConfig":
        data = yaml.safe_load(Path(path).read_text())
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a run config is a mapping at the top level")
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _build(tp: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a mapping for {tp.__name__}, got {type(data).__name__}")
        hints = typing.get_type_hints(tp)
        names = {f.name for f in dataclasses.fields(tp)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)} (known: {sorted(names)})")
        return tp(**{k: _build(hints[k], v, f"{where}.{k}") for k, v in data.items()})
    if origin is list and isinstance(data, list):
        (item,) = typing.get_args(tp)
        return [_build(item, v, f"{where}[{i}]") for i, v in enumerate(data)]
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if data is None:
            return None
        return _build(args[0], data, where) if len(args) == 1 else data
    if origin is Literal:
        if data not in typing.get_args(tp):
            raise ValueError(f"{where}: {data!r} is not one of {typing.get_args(tp)}")
        return data
    if tp is float and isinstance(data, (int, float)) and not isinstance(data, bool):
        return float(data)
    if tp in (int, str, bool) and not isinstance(data, tp):
        raise ValueError(f"{where}: expected {tp.__name__}, got {data!r}")
    return data
