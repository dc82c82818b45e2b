"""Supervised warm start: cross-entropy on a behaviour-cloning dataset, run before RL.

The dataset is :mod:`mintgym.trajectory.imitation`'s (``mintgym export RUN --agent KIND``): each row a
prompt in the student agent's own format (``messages`` JSON whose image parts index ``images``) and the
response it would have written (``response_token_ids``, or ``response`` text, tokenized here and closed with
the end-of-turn token). Prompts are tokenized by the engine's own code
(:meth:`~mintgym.inference.hf.HFEngine.sequence_inputs`) and scored by the trainer's own forward pass
(:func:`~mintgym.inference.logprobs.sequence_logprobs`), so the warm-started weights are trained on exactly
the token sequences the sampler will later see. Only response tokens are in the loss.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from mintgym.inference.logprobs import SequenceInput, sequence_logprobs
from mintgym.trainer.precision import Precision
from mintgym.trainer.sharding import Shards, all_reduce, passes


def dataset_sequences(dataset: Any, model: Any, processor: Any) -> list[SequenceInput]:
    """Every row of an imitation dataset as the model's input (prompt + response token ids, images)."""
    from mintgym.inference.hf import HFEngine

    engine = HFEngine(model=model, processor=processor)
    tokenizer = processor.tokenizer
    missing = {"messages", "images", "response", "response_token_ids"} - set(dataset.column_names)
    if missing:
        raise ValueError(f"not an imitation dataset (made by `mintgym export --agent`): no column(s) "
                         f"{sorted(missing)}")
    sequences = []
    for i, row in enumerate(dataset):
        images = [np.asarray(image.convert("RGB")) for image in row["images"]]
        messages = json.loads(row["messages"])
        for message in messages:
            for part in message["content"]:
                if part.get("type") == "image":
                    part["image"] = images[part["image"]]
        response = list(row["response_token_ids"])
        if not response:
            response = tokenizer.encode(row["response"], add_special_tokens=False) + [engine.eos_token_ids[0]]
        if not row["response"] and not row["response_token_ids"]:
            raise ValueError(f"dataset row {i}: empty response, nothing to learn")
        sequences.append(engine.sequence_inputs(messages, response))
    return sequences


def supervised_steps(model: Any, sequences: list[SequenceInput], *, steps: int, lr: float, batch_size: int,
                     seed: int = 0, max_grad_norm: float = 1.0, micro_batch: int | None = None,
                     precision: Precision | None = None, shards: Shards | None = None,
                     log: Callable[[int, float], None] | None = None) -> list[float]:
    """``steps`` Adam steps of mean response-token cross-entropy over shuffled epochs of ``sequences``;
    returns each step's loss. Each step's batch runs as forward/backward passes of ``micro_batch`` sequences
    (None: the whole batch at once), its gradient the same either way; with a mixed ``precision`` (``model`` holds
    the float32 masters) they run under its autocast. With ``shards`` (``model`` is a sharded learner's FSDP root)
    every rank calls it with the same sequences and runs its share of each batch."""
    if not sequences:
        raise ValueError("no sequences to train on")
    rng = random.Random(seed)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    order: list[int] = []
    losses = []
    model.train()
    for step in range(steps):
        if len(order) < batch_size:
            epoch = list(range(len(sequences)))
            rng.shuffle(epoch)
            order += epoch
        batch = [sequences[i] for i in order[:batch_size]]
        del order[:batch_size]
        losses.append(batch_gradient(model, batch, micro_batch=micro_batch, precision=precision, shards=shards))
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        if log is not None:
            log(step + 1, losses[-1])
    model.eval()
    return losses


def batch_gradient(model: Any, batch: list[SequenceInput], *, micro_batch: int | None = None,
                   precision: Precision | None = None, shards: Shards | None = None) -> float:
    """Set ``model``'s gradients to those of ``batch``'s mean response-token cross-entropy, computed in chunks of
    ``micro_batch`` sequences (each one padded forward pass; None: one chunk); returns the loss. Sharded, each rank
    runs its chunks (:func:`~mintgym.trainer.sharding.passes`: a rank short of sequences runs a filler counted 0)
    and the gradients and the loss are summed over the ranks."""
    tokens = sum(seq.response_length for seq in batch)
    size, device = micro_batch or len(batch), next(model.parameters()).device
    total = 0.0
    model.zero_grad(set_to_none=True)
    for indices in passes(len(batch), size, shards):
        with precision.autocast(device) if precision else contextlib.nullcontext():
            logprobs = sequence_logprobs(model, [batch[0 if i is None else i] for i in indices],
                                         layout="right_padded")
        mine = [lp for i, lp in zip(indices, logprobs, strict=True) if i is not None]
        loss = -torch.cat(mine).sum() / tokens if mine else 0.0 * logprobs[0].sum()
        loss.backward()
        total += float(loss.detach())
    return all_reduce([total], shards)[0]
