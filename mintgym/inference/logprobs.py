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

Only response positions are projected to the vocabulary, ``LOGITS_CHUNK`` at a time
(:class:`ResponseScorer`): the prompt (screenshots are thousands of tokens) never gets full-vocabulary logits.

Images travel as the tensors the model's processor makes, in one of two layouts (:func:`split_images`):
Qwen2-VL's (``pixel_values`` rows of every image of a batch, with ``image_grid_thw``) and Idefics3's
(``pixel_values`` [prompts, images, C, H, W] with ``pixel_attention_mask``, zero images padding each prompt).
A :class:`SequenceInput` holds its own images as rows, one per image (crop), in either layout.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch.utils.checkpoint import checkpoint

#: Response positions projected to the vocabulary at a time (:class:`ResponseScorer`).
LOGITS_CHUNK = 1024

Layout = Literal["per_sequence", "right_padded"]


@dataclass
class SequenceInput:
    """One prompt + response, as the model sees it."""

    #: Prompt token ids followed by response token ids (image pads expanded, as the processor made them).
    token_ids: list[int]
    #: How many of ``token_ids`` are the prompt.
    prompt_length: int
    #: The processor's ``pixel_values`` rows of this sequence's images (None without images): Qwen2-VL's patch
    #: rows, or Idefics3's [images, C, H, W] (the prompt axis dropped).
    pixel_values: torch.Tensor | None = None
    #: The processor's ``image_grid_thw`` rows of this sequence's images (Qwen2-VL).
    image_grid_thw: torch.Tensor | None = None
    #: The processor's ``pixel_attention_mask`` [images, H, W] of this sequence's images (Idefics3).
    pixel_attention_mask: torch.Tensor | None = None

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


def split_images(encoding: Mapping[str, Any], images_per_prompt: Sequence[int]) -> list[dict[str, torch.Tensor]]:
    """A processor's image tensors for a batch of prompts, split into each prompt's :class:`SequenceInput`
    image fields (``{}`` for a prompt without images).

    Qwen2-VL's ``pixel_values`` rows are cut by ``image_grid_thw`` (each image ``t * h * w`` rows); Idefics3's
    per-prompt tensors lose their prompt axis and the zero images that pad a prompt to the batch's most
    (all-zero ``pixel_attention_mask``). Any other layout is a ValueError naming the processor's keys.
    """
    if "pixel_values" not in encoding or not any(images_per_prompt):
        return [{} for _ in images_per_prompt]
    pixels = encoding["pixel_values"]
    if "image_grid_thw" in encoding:
        grids = encoding["image_grid_thw"]
        counts = grids.prod(-1).tolist()
        out, image_at, row_at = [], 0, 0
        for n in images_per_prompt:
            rows = sum(counts[image_at:image_at + n])
            out.append({"pixel_values": pixels[row_at:row_at + rows], "image_grid_thw": grids[image_at:image_at + n]}
                       if n else {})
            image_at, row_at = image_at + n, row_at + rows
        return out
    if "pixel_attention_mask" in encoding:
        masks = encoding["pixel_attention_mask"]
        out = []
        for prompt, n in enumerate(images_per_prompt):
            real = masks[prompt].flatten(1).any(1)
            out.append({"pixel_values": pixels[prompt][real], "pixel_attention_mask": masks[prompt][real]} if n else {})
        return out
    raise ValueError(f"unknown image layout: the processor gave {sorted(encoding)}; image_grid_thw (Qwen2-VL) or "
                     "pixel_attention_mask (Idefics3) expected beside pixel_values")


