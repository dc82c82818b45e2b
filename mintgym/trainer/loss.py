"""Layer 6: the policy-gradient loss, a pure function of tensors with a chosen off-policy correction.

Shapes: ``B`` sequences (turns), ``T`` response tokens (right padded). ``mask`` is 1 on response tokens
that count and 0 on padding (prompt tokens never enter: these tensors hold response tokens only).
``ratio = exp(logprobs - sampler_logprobs)`` is the importance ratio of the trainer's policy over the
policy that sampled the tokens. Corrections:

- ``truncated_is`` (the default): ``-sg(min(ratio, C)) * A * logprobs`` per token, truncated importance
  sampling with cap ``C`` (``is_cap``, 2 by default). Every token's weight is at most ``C``, so no token can
  dominate the gradient. The ratio is heavy-tailed even at lag 0: an engine sampling in bfloat16 against the
  trainer's float32 recompute puts some tokens' ratios far above 1, and the gradient-norm clip, which scales
  the whole step, would let those few tokens set its direction. Below the cap the weight is the ratio itself,
  so at equal logprobs the gradient is exactly REINFORCE's.
- ``unclipped_token_is``: ``-sg(ratio) * A * logprobs`` per token, unbounded.
- ``none``: ``-A * logprobs`` (plain REINFORCE; ignores that the sample may be stale).
- ``ppo_clip``: ``-min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A)`` with the sampler as the old policy.

Whatever the correction, ``capped_fraction`` is the fraction of counted tokens whose ratio exceeds ``C``:
the tokens ``truncated_is`` capped (under another correction, those it would have capped). The learner logs it
every step as ``is/capped_fraction``.

``sg`` is stop-gradient. With ``entropy_coef`` > 0 every token also subtracts ``entropy_coef * H``, the
entropy of the policy's whole next-token distribution there (an entropy bonus: it keeps a policy from
settling on one answer before its rewards say which). The loss is the masked token mean over the whole batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

Correction = Literal["none", "unclipped_token_is", "truncated_is", "ppo_clip"]
CORRECTIONS: tuple[str, ...] = ("none", "unclipped_token_is", "truncated_is", "ppo_clip")


@dataclass
class LossInputs:
    """Everything the loss reads, as (B, T) tensors except ``advantages`` ((B,) or (B, T))."""

    #: The trainer's logprobs of the response tokens (with grad).
    logprobs: torch.Tensor
    #: The sampler's logprobs of the same tokens.
    sampler_logprobs: torch.Tensor
    advantages: torch.Tensor
    #: 1.0 where a token counts, 0.0 on padding.
    mask: torch.Tensor
    #: The entropy of the trainer's next-token distribution at each token (with grad); needed for a bonus.
    entropy: torch.Tensor | None = None


@dataclass
class LossOutput:
    loss: torch.Tensor
    #: Detached diagnostics: mean/max ratio, fraction of tokens the correction changed (clipped or truncated),
    #: fraction of tokens whose ratio exceeds the cap (``capped_fraction``).
    metrics: dict[str, float]


def policy_loss(inputs: LossInputs, correction: Correction = "truncated_is", *, is_cap: float = 2.0,
                clip_eps: float = 0.2, normalizer: float | None = None, entropy_coef: float = 0.0) -> LossOutput:
    """The batch loss for ``correction`` (plus the entropy bonus); ``normalizer`` overrides the token count it
    is divided by."""
    lp, old, mask = inputs.logprobs, inputs.sampler_logprobs.to(inputs.logprobs), inputs.mask.to(inputs.logprobs)
    if lp.shape != old.shape or lp.shape != mask.shape:
        raise ValueError(f"logprobs {tuple(lp.shape)}, sampler_logprobs {tuple(old.shape)} and mask "
                         f"{tuple(mask.shape)} must have one shape")
    adv = inputs.advantages.to(lp)
    if adv.dim() == 1:
        adv = adv.unsqueeze(-1).expand_as(lp)
    if adv.shape != lp.shape:
        raise ValueError(f"advantages of shape {tuple(inputs.advantages.shape)} do not fit {tuple(lp.shape)}")
    # padding positions may hold anything, inf included: keep them at ratio 1 (inf * 0 would be NaN)
    log_ratio = torch.where(mask.bool(), lp - old, torch.zeros_like(lp))
    ratio = torch.exp(log_ratio)
    if is_cap <= 0:
        raise ValueError(f"the truncation cap C must be > 0, got {is_cap}")
    changed = torch.zeros_like(lp)
    if correction == "none":
        per_token = -adv * lp
    elif correction == "unclipped_token_is":
        per_token = -ratio.detach() * adv * lp
    elif correction == "truncated_is":
        weight = ratio.detach().clamp(max=is_cap)
        changed = (ratio.detach() > is_cap).to(lp)
        per_token = -weight * adv * lp
    elif correction == "ppo_clip":
        if not 0 < clip_eps < 1:
            raise ValueError(f"clip_eps must be in (0, 1), got {clip_eps}")
        clipped = ratio.clamp(1 - clip_eps, 1 + clip_eps)
        per_token = -torch.minimum(ratio * adv, clipped * adv)
        changed = ((ratio * adv) > (clipped * adv)).to(lp)
    else:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
    if entropy_coef < 0:
        raise ValueError(f"entropy_coef must be >= 0, got {entropy_coef}")
    if entropy_coef > 0:
        if inputs.entropy is None or inputs.entropy.shape != lp.shape:
            got = None if inputs.entropy is None else tuple(inputs.entropy.shape)
            raise ValueError(f"an entropy bonus needs the entropy of every token, shape {tuple(lp.shape)}; got {got}")
        per_token = per_token - entropy_coef * inputs.entropy.to(lp)
    count = mask.sum() if normalizer is None else torch.tensor(float(normalizer))
    loss = torch.where(mask.bool(), per_token, torch.zeros_like(per_token)).sum() / count.clamp(min=1.0)
    with torch.no_grad():
        n = mask.sum().clamp(min=1.0)
        metrics = {
            "ratio_mean": float((ratio * mask).sum() / n),
            "ratio_max": float((ratio * mask + (1 - mask) * -1e9).max()) if mask.any() else 1.0,
            "changed_fraction": float((changed * mask).sum() / n),
            "capped_fraction": float(((ratio.detach() > is_cap).to(lp) * mask).sum() / n),
        }
        if inputs.entropy is not None:
            metrics["entropy_mean"] = float((inputs.entropy.to(lp) * mask).sum() / n)
    return LossOutput(loss, metrics)


def pad_right(rows: list[torch.Tensor], value: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack 1-D tensors of different lengths into (B, T) plus a float mask of the real entries."""
    if not rows:
        raise ValueError("nothing to pad")
    length = max(r.numel() for r in rows)
    out = rows[0].new_full((len(rows), length), value)
    mask = torch.zeros(len(rows), length, dtype=torch.float32, device=rows[0].device)
    for i, r in enumerate(rows):
        out[i, :r.numel()] = r
        mask[i, :r.numel()] = 1.0
    return out, mask
