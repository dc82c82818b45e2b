"""Layer 5: the records a rollout worker pushes and the trainer consumes.

A :class:`Turn` is one model call exactly as the engine made it: the prompt token ids it fed the model,
the token ids it sampled and their logprobs, the images of the prompt and the weights version. A
:class:`Sample` is one episode (its turns and final reward); a :class:`Group` holds the G samples of one
task and seed (the unit of advantage normalization); a :class:`Batch` is what one trainer step trains on,
with the per-domain accounting of how it was built.

Images are whatever the worker stored: numpy arrays in tests, Ray ``ObjectRef``s (``ray.put`` once per
screenshot) in a run, so a buffer hop never copies pixels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Turn:
    """One sampled model response and the exact prompt it answered."""

    prompt_token_ids: list[int]
    response_token_ids: list[int]
    #: The behaviour policy's logprob of each response token.
    logprobs: list[float]
    #: Weights version that sampled this turn.
    policy_version: int
    #: The prompt's images in order (numpy arrays or Ray ObjectRefs to them).
    images: list[Any] = field(default_factory=list)
    #: Sampling temperature (0 = greedy, scored at 1 like the engine does).
    temperature: float = 1.0

    def __post_init__(self) -> None:
        if not self.prompt_token_ids or not self.response_token_ids:
            raise ValueError("a turn needs a non-empty prompt and response")
        if len(self.logprobs) != len(self.response_token_ids):
            raise ValueError(f"{len(self.logprobs)} logprobs for {len(self.response_token_ids)} response tokens")


@dataclass
class Sample:
    """One finished episode, ready to train on."""

    task_id: str
    domain: str
    seed: int | None
    reward: float
    turns: list[Turn]
    #: The episode's ending: success, failure, error, timeout.
    status: str = "failure"
    worker_id: int = -1
    episode_id: str = ""

    @property
    def policy_version(self) -> int:
        """The oldest weights version among the turns: what the lag is measured from."""
        return min(t.policy_version for t in self.turns) if self.turns else -1

    @property
    def num_images(self) -> int:
        return sum(len(t.images) for t in self.turns)


@dataclass
class Group:
    """G samples of the same task and seed."""

    group_id: str
    task_id: str
    domain: str
    seed: int | None
    samples: list[Sample]
    #: The buffer reservation this group fills (admission control); None when pushed without one.
    reservation: int | None = None

    @property
    def policy_version(self) -> int:
        return min(s.policy_version for s in self.samples)

    @property
    def rewards(self) -> list[float]:
        return [s.reward for s in self.samples]

    def lag(self, trainer_version: int) -> int:
        return trainer_version - self.policy_version


@dataclass
class DomainStats:
    """How one domain's share of a batch went."""

    quota: int = 0
    taken: int = 0
    #: Groups thrown away as older than max_lag.
    dropped_stale: int = 0
    #: Quota left unfilled when the batch was built (never refilled from another domain).
    shortfall: int = 0


@dataclass
class Batch:
    """What one trainer step trains on."""

    groups: list[Group]
    #: The trainer's weights version the lag is measured against.
    trainer_version: int
    domains: dict[str, DomainStats] = field(default_factory=dict)

    @property
    def samples(self) -> list[Sample]:
        return [s for g in self.groups for s in g.samples]

    def lag_histogram(self) -> dict[int, int]:
        """Samples per lag (trainer version minus the sample's oldest turn version)."""
        hist: dict[int, int] = {}
        for s in self.samples:
            lag = self.trainer_version - s.policy_version
            hist[lag] = hist.get(lag, 0) + 1
        return dict(sorted(hist.items()))
