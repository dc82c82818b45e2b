"""Layer 6: one training step: batch in, advantages, trainer logprobs, loss, optimizer step, metrics out.

The trainer recomputes logprobs with :func:`mintgym.inference.logprobs.sequence_logprobs` on the turn's
exact token ids and the prompt's images run through the model's own image processor. Before the forward
it checks, per sequence, that the image placeholder tokens in the ids match the image features it feeds
(:func:`~mintgym.inference.logprobs.image_features`: Qwen2-VL's ``sum(grid_t * grid_h * grid_w) / merge_size**2``,
Idefics3's tokens per crop); a mismatch is a ``ValueError`` naming the sequence.
Turns are views of the episode record's steps, so an episode read back from disk trains the same way.

Memory (docs/train.md, "Memory and sharding"): logprobs come from response positions only, projected to the
vocabulary a chunk at a time (:class:`~mintgym.inference.logprobs.ResponseScorer`); each micro-batch's graph is
freed by its backward before the next one runs; ``train.activation_checkpointing`` recomputes each layer in the
backward (:mod:`mintgym.trainer.memory`); given :class:`~mintgym.trainer.sharding.Shards` the model is sharded
with FSDP2 and each rank trains its share of the turns.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mintgym.buffer.advantages import compute_advantages
from mintgym.buffer.types import Batch, Group, Turn
from mintgym.config import TrainConfig
from mintgym.errors import first_line
from mintgym.inference.images import load_image
from mintgym.inference.logprobs import (
    ResponseScorer,
    SequenceInput,
    image_features,
    sequence_logprobs,
    sequence_logprobs_and_entropy,
    split_images,
    suppressed_token_ids,
)
from mintgym.trainer.loss import LossInputs, pad_right, policy_loss
from mintgym.trainer.memory import use_activation_checkpointing
from mintgym.trainer.mismatch import mismatch_metrics
from mintgym.trainer.precision import Precision, model_dtype
from mintgym.trainer.sharding import Shards, all_reduce, full_state_dict, gather, passes, shard


class ImageLost(LookupError):
    """A turn's screenshot is gone from the object store (its owner died); the group cannot be trained."""


def _resolve(image: Any) -> np.ndarray:
    """A turn's image as pixels: an array as is, a frame file (an episode read from disk) loaded, a Ray
    reference fetched."""
    if isinstance(image, np.ndarray):
        return image
    if isinstance(image, (str, Path)):
        from PIL import Image

        with Image.open(image) as img:
            return np.asarray(img.convert("RGB"))
    import ray

    try:
        return ray.get(image)
    except ray.exceptions.ObjectLostError as exc:  # OwnerDiedError included
        raise ImageLost(first_line(exc)) from exc


@dataclass
class _Accumulation:
    """What an open step has gathered from the groups added so far."""

    rows: list[tuple[Turn, float, dict[str, Any], int]] = field(default_factory=list)
    loss_sum: float = 0.0
    ratio_means: list[float] = field(default_factory=list)
    ratio_max: list[float] = field(default_factory=list)
    changed: list[float] = field(default_factory=list)
    #: Token counts whose IS ratio exceeded ``is_cap`` (capped by ``truncated_is``).
    capped: float = 0.0
    #: Token sum of the policy's entropy (only computed for an entropy bonus).
    entropy_sum: float = 0.0
    trainer_lp: list[torch.Tensor] = field(default_factory=list)
    sampler_lp: list[torch.Tensor] = field(default_factory=list)
    keys: list[dict[str, Any]] = field(default_factory=list)
    images_lost: int = 0
    #: Groups left out because a response holds a token the trainer scores at -inf (see ``_materialize``).
    unscorable: int = 0
    #: The groups trained on, in the order they were added.
    groups: list[Group] = field(default_factory=list)
    #: Some advantage was not 0 / some backward pass ran.
    signal: bool = False
    backward: bool = False