def image_features(config: Any, seq: SequenceInput) -> int:
    """How many image placeholder tokens the model fills with ``seq``'s images: Qwen2-VL's
    ``sum(t * h * w) / merge_size**2``; Idefics3's ``(image_size / patch_size)**2 / scale_factor**2`` per crop."""
    if seq.pixel_values is None:
        return 0
    vision = config.vision_config
    if seq.image_grid_thw is not None:
        merge = int(getattr(vision, "spatial_merge_size", 2) or 2)
        return int(seq.image_grid_thw.prod(-1).sum()) // (merge ** 2)
    if seq.pixel_attention_mask is not None:
        per_crop = (vision.image_size // vision.patch_size) ** 2 // (config.scale_factor ** 2)
        return seq.pixel_values.shape[0] * per_crop
    raise ValueError("pixel_values without image_grid_thw or pixel_attention_mask: unknown image layout")


def _images(seqs: Sequence[SequenceInput]) -> dict[str, torch.Tensor]:
    """The model's image arguments for ``seqs`` run as one batch: each field's rows joined in order; Idefics3's
    under one prompt axis (the model flattens prompts and images alike, and fills the placeholders in order)."""
    with_images = [s for s in seqs if s.pixel_values is not None]
    if not with_images:
        return {}
    out = {"pixel_values": torch.cat([s.pixel_values for s in with_images])}
    if with_images[0].image_grid_thw is not None:
        out["image_grid_thw"] = torch.cat([s.image_grid_thw for s in with_images])
    if with_images[0].pixel_attention_mask is not None:
        out = {"pixel_values": out["pixel_values"][None],
               "pixel_attention_mask": torch.cat([s.pixel_attention_mask for s in with_images])[None]}
    return out


def mask_logits(logits: torch.Tensor, suppressed: torch.Tensor | None) -> torch.Tensor:
    """``logits`` (float32) with the ``suppressed`` ids set to -inf along the last axis (out of place)."""
    logits = logits.float()
    if suppressed is not None and suppressed.numel():
        logits = logits.index_fill(-1, suppressed.to(logits.device), -math.inf)
    return logits


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
    scorer = model if isinstance(model, ResponseScorer) else ResponseScorer(model)
    if layout == "per_sequence":
        return [scorer.score([seq], [t], entropy)[0] for seq, t in zip(batch, temps, strict=True)]
    if layout == "right_padded":
        return scorer.score(batch, temps, entropy)
    raise ValueError(f"layout must be 'per_sequence' or 'right_padded', got {layout!r}")


class ResponseScorer(torch.nn.Module):
    """A causal (V)LM scored on response tokens only: the model body runs to its last hidden states, the
    response positions are picked out, and only they meet the vocabulary projection, ``chunk`` positions at a
    time, each chunk's logits, ``log_softmax`` and gather computed under activation checkpointing when grad is
    on (so the backward keeps a chunk's hidden states, never its logits, and rebuilds one chunk at a time).
    The prompt positions never get logits: for a screenshot prompt of thousands of tokens and a vocabulary of
    152k, the full logits were the step's largest tensor.

    It is an ``nn.Module`` around ``model`` so that a sharded trainer can make it the FSDP root
    (:mod:`mintgym.trainer.sharding`): the body's and the head's parameters are then gathered by its forward.
    """

    def __init__(self, model: Any, chunk: int = LOGITS_CHUNK):
        super().__init__()
        if chunk < 1:
            raise ValueError(f"logits chunk must be >= 1 position, got {chunk}")
        body, head = getattr(model, "model", None), model.get_output_embeddings()
        if body is None or head is None:
            raise ValueError(f"{type(model).__name__} has no .model body and output embeddings to score with")
        self.model = model
        self.chunk = chunk
        #: Whether the body takes ``mm_token_type_ids`` (Qwen2-VL's does; Idefics3's would hand it on to its LM).
        self.token_types = "mm_token_type_ids" in inspect.signature(body.forward).parameters

    @property
    def config(self) -> Any:
        return self.model.config

    def score(self, batch: Sequence[SequenceInput], temps: Sequence[float],
              entropy: bool) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
        """Each sequence's response-token logprobs (and entropies), ``batch`` run as one right-padded batch."""
        device = next(self.model.parameters()).device
        # the text model's pad id first: Idefics3's top-level one is a fixed 128002, past a tiny vocabulary
        pad = (getattr(self.config.get_text_config(), "pad_token_id", None)
               or getattr(self.config, "pad_token_id", 0) or 0)
        length = max(len(s.token_ids) for s in batch)
        ids = torch.full((len(batch), length), pad, dtype=torch.long, device=device)
        mask = torch.zeros_like(ids)
        rows, cols, scale = [], [], []
        for row, (seq, t) in enumerate(zip(batch, temps, strict=True)):
            ids[row, :len(seq.token_ids)] = torch.tensor(seq.token_ids, device=device)
            mask[row, :len(seq.token_ids)] = 1
            rows += [row] * seq.response_length
            cols += range(seq.prompt_length - 1, len(seq.token_ids) - 1)  # position i predicts token i + 1
            scale += [t if t > 0 else 1.0] * seq.response_length  # temperature 0 (greedy) counts as 1
        rows_t, cols_t = torch.tensor(rows, device=device), torch.tensor(cols, device=device)
        lp, ent = self(ids, mask, rows_t, cols_t, torch.tensor(scale, device=device), entropy,
                       **{k: v.to(device) for k, v in _images(batch).items()})
        sizes = [s.response_length for s in batch]
        ents = ent.split(sizes) if ent is not None else [None] * len(batch)
        return list(zip(lp.split(sizes), ents, strict=True))

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor,
                temps: torch.Tensor, entropy: bool, **images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(N,) logprobs of tokens ``ids[rows, cols + 1]`` (and entropies) under ``softmax(logits / temps)``;
        ``images`` are the model's image arguments (:func:`_images`)."""
        if self.token_types:
            images["mm_token_type_ids"] = _mm_token_types(self.model, ids) * mask
        out = self.model.model(input_ids=ids, attention_mask=mask, use_cache=False, **images)
        hidden = out.last_hidden_state[rows, cols]  # (N, H): response positions only
        targets = ids[rows, cols + 1]
        suppressed = torch.tensor(suppressed_token_ids(self.model), dtype=torch.long, device=ids.device)
        head = self.model.get_output_embeddings()
        lps, ents = [], []
        for start in range(0, hidden.shape[0], self.chunk):
            part = slice(start, start + self.chunk)
            args = (head, hidden[part], targets[part], temps[part], suppressed, entropy)
            scores = (checkpoint(_chunk_scores, *args, use_reentrant=False) if torch.is_grad_enabled()
                      else _chunk_scores(*args))
            lps.append(scores[0])
            if entropy:
                ents.append(scores[1])
        return torch.cat(lps), torch.cat(ents) if entropy else None


def _chunk_scores(head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor, temps: torch.Tensor,
                  suppressed: torch.Tensor, entropy: bool) -> tuple[torch.Tensor, ...]:
    """One chunk's target logprobs (and entropies, suppressed ids having p = 0), float32."""
    logits = mask_logits(head(hidden), suppressed) / temps.unsqueeze(-1)
    logp = torch.log_softmax(logits, dim=-1)
    chosen = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    if not entropy:
        return (chosen,)
    finite = torch.isfinite(logp)
    return chosen, -(logp.exp() * torch.where(finite, logp, torch.zeros_like(logp))).sum(-1)
