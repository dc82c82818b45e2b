"""Summary statistics of evaluation episodes: success rate with a Wilson interval, mean reward with a
bootstrap interval, steps, and errors grouped by reason.

The intervals are 95% by default. Wilson's score interval stays inside [0, 1] and is sensible for few
episodes and rates near 0 or 1; the mean-reward interval is a percentile bootstrap with a fixed seed, so
the same episodes always give the same numbers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

Z95 = 1.959963984540054
BOOTSTRAP_SAMPLES = 2000
#: Statuses that count as an error of the episode (a crash or an overrun), not the agent's plain failure.
ERROR_STATUSES = ("error", "timeout")


@dataclass(frozen=True)
class EpisodeOutcome:
    """One finished episode as the report sees it (from its trajectory)."""

    key: str
    task_id: str
    domain: str
    family: str
    seed: int | None
    status: str
    reward: float
    steps: int
    #: Steps whose action failed to parse or was refused by the environment.
    invalid_steps: int
    #: Steps that carry the sampler's per-token logprobs.
    logprob_steps: int
    error: str | None
    wall_seconds: float
    #: The trajectory directory, relative to the evaluation's output directory.
    path: str
    #: The observation channels the agent was given (:mod:`mintgym.observe`).
    observe: tuple[str, ...] = ("screenshot",)

    @property
    def success(self) -> bool:
        return self.status == "success"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval of a binomial proportion; None without trials."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, {n}], got {successes}")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo, hi = max(0.0, centre - half), min(1.0, centre + half)
    # The bounds are exactly 0 (no successes) and 1 (all successes); float rounding must not move them.
    return (0.0 if successes == 0 else lo), (1.0 if successes == n else hi)


def bootstrap_mean_interval(values: Iterable[float], level: float = 0.95, samples: int = BOOTSTRAP_SAMPLES,
                            seed: int = 0) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of the mean; None for fewer than two values."""
    data = np.asarray(list(values), dtype=float)
    if data.size < 2:
        return None
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(samples, data.size))].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def reason_of(error: str | None, limit: int = 160) -> str:
    """An error message shortened to its first line, so equal causes group together."""
    if not error:
        return "(no reason given)"
    line = error.strip().splitlines()[0] if error.strip() else error
    return line if len(line) <= limit else line[: limit - 3] + "..."


def summarize(episodes: list[EpisodeOutcome]) -> dict[str, Any]:
    """Counts, rates with 95% intervals, means and error reasons of a group of episodes."""
    n = len(episodes)
    successes = sum(e.success for e in episodes)
    rewards = [e.reward for e in episodes]
    errors = [e for e in episodes if e.status in ERROR_STATUSES]
    ci = wilson_interval(successes, n)
    reward_ci = bootstrap_mean_interval(rewards)
    return {
        "episodes": n,
        "successes": successes,
        "success_rate": successes / n if n else None,
        "success_ci95": list(ci) if ci else None,
        "mean_reward": float(np.mean(rewards)) if n else None,
        "reward_ci95": list(reward_ci) if reward_ci else None,
        "mean_steps": float(np.mean([e.steps for e in episodes])) if n else None,
        "invalid_steps": sum(e.invalid_steps for e in episodes),
        "logprob_steps": sum(e.logprob_steps for e in episodes),
        "errors": {"count": len(errors),
                   "reasons": dict(Counter(reason_of(e.error) for e in errors).most_common())},
        "statuses": dict(Counter(e.status for e in episodes).most_common()),
        "wall_seconds": float(sum(e.wall_seconds for e in episodes)),
    }


def group_by(episodes: list[EpisodeOutcome], attr: str) -> dict[str, dict[str, Any]]:
    """:func:`summarize` per value of ``attr`` (``task_id``, ``family``, ``domain``), sorted by name."""
    groups: dict[str, list[EpisodeOutcome]] = {}
    for e in episodes:
        groups.setdefault(getattr(e, attr) or "(none)", []).append(e)
    return {name: summarize(group) for name, group in sorted(groups.items())}