class Learner:
    """Owns the trainer's model and optimizer; ``step(batch)`` trains once and bumps ``version`` (or, for a
    batch that arrives in parts: ``begin()``, ``add(groups)`` per part, ``finish(batch)``). A model given in a
    low-precision dtype is trained as ``config.precision`` says (:mod:`mintgym.trainer.precision`): with
    ``mixed`` it is turned into float32 master weights in place, and :meth:`state_dict` gives them back in
    the dtype it came in. With ``shards`` (a torchrun process of a sharded learner) the model is sharded with
    FSDP2 (:mod:`mintgym.trainer.sharding`): every rank calls the same methods with the same batch."""

    def __init__(self, model: Any, processor: Any, config: TrainConfig, *, version: int = 0,
                 resolve_image: Callable[[Any], np.ndarray] = _resolve, shards: Shards | None = None):
        if shards is not None and config.mismatch_snapshots:
            raise ValueError("mismatch_snapshots needs a whole model to score lagged turns with: set it to 0 "
                             "for a sharded learner")
        self.precision = Precision.of(model_dtype(model), config.precision)
        self.model = model.to(self.precision.master)
        self.processor = processor
        self.config = config
        self.version = version
        self.resolve_image = resolve_image
        self.shards = shards
        self.checkpointing = use_activation_checkpointing(model, config.activation_checkpointing)
        #: The model scored on response tokens only; the FSDP root of a sharded learner.
        self.scorer = ResponseScorer(model)
        if shards is not None:
            shard(self.scorer, model, shards)
        self.optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=config.lr)
        self.image_token_id = getattr(model.config, "image_token_id", None)
        self.suppressed = frozenset(suppressed_token_ids(model))
        #: Past weights by version (``mismatch_snapshots`` of them) and a scratch model to score with them.
        self.snapshots: dict[int, dict[str, torch.Tensor]] = {}
        self._scratch: Any = None
        self._acc: _Accumulation | None = None
        self._remember()

    def restored(self, version: int) -> None:
        """The model now holds ``version``'s weights (a checkpoint was loaded): restart the snapshots."""
        self.version = version
        self.snapshots.clear()
        self._remember()

    def _remember(self) -> None:
        keep = self.config.mismatch_snapshots
        if keep <= 0:
            return
        self.snapshots[self.version] = self.precision.published(self.model.state_dict(), copy=True)  # as sampled
        for v in [v for v in self.snapshots if v < self.version - keep]:
            del self.snapshots[v]

    def _lagged_logprobs(self, rows: list[tuple[Turn, float, dict[str, Any], int]]) -> list[tuple[int, torch.Tensor]]:
        """(row index, logprobs under the turn's own weights) for lagged turns whose weights are kept."""
        by_version: dict[int, list[int]] = defaultdict(list)
        for i, (turn, _adv, _key, lag) in enumerate(rows):
            if lag > 0 and turn.policy_version in self.snapshots:
                by_version[turn.policy_version].append(i)
        if not by_version:
            return []
        if self._scratch is None:
            import copy

            self._scratch = copy.deepcopy(self.model).eval()
        out = []
        with torch.no_grad(), self.precision.autocast(self.device):
            for version, idx in by_version.items():
                self._scratch.load_state_dict(self.snapshots[version])
                seqs = [self.sequence_input(rows[i][0], f"sequence {i}") for i in idx]
                lps = sequence_logprobs(self._scratch, seqs, temperature=[rows[i][0].temperature for i in idx])
                out += list(zip(idx, lps, strict=True))
        return out

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def sequence_input(self, turn: Turn, where: str = "") -> SequenceInput:
        """The model input of one turn, with the image-token/feature check."""
        ids = list(turn.prompt_token_ids) + list(turn.response_token_ids)
        fields: dict[str, torch.Tensor] = {}
        if turn.images:
            images = [load_image(self.resolve_image(img), None) for img in turn.images]
            enc = self.processor.image_processor(images=images, return_tensors="pt")
            [fields] = split_images(enc, [len(images)])
        seq = SequenceInput(ids, len(turn.prompt_token_ids), **fields)
        features = image_features(self.model.config, seq)
        placeholders = sum(1 for t in turn.prompt_token_ids if t == self.image_token_id)
        if placeholders != features:
            raise ValueError(f"{where}: {placeholders} image tokens in the prompt but its {len(turn.images)} "
                             f"image(s) give {features} features")
        if any(t == self.image_token_id for t in turn.response_token_ids):
            raise ValueError(f"{where}: the response holds an image placeholder token")
        return seq

    def step(self, batch: Batch) -> dict[str, float]:
        """Train on ``batch`` once; returns the step's metrics (reward, lag, loss, IS and mismatch stats)."""
        self.begin()
        self.add(batch.groups)
        return self.finish(batch)

    def begin(self) -> None:
        """Open a step whose groups arrive in parts (``add``); ``finish`` takes the optimizer step. Gradients
        accumulate as token sums and are divided by the step's token count at the end, so a step fed group by
        group moves the weights as one fed its whole batch at once."""
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        self._acc = _Accumulation()

    def add(self, groups: list[Group]) -> list[Group]:
        """Compute the advantages, logprobs, loss and gradient of ``groups`` into the open step; returns the
        groups trained on (those with a lost image or an unscorable token are left out). A chunk whose
        advantages are all 0 has no policy-gradient term: with ``skip_no_signal`` it is only scored, without a
        backward pass (without it, the backward runs so that Adam sees the zeros), unless an entropy bonus gives
        it a gradient of its own (kept if another chunk of the step has a signal)."""
        acc, cfg = self._acc, self.config
        if acc is None:
            raise RuntimeError("add() outside a step: call begin() first")
        kept, lost, unscorable = self._materialize(groups)
        acc.images_lost += lost
        acc.unscorable += unscorable
        acc.groups += kept
        rows: list[tuple[Turn, float, dict[str, Any], int]] = []  # turn, advantage, mismatch key, lag
        for group in kept:
            advs = compute_advantages(group.rewards, cfg.advantage, scale=cfg.scale_advantages)
            for sample, adv in zip(group.samples, advs, strict=True):
                for t, turn in enumerate(sample.turns):
                    rows.append((turn, adv, {"domain": sample.domain, "turn": t, "images": len(turn.images)},
                                 self.version - turn.policy_version))
        first = len(acc.rows)
        acc.rows += rows
        # Sharded, every rank runs the same passes (FSDP gathers in lockstep), so all take one backward decision
        step_signal = any(r[1] != 0.0 for r in rows)
        for indices in passes(len(rows), cfg.micro_batch, self.shards):
            chunk = [rows[i] for i in indices if i is not None]
            fillers = len(indices) - len(chunk)  # a rank short of turns runs the first again, counted 0
            seqs = [self.sequence_input(rows[i][0], f"sequence {first + i}") for i in indices if i is not None]
            seqs += [self.sequence_input(rows[0][0], f"sequence {first}")] * fillers
            signal = any(r[1] != 0.0 for r in chunk)
            backward = (not cfg.skip_no_signal or cfg.entropy_coef > 0  # the bonus has a gradient
                        or (step_signal if self.shards else signal))
            temperatures = [r[0].temperature for r in chunk] + [rows[0][0].temperature] * fillers
            with torch.set_grad_enabled(backward), self.precision.autocast(self.device):
                if cfg.entropy_coef > 0:
                    pairs = sequence_logprobs_and_entropy(self.scorer, seqs, temperature=temperatures)
                    lps, entropies = zip(*pairs, strict=True)
                    entropy = pad_right(list(entropies[:len(chunk)]))[0] if chunk else None
                else:
                    lps, entropy = sequence_logprobs(self.scorer, seqs, temperature=temperatures), None
            filler_loss = sum((0.0 * lp.sum() for lp in lps[len(chunk):]), torch.zeros(()))
            lps = lps[:len(chunk)]
            if not chunk:
                if backward:
                    filler_loss.backward()
                continue
            lp, mask = pad_right(list(lps))
            old, _ = pad_right([torch.tensor(r[0].logprobs, dtype=torch.float32, device=lp.device) for r in chunk])
            adv = torch.tensor([r[1] for r in chunk], dtype=torch.float32, device=lp.device)
            out = policy_loss(LossInputs(lp, old, adv, mask, entropy), cfg.correction, is_cap=cfg.is_cap,
                              clip_eps=cfg.clip_eps, normalizer=1.0,  # a token sum: divided in finish()
                              entropy_coef=cfg.entropy_coef)
            if backward:
                (out.loss + filler_loss.to(out.loss.device)).backward()
                acc.backward = True
            acc.signal = acc.signal or signal
            if "entropy_mean" in out.metrics:
                acc.entropy_sum += out.metrics["entropy_mean"] * float(mask.sum())
            acc.loss_sum += out.loss.item()
            acc.ratio_means.append(out.metrics["ratio_mean"] * float(mask.sum()))
            acc.ratio_max.append(out.metrics["ratio_max"])
            acc.changed.append(out.metrics["changed_fraction"] * float(mask.sum()))
            acc.capped += out.metrics["capped_fraction"] * float(mask.sum())
            for r, lp in zip(chunk, lps, strict=True):
                if r[3] == 0:  # same weights: the mismatch, apart from lag
                    acc.trainer_lp.append(lp.detach())
                    acc.sampler_lp.append(torch.tensor(r[0].logprobs, dtype=torch.float32))
                    acc.keys.append(r[2])
        return kept

    def finish(self, batch: Batch, lr: float | None = None) -> dict[str, float]:
        """End the open step: the optimizer step (none when nothing was added, or, with ``skip_no_signal``,
        when every advantage was 0) at learning rate ``lr`` (None: the one it has), the version bump and the
        step's metrics. ``batch`` holds the buffer's per-domain accounting and the trainer version; reward,
        success, lag and sample counts are those of the groups actually trained on (``add``'s)."""
        acc, cfg = self._acc, self.config
        if acc is None:
            raise RuntimeError("finish() outside a step: call begin() first")
        self._acc = None
        if lr is not None:
            for group in self.optimizer.param_groups:
                group["lr"] = lr
        metrics: dict[str, float] = self._batch_metrics(Batch(acc.groups, batch.trainer_version, batch.domains))
        metrics["optimizer/lr"] = float(self.optimizer.param_groups[0]["lr"])
        metrics["groups/images_lost"] = float(acc.images_lost)
        metrics["groups/unscorable"] = float(acc.unscorable)
        rows = acc.rows
        if not rows:  # nothing arrived (or all was left out): the weights stay, the version still moves on, as
            # the buffer counts this batch built; otherwise sync mode (max_lag 0) judged every later group stale
            self.model.eval()
            self.version += 1
            self._remember()
            metrics["skipped"] = 1.0
            return metrics
        total_tokens = sum(len(r[0].response_token_ids) for r in rows)
        params = [p for p in self.model.parameters() if p.grad is not None]
        for p in params:
            p.grad.div_(max(total_tokens, 1))
        for i, lp_then in self._lagged_logprobs(rows):  # lagged turns, scored with the weights that sampled them
            acc.trainer_lp.append(lp_then)
            acc.sampler_lp.append(torch.tensor(rows[i][0].logprobs, dtype=torch.float32))
            acc.keys.append(rows[i][2])
        grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm if cfg.max_grad_norm else float("inf"))
        if hasattr(grad_norm, "full_tensor"):  # a DTensor: the norm over every rank's shards
            grad_norm = grad_norm.full_tensor()
        # Every loss term is scaled by an advantage: with all 0 the gradient is 0, and Adam's momentum alone would
        # still move the weights.
        signal, backward = all_reduce([float(acc.signal), float(acc.backward)], self.shards, "max")
        skip = cfg.skip_no_signal and not signal
        if not skip and backward:
            self.optimizer.step()
        metrics["optimizer/skipped_no_signal"] = float(skip)
        self.version += 1
        self.model.eval()
        self._remember()
        loss_sum, ratios, changed, capped, entropy_sum = all_reduce(
            [acc.loss_sum, sum(acc.ratio_means), sum(acc.changed), acc.capped, acc.entropy_sum], self.shards)
        [ratio_max] = all_reduce([max(acc.ratio_max, default=-math.inf)], self.shards, "max")
        metrics.update({"loss": loss_sum / max(total_tokens, 1), "grad_norm": float(grad_norm),
                        "tokens": float(total_tokens), "sequences": float(len(rows)),
                        "is/ratio_mean": ratios / total_tokens, "is/ratio_max": ratio_max,
                        "is/changed_fraction": changed / total_tokens, "is/capped_fraction": capped / total_tokens})
        if cfg.entropy_coef > 0:
            metrics["entropy"] = entropy_sum / max(total_tokens, 1)
        trainer_lp = [lp.cpu() for lp in acc.trainer_lp]
        turns = gather(list(zip(trainer_lp, acc.sampler_lp, acc.keys, strict=True)), self.shards)
        metrics.update(mismatch_metrics([t[0] for t in turns], [t[1] for t in turns], [t[2] for t in turns]))
        metrics["mismatch/sequences"] = float(len(turns))
        return metrics

    def _materialize(self, groups: list[Group]) -> tuple[list[Group], int, int]:
        """The groups with every image fetched once, and how many were left out for a lost image or for a
        response holding a token the trainer scores at -inf (an image placeholder or vision bracket, which an
        engine that does not suppress them could sample: its loss and IS ratio would be NaN)."""
        kept, lost, unscorable = [], 0, 0
        for group in groups:
            if any(t in self.suppressed for sample in group.samples for turn in sample.turns
                   for t in turn.response_token_ids):
                unscorable += 1
                continue
            try:
                for sample in group.samples:
                    for turn in sample.turns:
                        turn.images = [self.resolve_image(img) for img in turn.images]
            except ImageLost:
                lost += 1
                continue
            kept.append(group)
        return kept, lost, unscorable

    def _batch_metrics(self, batch: Batch) -> dict[str, float]:
        out: dict[str, float] = {}
        by_domain: dict[str, list[float]] = defaultdict(list)
        success: dict[str, list[float]] = defaultdict(list)
        for s in batch.samples:
            by_domain[s.domain].append(s.reward)
            success[s.domain].append(1.0 if s.status == "success" else 0.0)
        rewards = [r for v in by_domain.values() for r in v]
        out["reward/mean"] = float(np.mean(rewards)) if rewards else float("nan")
        for d, v in by_domain.items():
            out[f"reward/{d}"] = float(np.mean(v))
            out[f"success/{d}"] = float(np.mean(success[d]))
        for d, st in batch.domains.items():
            out[f"batch/{d}/taken"] = float(st.taken)
            out[f"batch/{d}/dropped_stale"] = float(st.dropped_stale)
            out[f"batch/{d}/shortfall"] = float(st.shortfall)
        hist = batch.lag_histogram()
        n = sum(hist.values())
        out["lag/mean"] = sum(k * v for k, v in hist.items()) / n if n else 0.0
        out["lag/max"] = float(max(hist)) if hist else 0.0
        for lag, count in hist.items():
            out[f"lag/hist/{lag}"] = float(count)
        out["samples"] = float(n)
        after = [t for t in (s.seconds_after_first_answer for s in batch.samples) if t is not None]
        if after:  # the slowest sample bounds how soon after its weights a batch can be full
            out["time/after_answer_max"] = max(after)
            out["time/after_answer_mean"] = float(np.mean(after))
        return out

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The weights the samplers get: the model's, in the precision's compute dtype (sharded: gathered on
        rank 0, ``{}`` on the others; every rank must call it)."""
        return self.precision.published(full_state_dict(self.model) if self.shards else self.model.state_dict())
