"""The transformers engine: a VLM on CPU (or one GPU), batched with left padding; the test default.

Sampling happens in :class:`_RowSampler`, a logits processor that draws each row's token from that row's
own seeded generator, temperature and top-p, records the token's logprob, and then hands ``generate`` a
one-hot score so greedy search keeps exactly that token. Each request's sample therefore depends on its
own seed only, not on the batch it shared.

Logprobs: with ``aligned_logprobs=True`` (default) the returned logprobs are recomputed after generation
by :func:`~mintgym.inference.logprobs.sequence_logprobs` on the unpadded sequence, the very function the
trainer uses (zero mismatch at equal weights). With it off they are the sampler's own: the decode step's
raw logits (left-padded, KV-cached) under ``log_softmax(logits / temperature)``, before top-p truncation.
Either way the vision placeholder tokens are masked out (see :mod:`mintgym.inference.logprobs`).

The checkpoint's ``generation_config.json`` never reaches ``generate``: transformers would fill every field
the engine leaves unset from it (a repetition penalty, ``no_repeat_ngram_size``, forced tokens...), acting on
the logits before :class:`_RowSampler` (see :mod:`mintgym.inference.checkpoint_sampling`). During
``generate`` the model carries a generation config that holds only the checkpoint's special tokens.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from mintgym.errors import ContextOverflow
from mintgym.inference.base import InferenceEngine
from mintgym.inference.checkpoint_sampling import ignored_settings, say_ignored
from mintgym.inference.images import DEFAULT_MAX_IMAGE_PIXELS
from mintgym.inference.logprobs import (
    Layout,
    SequenceInput,
    mask_logits,
    sequence_logprobs,
    split_images,
    suppressed_token_ids,
)
from mintgym.inference.messages import split_messages
from mintgym.inference.types import Generation, GenerationRequest, SamplingParams
from mintgym.weights.base import state_mismatch


class _RowSampler:
    """Per-row sampling inside ``model.generate``; also its stopping criterion."""

    def __init__(self, params: list[SamplingParams], seeds: list[int], eos_ids: set[int], tokenizer: Any,
                 suppressed: torch.Tensor):
        self.params = params
        self.suppressed = suppressed
        self.generators = [torch.Generator().manual_seed(s) for s in seeds]
        self.eos_ids = eos_ids
        self.tokenizer = tokenizer
        n = len(params)
        self.tokens: list[list[int]] = [[] for _ in range(n)]
        self.logprobs: list[list[float]] = [[] for _ in range(n)]
        self.top: list[list[list[tuple[int, float]]]] = [[] for _ in range(n)]
        self.finish: list[str] = ["length"] * n
        self.done = torch.zeros(n, dtype=torch.bool)
        self.first_token_at: float | None = None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.first_token_at is None:
            self.first_token_at = time.perf_counter()
        forced = torch.full_like(scores, -math.inf)
        for row, p in enumerate(self.params):
            if self.done[row]:
                forced[row, 0] = 0.0  # generate pads finished rows anyway
                continue
            logits = mask_logits(scores[row], self.suppressed)
            temperature = p.temperature if p.temperature > 0 else 1.0
            logp = torch.log_softmax(logits / temperature if temperature != 1.0 else logits, dim=-1)
            token = int(torch.argmax(logits)) if p.temperature == 0 else self._sample(logp, p.top_p, row)
            self.tokens[row].append(token)
            self.logprobs[row].append(float(logp[token]))
            if p.top_logprobs:
                values, ids = torch.topk(logp, min(p.top_logprobs, logp.numel()))
                self.top[row].append([(int(i), float(v)) for i, v in zip(ids, values, strict=True)])
            forced[row, token] = 0.0
            self._check_done(row, token, p)
        return forced

    def _sample(self, logp: torch.Tensor, top_p: float, row: int) -> int:
        probs = torch.exp(logp)
        if top_p < 1.0:
            sorted_p, order = probs.sort(descending=True)
            keep = (sorted_p.cumsum(0) - sorted_p) < top_p
            probs = torch.zeros_like(probs).scatter_(0, order[keep], sorted_p[keep])
        return int(torch.multinomial(probs, 1, generator=self.generators[row]))

    def _check_done(self, row: int, token: int, p: SamplingParams) -> None:
        if token in self.eos_ids or p.stop and any(
                s in self.tokenizer.decode(self.tokens[row], skip_special_tokens=True) for s in p.stop):
            self.done[row], self.finish[row] = True, "stop"
        elif len(self.tokens[row]) >= p.max_new_tokens:
            self.done[row] = True

    def stopping(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return self.done.clone().to(input_ids.device)


@contextmanager
def _generation_config(model: Any, config: Any) -> Iterator[None]:
    """``model.generation_config`` is ``config`` inside the block and the model's own again after it (a model
    shared with a trainer saves its checkpoint's settings as they were)."""
    own = model.generation_config
    model.generation_config = config
    try:
        yield
    finally:
        model.generation_config = own


