"""Layer 5: group-relative advantages, one scalar per sample of a group.

``grpo``: ``(r - mean(r)) / (std(r) + eps)`` (population std), or without the division when
``scale=False``. ``rloo``: ``r_i - mean_{j != i} r_j`` (leave-one-out baseline). A group whose rewards
are all equal gets zero advantages under both.

    >>> compute_advantages([1.0, 0.0, 0.0, 0.0], "rloo")
    [1.0, -0.3333333333333333, -0.3333333333333333, -0.3333333333333333]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

AdvantageKind = Literal["grpo", "rloo"]


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
    if min(rewards) == max(rewards):  # exactly 0: the float residue of 16 x 0.3 would be ~1e-11, which Adam scales up
        return [0.0] * len(rewards)
    if kind == "grpo":
        return grpo(rewards, scale=scale, eps=eps)
    return rloo(rewards)
