"""Peak memory of one learner step, before and after (issue 36, item 7), against the memory model.

Builds a random mid-sized Qwen2-VL locally (no download: the tiny model's builder at hidden 512, 8 layers, a
4-block vision tower, its embeddings resized to a 65,536-token vocabulary; about 90M parameters, 360 MB of
float32 weights) and trains one step of two screenshot turns (a 448x448 image, 256 image tokens, and 128
response tokens each; ``train.micro_batch`` 2) in a fresh process per path:

- ``before``: the old path: full-vocabulary logits over every position (prompt included), no activation
  checkpointing;
- ``after``: response-only logits in chunks (:class:`mintgym.inference.logprobs.ResponseScorer`) and
  activation checkpointing.

An optimizer step on zero gradients first allocates Adam's state (the weights do not move). The step is measured
in two parts: the forward/backward passes and the optimizer step, each peak being the process's peak resident
memory (``VmHWM``, reset through ``/proc/self/clear_refs`` before each part) less its resident memory before
the model was loaded. Beside each it prints the memory model's prediction (:func:`mintgym.trainer.memory.
estimate`), then the model's predictions for Qwen2.5-VL-3B and -7B on one 80 GB GPU (docs/train.md, "Memory
and sharding").

    python benchmarks/trainer_memory.py [--model-dir /tmp/mintgym-mid-vlm]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from mintgym.trainer.memory import QWEN25_VL, Architecture, Step, count_params, estimate, qwen25_vl_config

VOCAB = 65536
SIDE, RESPONSE, SEQUENCES = 448, 128, 2
GB = 10**9


def _rss(field: str) -> int:
    """A ``/proc/self/status`` memory field in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}: this benchmark needs Linux")


def build(folder: Path) -> None:
    """The mid-sized random Qwen2-VL under ``folder`` (kept for the next run)."""
    from mintgym.models.loading import load_model
    from mintgym.models.tiny import build_tiny_vlm

    if (folder / "config.json").exists():
        return
    build_tiny_vlm(folder, hidden_size=512, num_layers=8, num_heads=8, vision_depth=4, vision_embed_dim=256,
                   vision_num_heads=4, max_pixels=SIDE * SIDE)
    model = load_model(folder)
    model.resize_token_embeddings(VOCAB)
    model.save_pretrained(folder)


def _batch(processor):
    """One group of ``SEQUENCES`` screenshot turns with different rewards (both train)."""
    from mintgym.buffer.types import Batch, Group, Sample, Turn

    rng = np.random.default_rng(0)
    samples = []
    for i in range(SEQUENCES):
        image = rng.integers(0, 256, (SIDE, SIDE, 3), dtype=np.uint8)
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Click the button."}]}]
        text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        prompt = processor(text=[text], images=[image], return_tensors="pt")["input_ids"][0].tolist()
        response = rng.integers(1000, VOCAB, RESPONSE).tolist()  # above the special tokens
        samples.append(Sample("null/echo", "null", 0, float(i),
                              [Turn(prompt, response, [-5.0] * RESPONSE, 0, [image])]))
    return Batch([Group("g", "null/echo", "null", 0, samples)], trainer_version=0)


def _full_logits_scorer(model):
    """The path before: the model's own forward (logits at every position), then the response rows."""
    from mintgym.inference.logprobs import ResponseScorer, _mm_token_types, mask_logits, suppressed_token_ids

    class FullLogits(ResponseScorer):
        def forward(self, ids, mask, rows, cols, temps, entropy, pixel_values=None, image_grid_thw=None):
            out = self.model(input_ids=ids, attention_mask=mask, use_cache=False, pixel_values=pixel_values,
                             image_grid_thw=image_grid_thw, mm_token_type_ids=_mm_token_types(self.model, ids) * mask)
            suppressed = torch.tensor(suppressed_token_ids(self.model), dtype=torch.long, device=ids.device)
            logp = torch.log_softmax(mask_logits(out.logits[rows, cols], suppressed) / temps.unsqueeze(-1), -1)
            return logp.gather(-1, ids[rows, cols + 1].unsqueeze(-1)).squeeze(-1), None

    return FullLogits(model)


def measure(folder: Path, path: str) -> dict[str, float]:
    """One process's measured step (``path`` ``before`` or ``after``): peak bytes, seconds, and the model's
    prediction for it."""
    from mintgym.config import TrainConfig
    from mintgym.models.loading import load_model, load_processor
    from mintgym.trainer.learner import Learner

    base = _rss("VmRSS")
    after = path == "after"
    learner = Learner(load_model(folder), load_processor(folder),
                      TrainConfig(lr=1e-5, micro_batch=SEQUENCES, activation_checkpointing=after))
    if not after:
        learner.scorer = _full_logits_scorer(learner.model)
    batch = _batch(learner.processor)
    for param in learner.model.parameters():  # Adam's state, allocated by a step that moves nothing
        param.grad = torch.zeros_like(param)
    learner.optimizer.step()
    peaks = {}
    step = learner.optimizer.step

    def measured_step(*a, **kw):
        peaks["backward"] = _rss("VmHWM") - base
        Path("/proc/self/clear_refs").write_text("5")
        return step(*a, **kw)

    learner.optimizer.step = measured_step
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    start = time.perf_counter()
    learner.step(batch)
    seconds = time.perf_counter() - start
    peaks["optimizer"] = _rss("VmHWM") - base
    turn = batch.groups[0].samples[0].turns[0]
    config = learner.model.config
    step = Step(prompt=len(turn.prompt_token_ids), response=RESPONSE, sequences=SEQUENCES,
                image_tokens=sum(1 for t in turn.prompt_token_ids if t == config.image_token_id),
                compute_bytes=4, master_bytes=4, checkpointing=after, chunked=after, foreach=False)
    params = [p.numel() for p in learner.model.parameters()]
    arch = Architecture.of(config, sum(params)).model_copy(update={"largest": max(params)})
    predicted = estimate(arch, step)
    return {"seconds": seconds, "params": sum(params), "terms": predicted.model_dump(),
            "measured": peaks, "predicted": {"backward": predicted.backward_peak,
                                             "optimizer": predicted.optimizer_peak}}


