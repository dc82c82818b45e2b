"""Layer 5: group-relative advantages, one scalar per sample of a group.

``grpo``: ``(r - mean(r)) / (std(r) + eps)`` (population std), or without the division when
``scale=False``. ``rloo``: ``r_i - mean_{j != i} r_j`` (leave-one-out baseline). A group whose rewards
tie (all within ``TIE_TOLERANCE`` of each other) gets zero advantages under both: ``0.1 + 0.2`` and ``0.3``
differ by one float step, and the ~1e-11 advantage such a residue gives would still reach Adam, which
scales it up to a full-size step.

    >>> compute_advantages([1.0, 0.0, 0.0, 0.0], "rloo")
    [1.0, -0.3333333333333333, -0.3333333333333333, -0.3333333333333333]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

AdvantageKind = Literal["grpo", "rloo"]

#: Rewards that differ by at most this much count as equal (rewards are in [0, 1]).
TIE_TOLERANCE = 1e-9


def grpo(rewards: Sequence[float], *, scale: bool = True, eps: float = 1e-6) -> list[float]:
    mean = sum(rewards) / len(rewards)
    centered = [r - mean for r in rewards]
    if not scale:
        return centered
    std = math.sqrt(sum(c * c for c in centered) / len(rewards))
    return [c / (std + eps) for c in centered]


def rloo(rewards: Sequence[float]) -> list[float]:
    n = len(rewards)
    if n < 2:
        raise ValueError("the leave-one-out baseline needs groups of at least 2 samples")
    total = sum(rewards)
    return [r - (total - r) / (n - 1) for r in rewards]


def compute_advantages(rewards: Sequence[float], kind: AdvantageKind = "grpo", *, scale: bool = True,
                       eps: float = 1e-6) -> list[float]:
    """Advantages of one group's rewards by ``kind`` (``grpo`` or ``rloo``)."""
    if not rewards:
        raise ValueError("a group needs at least one reward")
    if kind not in ("grpo", "rloo"):
        raise ValueError(f"advantage kind must be 'grpo' or 'rloo', got {kind!r}")
    if kind == "rloo" and len(rewards) < 2:
        raise ValueError("the leave-one-out baseline needs groups of at least 2 samples")
    if max(rewards) - min(rewards) <= TIE_TOLERANCE:  # exactly 0, not a float residue (see the module docstring)
        return [0.0] * len(rewards)
    if kind == "grpo":
        return grpo(rewards, scale=scale, eps=eps)
    return rloo(rewards)
