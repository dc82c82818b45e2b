"""One learner step on a fixed batch of the tiny model, written to a file: the program the sharding test launches
with ``torchrun --nproc-per-node 2`` (FSDP2 on gloo) and with plain ``python`` (one process, no sharding).

    python tests/trainer/sharded_worker.py MODEL OUT.pt [--micro-batch N] [--checkpointing] [--resume FOLDER] [--sft]

Rank 0 (or the one process) writes ``{"metrics", "grads", "weights"}``: the step's metrics, every parameter's
full gradient as the optimizer steps, and the full weights after the step. With ``--resume FOLDER`` it trains
three steps straight, and again one step, a checkpoint in FOLDER, a fresh learner resumed from it, two steps;
it writes ``{"straight", "resumed"}``: each one's losses and final weights. With ``--sft``: two supervised
warm-start steps (:func:`~mintgym.trainer.sft.supervised_steps`, batches of 3 of the five turns, gradient clipped)
instead, ``{"losses", "weights"}``.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import torch

from mintgym.buffer.types import Batch, Group, Sample, Turn
from mintgym.config import TrainConfig
from mintgym.models.loading import load_model, load_processor
from mintgym.trainer.learner import Learner


def fixed_batch(processor, *, sizes: tuple[int, ...] = (3, 2), seed: int = 0, side: int = 56) -> Batch:
    """Groups of ``sizes`` one-turn episodes: an image prompt, a random response of 3 to 8 tokens with sampler
    logprobs near -3, and rewards that differ within each group (every group has a signal). Five turns by
    default: on two ranks one is short of a turn, so its last pass runs a filler."""
    rng = np.random.default_rng(seed)
    vocab = len(processor.tokenizer) - 20  # below the special tokens
    out = []
    for g, size in enumerate(sizes):
        samples = []
        for i in range(size):
            image = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
            messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": f"Task {g}.{i}"}]}]
            text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            prompt = processor(text=[text], images=[image], return_tensors="pt")["input_ids"][0].tolist()
            response = rng.integers(0, vocab, int(rng.integers(3, 9))).tolist()
            logprobs = (-3.0 + rng.normal(0, 0.5, len(response))).tolist()
            samples.append(Sample(f"null/t{g}", "null", g, float(i % 2) + 0.5 * i, [Turn(prompt, response, logprobs, 0,
                                                                                               [image])]))
        out.append(Group(f"g{g}", f"null/t{g}", "null", g, samples))
    return Batch(out, trainer_version=0)


def resumed(model: str, config: TrainConfig, shards, folder: str) -> dict:
    """Three steps straight, and one step, a checkpoint, a fresh learner (every generator seeded afresh) resumed
    from it, two steps: each one's losses and final weights."""
    from pathlib import Path

    from mintgym.trainer.ckpt import load_latest, load_sharded, read_latest, save_checkpoint, seed_all

    processor = load_processor(model)
    batches = [fixed_batch(processor, seed=s) for s in range(3)]

    def fresh() -> Learner:
        seed_all(0)
        return Learner(load_model(model), processor, config, shards=shards)

    straight = fresh()
    losses = [straight.step(b)["loss"] for b in batches]
    out = {"straight": {"losses": losses, "weights": straight.state_dict()}}
    first = fresh()
    losses = [first.step(batches[0])["loss"]]
    save_checkpoint(folder, 1, first.model, first.optimizer, {"version": first.version, "buffer": {}}, shards=shards)
    second = fresh()
    if shards is None:
        load_latest(folder, second.model, second.optimizer, print)
    else:
        saved = read_latest(folder, second.model) if shards.rank == 0 else None
        load_sharded(Path(folder) / "checkpoints" / "step-000001", saved, second.model, second.optimizer, shards)
    second.restored(1)
    losses += [second.step(b)["loss"] for b in batches[1:]]
    out["resumed"] = {"losses": losses, "weights": second.state_dict()}
    return out


def supervised(model: str, config: TrainConfig, shards) -> dict:
    """Two supervised steps on the fixed batch's five turns, three a batch (sharded: through the FSDP root)."""
    from mintgym.trainer.sft import supervised_steps

    learner = Learner(load_model(model), load_processor(model), config, shards=shards)
    sequences = [learner.sequence_input(turn) for group in fixed_batch(learner.processor).groups
                 for sample in group.samples for turn in sample.turns]
    losses = supervised_steps(learner.scorer if shards else learner.model, sequences, steps=2, lr=1e-3, batch_size=3,
                              micro_batch=config.micro_batch, shards=shards)
    return {"losses": losses, "weights": learner.state_dict()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--micro-batch", type=int, default=2)
    parser.add_argument("--checkpointing", action="store_true")
    parser.add_argument("--resume", help="checkpoint folder: the resume test")
    parser.add_argument("--sft", action="store_true", help="supervised steps instead of an RL step")
    args = parser.parse_args()
    torch.set_num_threads(1)
    shards = None
    if "RANK" in os.environ:  # launched by torchrun
        from mintgym.trainer.sharding import Shards

        shards = Shards.from_env(backend="gloo")
    config = TrainConfig(lr=1e-3, micro_batch=args.micro_batch, max_grad_norm=None,
                         activation_checkpointing=args.checkpointing)
    if args.resume or args.sft:
        result = resumed(args.model, config, shards, args.resume) if args.resume else supervised(args.model, config,
                                                                                                   shards)
        if shards is None or shards.rank == 0:
            torch.save(result, args.out)
        if shards is not None:
            torch.distributed.destroy_process_group()
        return
    learner = Learner(load_model(args.model), load_processor(args.model), config, shards=shards)
    grads: dict[str, torch.Tensor] = {}
    step = learner.optimizer.step

    def recording_step(*a, **kw):
        for name, p in learner.model.named_parameters():  # full_tensor() gathers: every rank, same order
            grad = p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad
            grads[name] = grad.detach().clone()
        return step(*a, **kw)

    learner.optimizer.step = recording_step
    metrics = learner.step(fixed_batch(learner.processor))
    weights = learner.state_dict()
    if shards is None or shards.rank == 0:
        torch.save({"metrics": metrics, "grads": grads, "weights": weights, "world": shards.world if shards else 1},
                   args.out)
    if shards is not None:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