def _prediction_table() -> None:
    """Qwen2.5-VL-3B and -7B: one screenshot turn (1196 image tokens of a 1288x728 screen, 1700 prompt and 100
    response tokens), bfloat16 compute with float32 masters and Adam."""
    screen = {"prompt": 1700, "response": 100, "image_tokens": 1196}
    print("\nPrediction, one 80 GB GPU unless said (bf16 compute, fp32 masters + Adam; GB = 1e9 bytes):")
    print(f"{'model':15s} {'setup':44s} {'weights':>7s} {'grads':>6s} {'adam':>6s} {'casts':>6s} {'acts':>6s} "
          f"{'logits':>6s} {'gsums':>6s} {'optim':>6s} {'peak':>7s}  fits 80 GB")
    setups = {"before (full logits, no checkpointing)": {"checkpointing": False, "chunked": False},
              "after, micro_batch 1": {},
              "after, micro_batch 4": {"sequences": 4},
              "after, micro_batch 16 (the default)": {"sequences": 16},
              "after, pure bf16 (precision: pure)": {"master_bytes": 2},
              "after, FSDP2 over 2 GPUs (per GPU)": {"gpus": 2},
              "after, FSDP2 over 4 GPUs (per GPU)": {"gpus": 4},
              "after, FSDP2 over 8 GPUs (per GPU)": {"gpus": 8}}
    for name in QWEN25_VL:
        arch = Architecture.of(qwen25_vl_config(name), count_params(qwen25_vl_config(name)))
        for label, options in setups.items():
            e = estimate(arch, Step(**screen, **options))
            terms = [e.weights, e.grads, e.adam, e.casts, e.activations, e.logits, e.grad_sums, e.optimizer]
            print(f"{name:15s} {label:44s} " + " ".join(f"{t / GB:6.1f}" for t in terms)
                  + f" {e.total / GB:7.1f}  {'yes' if e.total < 80 * GB else 'no'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=Path("/tmp/mintgym-mid-vlm"))
    parser.add_argument("--measure", choices=("before", "after"), help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.model_dir, args.measure)))
        return
    build(args.model_dir)
    # Large blocks straight from mmap, so a freed tensor leaves the resident set at once
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    rows = {}
    for path in ("before", "after"):
        out = subprocess.run([sys.executable, __file__, "--model-dir", str(args.model_dir), "--measure", path],
                             env=env, capture_output=True, text=True, check=True)
        rows[path] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"Mid-sized random Qwen2-VL: {rows['after']['params'] / 1e6:.0f}M parameters "
          f"({rows['after']['params'] * 4 / 1e6:.0f} MB float32), vocabulary {VOCAB}, {SEQUENCES} turns of "
          f"{SIDE}x{SIDE} image + {RESPONSE} response tokens, one step on CPU, float32")
    fixed = sum(rows["after"]["terms"][k] for k in ("weights", "grads", "adam"))
    print(f"weights + grads + Adam state (both paths): {fixed / 1e6:.0f} MB; peaks below are MB above the "
          "process's memory before the model was loaded")
    print(f"{'path':8s} {'part':10s} {'measured':>9s} {'predicted':>10s} {'error':>7s} {'above fixed':>12s} "
          f"{'step s':>7s}")
    for path, r in rows.items():
        for part in ("backward", "optimizer"):
            got, want = r["measured"][part], r["predicted"][part]
            print(f"{path:8s} {part:10s} {got / 1e6:9.0f} {want / 1e6:10.0f} {(want - got) / got:+7.0%} "
                  f"{(got - fixed) / 1e6:12.0f} {r['seconds'] if part == 'backward' else float('nan'):7.1f}")
    before, after = (max(rows[p]["measured"].values()) for p in ("before", "after"))
    b_above, a_above = (rows[p]["measured"]["backward"] - fixed for p in ("before", "after"))
    print(f"step peak: {before / 1e6:.0f} MB before, {after / 1e6:.0f} MB after ({after / before:.2f}); "
          f"forward/backward above the fixed state: {b_above / 1e6:.0f} MB before, {a_above / 1e6:.0f} MB after "
          f"({a_above / b_above:.2f})")
    _prediction_table()


if __name__ == "__main__":
    main()
