"""Layer 5: what rollout workers hand the trainer: typed samples and groups, advantages, the domain mixer
and the trajectory buffer (a Ray actor at run time, a plain object in tests)."""

from mintgym.buffer.types import Batch, DomainStats, Group, Sample, Turn

__all__ = ["Batch", "DomainStats", "Group", "Sample", "Turn"]
