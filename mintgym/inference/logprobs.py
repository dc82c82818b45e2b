"""The one forward pass that turns (prompt + response) token sequences into per-token logprobs.

The hf engine computes the behaviour logprobs it returns with :func:`sequence_logprobs` (when
``aligned_logprobs=True``), and the trainer recomputes them with the same function on the same
:class:`SequenceInput`, so at equal weights the sampler/trainer mismatch is exactly zero. The layout is
part of that contract: ``per_sequence`` (the default) runs each sequence alone, unpadded, so the result
does not depend on how sequences are grouped; ``right_padded`` runs one padded batch, which is faster
but equal only for the same grouping.

The vision placeholder tokens (``<|image_pad|>``, ``<|vision_start|>``, ...) are never sampled: a
response holding one would be read as an image slot. Their logits are ``-inf`` in the sampler and here
(:func:`suppressed_token_ids`), so both compute the same distribution.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch

Layout = Literal["per_sequence", "right_padded"]


@dataclass
class SequenceInput:
    """One prompt + response, as the model sees it."""

    #: Prompt token ids followed by response token ids (image pads expanded, as the processor made them).
    token_ids: list[int]
    #: How many of ``token_ids`` are the prompt.
    prompt_length: int
    #: The processor's ``pixel_values`` rows of this sequence's images (None without images).
    pixel_values: torch.Tensor | None = None
    #: The processor's ``image_grid_thw`` rows of this sequence's images.
    image_grid_thw: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if not 0 < self.prompt_length < len(self.token_ids):
            raise ValueError(
                f"prompt_length {self.prompt_length} must be in (0, {len(self.token_ids)}): "
                "a sequence needs a prompt and at least one response token"
            )

    @property
    def response_length(self) -> int:
        return len(self.token_ids) - self.prompt_length


def _mm_token_types(model: Any, ids: torch.Tensor) -> torch.Tensor:
    config = model.config
    types = torch.zeros_like(ids)
    image_id = getattr(config, "image_token_id", None)
    video_id = getattr(config, "video_token_id", None)
    if image_id is not None:
        types[ids == image_id] = 1
    if video_id is not None:
        types[ids == video_id] = 2
    return types


def suppressed_token_ids(model: Any) -> list[int]:
    """Token ids a response may never contain: the model's image/video placeholders and vision brackets."""
    config = model.config
    names = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
    return sorted({int(v) for n in names if isinstance(v := getattr(config, n, None), int)})


def _images(seqs: Sequence[SequenceInput]) -> dict[str, torch.Tensor]:
    with_images = [s for s in seqs if s.pixel_values is not None]
    if not with_images:
        return {}
    return {
        "pixel_values": torch.cat([s.pixel_values for s in with_images]),
        "image_grid_thw": torch.cat([s.image_grid_thw for s in with_images]),
    }


def mask_logits(logits: torch.Tensor, suppressed: torch.Tensor | None) -> torch.Tensor:
    """``logits`` (float32) with the ``suppressed`` ids set to -inf along the last axis (out of place)."""
    logits = logits.float()
    if suppressed is not None and suppressed.numel():
        logits = logits.index_fill(-1, suppressed.to(logits.device), -math.inf)
    return logits


def _token_scores(logits: torch.Tensor, targets: torch.Tensor, temperature: float,
                  suppressed: torch.Tensor | None, entropy: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Each target's logprob and, if ``entropy``, the distribution's entropy (suppressed ids have p = 0)."""
    logits = mask_logits(logits, suppressed)
    if temperature > 0 and temperature != 1.0:
        logits = logits / temperature
    logp = torch.log_softmax(logits, dim=-1)
    chosen = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    if not entropy:
        return chosen, None
    finite = torch.isfinite(logp)
    return chosen, -(logp.exp() * torch.where(finite, logp, torch.zeros_like(logp))).sum(-1)


def sequence_logprobs(
    model: Any,
    batch: Sequence[SequenceInput],
    *,
    temperature: float | Sequence[float] = 1.0,
    layout: Layout = "per_sequence",
) -> list[torch.Tensor]:
    """Logprob of every response token of every sequence, under ``log_softmax(logits / temperature)``.

    Differentiable when grad is enabled (the trainer's loss); wrap in ``torch.no_grad()`` otherwise.
    ``temperature`` 0 (greedy) counts as 1.

    Returns:
        One float32 tensor of shape (response_length,) per sequence, in order.
    """
    return [lp for lp, _ in _scores(model, batch, temperature, layout, entropy=False)]


def sequence_logprobs_and_entropy(
    model: Any,
    batch: Sequence[SequenceInput],
    *,
    temperature: float | Sequence[float] = 1.0,
    layout: Layout = "per_sequence",
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """As :func:`sequence_logprobs`, with the entropy (nats) of the whole next-token distribution at each
    response position beside each token's logprob (the trainer's entropy bonus); two (response_length,)
    float32 tensors per sequence."""
    return _scores(model, batch, temperature, layout, entropy=True)


def _scores(model: Any, batch: Sequence[SequenceInput], temperature: float | Sequence[float], layout: Layout,
            entropy: bool) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    if not batch:
        return []
    temps = [float(temperature)] * len(batch) if isinstance(temperature, (int, float)) else list(temperature)
    if len(temps) != len(batch):
        raise ValueError(f"got {len(temps)} temperatures for {len(batch)} sequences")
    device = next(model.parameters()).device
    suppressed = torch.tensor(suppressed_token_ids(model), dtype=torch.long, device=device)
    if layout == "per_sequence":
        return [_one(model, seq, t, device, suppressed, entropy) for seq, t in zip(batch, temps)]
    if layout == "right_padded":
        return _right_padded(model, batch, temps, device, suppressed, entropy)
    raise ValueError(f"layout must be 'per_sequence' or 'right_padded', got {layout!r}")


def _one(model: Any, seq: SequenceInput, temperature: float, device: torch.device,
         suppressed: torch.Tensor, entropy: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    ids = torch.tensor([seq.token_ids], dtype=torch.long, device=device)
    extra = {k: v.to(device) for k, v in _images([seq]).items()}
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), mm_token_type_ids=_mm_token_types(model, ids),
                use_cache=False, **extra)
    start = seq.prompt_length
    return _token_scores(out.logits[0, start - 1:-1], ids[0, start:], temperature, suppressed, entropy)


def _right_padded(model: Any, batch: Sequence[SequenceInput], temps: list[float], device: torch.device,
                  suppressed: torch.Tensor, entropy: bool) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    pad = getattr(model.config, "pad_token_id", None) or getattr(model.config.get_text_config(), "pad_token_id", 0) or 0
    length = max(len(s.token_ids) for s in batch)
    ids = torch.full((len(batch), length), pad, dtype=torch.long, device=device)
    mask = torch.zeros_like(ids)
    for row, seq in enumerate(batch):
        ids[row, :len(seq.token_ids)] = torch.tensor(seq.token_ids, device=device)
        mask[row, :len(seq.token_ids)] = 1
    extra = {k: v.to(device) for k, v in _images(batch).items()}
    out = model(input_ids=ids, attention_mask=mask, mm_token_type_ids=_mm_token_types(model, ids) * mask,
                use_cache=False, **extra)
    result = []
    for row, (seq, t) in enumerate(zip(batch, temps)):
        start, end = seq.prompt_length, len(seq.token_ids)
        result.append(_token_scores(out.logits[row, start - 1:end - 1], ids[row, start:end], t, suppressed, entropy))
    return result
