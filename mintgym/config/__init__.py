"""Layer 1: the run spec (:class:`RunConfig`), its YAML file and overrides, and the typed unions of its plug-ins.

Every entry point reads a run through it: ``mintgym train``, ``mintgym eval --config`` and ``--model RUN``, the
rollout workers (:class:`mintgym.rollout.ray_worker.WorkerSpec` carries it) and the final evaluation.
"""

from mintgym.config.base import ConfigError
from mintgym.config.engine import EngineConfig, HFEngineConfig, VLLMEngineConfig, engine_kwargs
from mintgym.config.files import apply_overrides, read_yaml
from mintgym.config.run import (
    TINY_WARM_START_LR,
    AgentConfig,
    EnvConfig,
    EvalConfig,
    LogConfig,
    ModelConfig,
    RolloutConfig,
    RunConfig,
    TaskConfig,
    TrainConfig,
    WandbConfig,
    WarmStartConfig,
)
from mintgym.config.weights import FilesystemWeights, RayWeights, VLLMWeights, WeightsConfig

__all__ = ["TINY_WARM_START_LR", "AgentConfig", "ConfigError", "EngineConfig", "EnvConfig", "EvalConfig",
           "FilesystemWeights", "HFEngineConfig", "LogConfig", "ModelConfig", "RayWeights", "RolloutConfig",
           "RunConfig", "TaskConfig", "TrainConfig", "VLLMEngineConfig", "VLLMWeights", "WandbConfig",
           "WarmStartConfig", "WeightsConfig", "apply_overrides", "engine_kwargs", "read_yaml"]