class HFEngine(InferenceEngine):
    """A transformers image-text-to-text model (Qwen2-VL family, Idefics3) in this process.

    Args:
        model_path: checkpoint directory (a real one, or :func:`mintgym.models.tiny.build_tiny_vlm`'s).
        model, processor: already loaded ones instead of ``model_path``.
        device, dtype: where and in what precision to run (default CPU, float32).
        aligned_logprobs: recompute the returned logprobs with :func:`sequence_logprobs` (see module doc).
        logprob_layout: the layout of that recompute: ``per_sequence`` or ``right_padded``.
        max_batch_size: requests per ``model.generate`` call; longer lists run in chunks.
        max_image_pixels: larger images are refused with :class:`~mintgym.inference.images.ImageTooLarge`.
        seed: seeds the stream that requests without a seed draw from.
        policy_version: version of the initial weights.
        max_model_len: most tokens of prompt and response (default: the text model's
            ``max_position_embeddings``); a longer prompt raises :class:`~mintgym.errors.ContextOverflow`, and a
            response stops (``length``) where it would pass it, as vLLM does.
    """

    def __init__(
        self,
        model_path: str | os.PathLike | None = None,
        *,
        model: Any = None,
        processor: Any = None,
        device: str = "cpu",
        dtype: Any = None,
        aligned_logprobs: bool = True,
        logprob_layout: Layout = "per_sequence",
        max_batch_size: int = 16,
        max_image_pixels: int | None = DEFAULT_MAX_IMAGE_PIXELS,
        seed: int = 0,
        policy_version: int = 0,
        max_model_len: int | None = None,
    ):
        from mintgym.models.loading import load_model, load_processor

        if model is None or processor is None:
            if model_path is None:
                raise ValueError("HFEngine needs model_path, or both model and processor")
            model = model if model is not None else load_model(model_path, dtype=dtype, device=device)
            processor = processor if processor is not None else load_processor(model_path)
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if max_model_len is None:
            max_model_len = getattr(model.config.get_text_config(), "max_position_embeddings", None)
        if max_model_len is not None and (not isinstance(max_model_len, int) or max_model_len < 2):
            raise ValueError(f"max_model_len must be an integer >= 2, got {max_model_len!r}")
        self.max_model_len = max_model_len
        self.model = model.eval()
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.aligned_logprobs = aligned_logprobs
        self.logprob_layout = logprob_layout
        self.max_batch_size = max_batch_size
        self.max_image_pixels = max_image_pixels
        self.name = str(model_path) if model_path is not None else type(model).__name__
        self._seeds = np.random.default_rng(seed)
        self._version = policy_version
        self._lock = threading.Lock()
        eos = model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        if self.tokenizer.eos_token_id is not None and self.tokenizer.eos_token_id not in eos:
            eos.append(self.tokenizer.eos_token_id)
        self.eos_token_ids = eos
        self._suppressed = torch.tensor(suppressed_token_ids(model), dtype=torch.long)
        self.pad_token_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos[0]
        say_ignored("hf", self.name, ignored_settings(model.generation_config))
        from transformers import GenerationConfig

        #: What the model's generation config is while it generates: the special tokens alone.
        self._special_tokens_only = GenerationConfig(
            eos_token_id=self.eos_token_ids, pad_token_id=self.pad_token_id,
            bos_token_id=model.generation_config.bos_token_id,
            decoder_start_token_id=model.generation_config.decoder_start_token_id)

    @property
    def policy_version(self) -> int:
        return self._version

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        asked = time.perf_counter()
        # Validate (and decode images) before taking the lock, so a bad request fails alone and early.
        prepared = [split_messages(r.messages, self.max_image_pixels) for r in requests]
        with self._lock:
            queued = time.perf_counter() - asked
            results: list[Generation] = []
            for start in range(0, len(requests), self.max_batch_size):
                chunk = slice(start, start + self.max_batch_size)
                results += self._generate_batch(requests[chunk], prepared[chunk], queued)
        return results

    def _generate_batch(self, requests, prepared, queued: float) -> list[Generation]:
        from transformers import GenerationConfig

        t0 = time.perf_counter()
        texts = [self.processor.apply_chat_template(m, add_generation_prompt=True, tokenize=False)
                 for m, _ in prepared]
        images = [img for _, imgs in prepared for img in imgs]
        enc = self.processor(text=texts, images=images or None, padding=True, padding_side="left",
                             return_tensors="pt")
        enc = {k: v.to(self.device) for k, v in enc.items()}
        rows = self._split_rows(enc, [len(imgs) for _, imgs in prepared])
        params = [r.sampling for r in requests]
        if self.max_model_len is not None:
            for i, row in enumerate(rows):
                if len(row["prompt_ids"]) >= self.max_model_len:
                    raise ContextOverflow(f"request {i}: its prompt of {len(row['prompt_ids'])} tokens leaves no "
                                          f"room for a response in max_model_len={self.max_model_len}")
            params = [dataclasses.replace(p, max_new_tokens=min(p.max_new_tokens,
                                                                self.max_model_len - len(row["prompt_ids"])))
                      for p, row in zip(params, rows, strict=True)]
        seeds = [p.seed if p.seed is not None else int(self._seeds.integers(2**62)) for p in params]
        sampler = _RowSampler(params, seeds, set(self.eos_token_ids), self.tokenizer, self._suppressed)
        config = GenerationConfig(
            max_new_tokens=max(p.max_new_tokens for p in params), do_sample=False,
            eos_token_id=self.eos_token_ids, pad_token_id=self.pad_token_id,
        )
        with torch.no_grad(), _generation_config(self.model, self._special_tokens_only):
            self.model.generate(**enc, generation_config=config, logits_processor=[sampler],
                                stopping_criteria=[sampler.stopping])
        t_gen = time.perf_counter()
        source = "sampler"
        logprobs = sampler.logprobs
        if self.aligned_logprobs:
            seqs = [SequenceInput(row["prompt_ids"] + toks, len(row["prompt_ids"]), **row["images"])
                    for row, toks in zip(rows, sampler.tokens, strict=True)]
            with torch.no_grad():
                recomputed = sequence_logprobs(self.model, seqs, temperature=[p.temperature for p in params],
                                               layout=self.logprob_layout)
            logprobs = [lp.tolist() for lp in recomputed]
            source = "aligned"
        t_end = time.perf_counter()
        ttft = (sampler.first_token_at or t_gen) - t0
        out = []
        for i, (req, row) in enumerate(zip(requests, rows, strict=True)):
            out.append(Generation(
                text=self._text(sampler.tokens[i], req.sampling.stop),
                prompt_token_ids=row["prompt_ids"],
                response_token_ids=list(sampler.tokens[i]),
                response_logprobs=list(logprobs[i]),
                policy_version=self._version,
                finish_reason=sampler.finish[i],  # type: ignore[arg-type]
                timings={"queue": queued, "ttft": ttft, "generate": t_gen - t0, "logprobs": t_end - t_gen,
                         "total": queued + t_end - t0},
                logprobs_source=source,  # type: ignore[arg-type]
                top_logprobs=sampler.top[i] if req.sampling.top_logprobs else None,
                request_id=req.request_id,
            ))
        return out

    def _split_rows(self, enc: dict[str, torch.Tensor], images_per_row: list[int]) -> list[dict[str, Any]]:
        """Each row's prompt ids (padding dropped) and its image fields (:func:`split_images`)."""
        images = split_images(enc, images_per_row)
        return [{"prompt_ids": enc["input_ids"][r][enc["attention_mask"][r].bool()].tolist(), "images": images[r]}
                for r in range(len(images_per_row))]

    def _text(self, tokens: list[int], stop: tuple[str, ...]) -> str:
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        cuts = [text.find(s) for s in stop if s in text]
        return text[:min(cuts)] if cuts else text

    def sequence_inputs(self, messages: list[dict[str, Any]], response_token_ids: list[int]) -> SequenceInput:
        """The :class:`SequenceInput` the trainer feeds :func:`sequence_logprobs` for this prompt + response."""
        template, images = split_messages(messages, self.max_image_pixels)
        text = self.processor.apply_chat_template(template, add_generation_prompt=True, tokenize=False)
        enc = self.processor(text=[text], images=images or None, return_tensors="pt")
        ids = enc["input_ids"][0].tolist()
        return SequenceInput(ids + list(response_token_ids), len(ids), **split_images(enc, [len(images)])[0])

    def update_weights(self, version: int, state: Mapping[str, Any]) -> None:
        """Copy ``state`` (a full state dict, same keys and shapes) into the model and set the version.

        Names and shapes are checked, and the values made tensors, before anything is copied: a state that
        does not fit raises ValueError and leaves the model and its version as they were.
        """
        if not isinstance(version, int):
            raise ValueError(f"policy version must be an int, got {version!r}")
        refused = f"hf engine: weights version {version} not loaded: {{}}; the engine keeps version {self._version}"
        tensors = {}
        for name, value in state.items():
            try:
                tensors[name] = torch.as_tensor(value)
            except (TypeError, ValueError, RuntimeError) as err:
                raise ValueError(refused.format(f"its {name!r} is no tensor ({type(err).__name__})")) from None
        own = self.model.state_dict()
        problem = state_mismatch({k: tuple(v.shape) for k, v in own.items()},
                                 {k: tuple(v.shape) for k, v in tensors.items()})
        if problem is not None:
            raise ValueError(refused.format(problem))
        with self._lock, torch.no_grad():
            self.model.load_state_dict(tensors, strict=True)
            self._version = version
