"""Layer 6: the sampler/trainer logprob mismatch, kept apart from lag.

Only turns sampled with the very weights the trainer holds (lag 0) are compared, so policy change never
shows up as mismatch. Per token ``d = trainer - sampler`` logprob; the KL estimate is
``exp(d) - d - 1`` (non-negative, unbiased for KL(sampler || trainer) under the sampler's tokens), the
other number the largest ``|d|``. Reported overall and per domain, turn index and image count.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import torch


def token_mismatch(trainer: torch.Tensor, sampler: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token (kl estimate, abs difference) of two 1-D logprob tensors."""
    d = trainer.detach().double() - sampler.detach().double().to(trainer.device)
    return torch.expm1(d) - d, d.abs()


def mismatch_metrics(trainer: Sequence[torch.Tensor], sampler: Sequence[torch.Tensor],
                     keys: Sequence[dict[str, object]]) -> dict[str, float]:
    """``mismatch/kl_mean``, ``mismatch/max_abs`` and ``mismatch/tokens`` overall and per key value.

    ``keys[i]`` names turn ``i``'s slices (``{"domain": "web", "turn": 0, "images": 1}``).
    """
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # kl sum, max abs, tokens
    for lt, ls, key in zip(trainer, sampler, keys, strict=True):
        if lt.shape != ls.shape:
            raise ValueError(f"trainer logprobs {tuple(lt.shape)} and sampler logprobs {tuple(ls.shape)} differ")
        kl, diff = token_mismatch(lt, ls)
        names = ["mismatch"] + [f"mismatch/{k}={v}" for k, v in key.items()]
        for name in names:
            acc = sums[name]
            acc[0] += float(kl.sum())
            acc[1] = max(acc[1], float(diff.max()) if diff.numel() else 0.0)
            acc[2] += diff.numel()
    out: dict[str, float] = {}
    for name, (kl, mx, n) in sums.items():
        out[f"{name}/kl_mean"] = kl / n if n else 0.0
        out[f"{name}/max_abs"] = mx
        out[f"{name}/tokens"] = n
    return out
