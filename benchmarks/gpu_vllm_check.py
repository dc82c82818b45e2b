"""GPU check of the vLLM path: sample with vLLM, train on its samples, load the trainer's weights in place,
measure the sampler/trainer mismatch, then run ``mintgym train`` with a vLLM engine.

Run on a machine with a CUDA GPU and the ``vllm`` extra; meant to take well under 10 minutes with the default
small model (two vLLM engine starts and seconds of work; not timed on a GPU yet), a Qwen2-VL of head size 64,
which every vLLM attention backend supports (``--model`` for another). Checks:

1. **sampling**: a batch of 8 image prompts returns text, prompt and response token ids and one finite
   logprob per response token; the same seeds give the same tokens; the prompt ids are the hf engine's.
2. **a trainer step on vLLM's samples**: :class:`~mintgym.trainer.learner.Learner` trains one step on them
   (reward: the share of even token ids in a response, so the group's advantages are not all 0) and reports
   the run's mismatch metric (``mismatch/kl_mean``, ``mismatch/max_abs``: vLLM's logprobs against the
   trainer's float32 recompute at the same weights).
3. **weight update from the trainer**: the learner's new weights go through the ``vllm`` weight transport
   (:class:`~mintgym.weights.safetensors_files.SafetensorsBroadcast`) and the engine loads the file in
   place, as a rollout worker does: its version and fingerprint change, and so do its greedy outputs.
4. **mismatch after the update**: vLLM samples again at the new version; the learner's second step measures
   the mismatch at those weights, and the same tokens are scored with the weights from before the step: the
   engine holds the trainer's weights only if the first is far below the second. Then the first weights,
   sent as a third version, give back the first greedy outputs.
   Throughout, no response holds a vision placeholder or bracket token (the ids the trainer masks), and
   with vLLM 8 concurrent ``agenerate`` calls of one request each share fewer ``LLM.generate`` calls.
4b. **vision weights alone** (vLLM's encoder cache): the first weights with only the vision tower
   perturbed, as a fourth version: greedy outputs on the screenshots the engine already encoded change
   (vLLM caches encoder outputs by image hash; without a reset after the update it would reuse the old
   features and answer as before), while text-only prompts answer exactly as before.
5. **the RL loop** (``--rl-steps``, 0 to skip): ``mintgym train`` in a subprocess with ``engine: vllm`` and
   ``weights.transport: vllm``, sync mode on ``pytool/count-shapes-0``; the engine runs in a Ray rollout
   worker with one GPU (2 groups of 16 a step, one token each). Checks that the run finished, that a step
   before the last changed the weights (the later steps sample with weights the worker loaded from the
   trainer) and that every step measured the mismatch.

Prints the figures and a JSON summary; exits 1 if a check fails. ``--engine hf`` runs the same steps with
the transformers engine on CPU in vLLM's place (the plumbing; the tests run it so).

    python benchmarks/gpu_vllm_check.py [--model PATH] [--gpu-memory-utilization 0.3] [--rl-steps 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def requests(n: int, temperature: float, seed0: int = 0, max_new_tokens: int = 24):
    from mintgym.inference import GenerationRequest, SamplingParams

    rng = np.random.default_rng(seed0)
    out = []
    for i in range(n):
        shot = rng.integers(0, 256, (240, 320, 3), dtype=np.uint8)
        out.append(GenerationRequest(
            [{"role": "user", "content": [{"type": "image", "image": shot},
                                          {"type": "text", "text": f"Task {i}: click the OK button."}]}],
            SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature, seed=seed0 + i)))
    return out


def images_of(request) -> list[np.ndarray]:
    return [part["image"] for m in request.messages for part in m["content"] if part.get("type") == "image"]


def even_share(token_ids: list[int]) -> float:
    """The check's reward: the share of even token ids (varies between samples, so advantages are not 0)."""
    return sum(1 for t in token_ids if t % 2 == 0) / max(1, len(token_ids))


def batch_of(reqs, gens, version: int):
    """One group of the generations as the trainer gets them from a rollout worker."""
    from mintgym.buffer.types import Batch, Group, Sample, Turn

    samples = [Sample("gpu-check", "check", 0, even_share(g.response_token_ids),
                      [Turn(g.prompt_token_ids, g.response_token_ids, g.response_logprobs, g.policy_version,
                            images_of(r), r.sampling.temperature)])
               for r, g in zip(reqs, gens, strict=True)]
    return Batch([Group("gpu-check-0", "gpu-check", "check", 0, samples)], trainer_version=version)


def make_engine(name: str, path: str, args):
    if name == "vllm":
        from mintgym.inference.vllm import VLLMEngine

        return VLLMEngine(path, gpu_memory_utilization=args.gpu_memory_utilization,
                          max_model_len=args.max_model_len, dtype=args.dtype, enforce_eager=True)
    from mintgym.inference.hf import HFEngine

    return HFEngine(path, aligned_logprobs=True, max_batch_size=8)


def fingerprint(engine) -> float:
    if hasattr(engine, "weight_sum"):
        return engine.weight_sum()
    return float(sum(float(p.detach().double().sum()) for p in engine.model.parameters()))


def load_published(engine, transport, after: int) -> int | None:
    """Load the transport's newest version into ``engine`` as a rollout worker does: vLLM takes the file's
    path and loads it on its GPU workers; other engines take the arrays."""
    from mintgym.rollout.ray_worker import load_weights

    got = transport.receive_file(after) if hasattr(engine, "weight_sum") else transport.receive(after)
    if got is not None:
        load_weights(engine, *got)
    return None if got is None else got[0]


def engine_checks(args, path: str, tmp: Path, checks: dict[str, bool], figures: dict[str, float]) -> None:
    """Steps 1-4 in this process."""
    import torch

    from mintgym.config import TrainConfig
    from mintgym.inference import GenerationRequest, SamplingParams
    from mintgym.inference.logprobs import sequence_logprobs, suppressed_token_ids
    from mintgym.models.loading import load_model, load_processor
    from mintgym.trainer.learner import Learner
    from mintgym.trainer.mismatch import mismatch_metrics
    from mintgym.weights.safetensors_files import SafetensorsBroadcast

    t0 = time.perf_counter()
    engine = make_engine(args.engine, path, args)
    figures["engine_start_s"] = time.perf_counter() - t0

    # 1. sampling with token ids and logprobs, deterministic by seed
    batch = requests(8, temperature=1.0)
    engine.generate(batch[:1])  # warm-up
    t0 = time.perf_counter()
    gens = engine.generate(batch)
    wall = time.perf_counter() - t0
    figures["tokens_per_s_batch8"] = sum(len(g.response_token_ids) for g in gens) / wall
    checks["logprobs_one_per_token"] = all(
        g.response_logprobs is not None and len(g.response_logprobs) == len(g.response_token_ids) > 0 for g in gens)
    checks["logprobs_finite"] = all(math.isfinite(lp) and lp <= 0 for g in gens for lp in g.response_logprobs or [])
    checks["prompt_ids_present"] = all(len(g.prompt_token_ids) > 0 for g in gens)
    again = engine.generate(batch)
    checks["same_seed_same_tokens"] = [g.response_token_ids for g in gens] == [g.response_token_ids for g in again]
    checks["version_0"] = all(g.policy_version == 0 for g in gens)
    from mintgym.inference.hf import HFEngine

    hf = HFEngine(model=load_model(path), processor=load_processor(path))
    seqs = [hf.sequence_inputs(r.messages, g.response_token_ids) for r, g in zip(batch, gens, strict=True)]
    checks["same_prompt_ids_as_hf"] = all(s.token_ids[:s.prompt_length] == g.prompt_token_ids
                                          for s, g in zip(seqs, gens, strict=True))

    # 2. a trainer step on vLLM's samples, with the run's mismatch metric
    learner = Learner(load_model(path), hf.processor,
                      TrainConfig(lr=args.lr, micro_batch=8, mismatch_snapshots=0, entropy_coef=0.0))
    t0 = time.perf_counter()
    step1 = learner.step(batch_of(batch, gens, learner.version))
    figures["train_step_s"] = time.perf_counter() - t0
    figures["step1_mismatch_kl_mean"] = step1["mismatch/kl_mean"]
    figures["step1_mismatch_max_abs"] = step1["mismatch/max_abs"]
    checks["step1_mismatch_measured"] = (step1["mismatch/tokens"] == sum(len(g.response_token_ids) for g in gens)
                                         and math.isfinite(step1["mismatch/kl_mean"]))
    checks["learner_version_1"] = learner.version == 1

    # 3. the trainer's weights through the vllm transport, loaded in place
    transport = SafetensorsBroadcast(tmp / "weights")
    greedy = requests(4, temperature=0.0, seed0=100)
    before = [g.response_token_ids for g in engine.generate(greedy)]
    print0 = fingerprint(engine)
    t0 = time.perf_counter()
    transport.send(learner.version, learner.state_dict())
    figures["publish_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    loaded = load_published(engine, transport, after=0)
    figures["update_weights_s"] = time.perf_counter() - t0
    after = engine.generate(greedy)
    checks["loaded_the_published_version"] = loaded == 1 and engine.policy_version == 1
    checks["generations_carry_version_1"] = all(g.policy_version == 1 for g in after)
    checks["fingerprint_changed"] = fingerprint(engine) != print0
    checks["greedy_outputs_changed"] = [g.response_token_ids for g in after] != before

    # 4. mismatch at the new weights (learner step 2) against the same tokens under the weights before
    batch2 = requests(8, temperature=1.0, seed0=50)
    gens2 = engine.generate(batch2)
    seqs = [hf.sequence_inputs(r.messages, g.response_token_ids) for r, g in zip(batch2, gens2, strict=True)]
    with torch.no_grad():  # hf's model keeps the first weights: it only tokenizes and scores here
        old_lp = sequence_logprobs(hf.model, seqs, temperature=[r.sampling.temperature for r in batch2])
    against_old = mismatch_metrics(old_lp, [torch.tensor(g.response_logprobs) for g in gens2],
                                   [{} for _ in gens2])
    step2 = learner.step(batch_of(batch2, gens2, learner.version))
    figures["step2_mismatch_kl_mean"] = step2["mismatch/kl_mean"]
    figures["step2_mismatch_max_abs"] = step2["mismatch/max_abs"]
    figures["old_weights_kl_mean"] = against_old["mismatch/kl_mean"]
    figures["old_weights_max_abs"] = against_old["mismatch/max_abs"]
    checks["step2_mismatch_measured"] = step2["mismatch/tokens"] > 0 and math.isfinite(step2["mismatch/kl_mean"])
    checks["engine_holds_the_trainers_weights"] = (
        against_old["mismatch/kl_mean"] > 1e-6 and against_old["mismatch/kl_mean"] > 4 * step2["mismatch/kl_mean"])

    # the first weights again, as version 3: the first greedy outputs come back
    transport.send(learner.version + 1, hf.model.state_dict())
    load_published(engine, transport, after=engine.policy_version)
    restored = [g.response_token_ids for g in engine.generate(greedy)]
    checks["first_weights_give_the_first_outputs"] = restored == before and engine.policy_version == 3
    checks["first_weights_give_the_first_fingerprint"] = math.isclose(fingerprint(engine), print0, rel_tol=1e-6)

    # 4b. vision weights alone, on screenshots the engine encoded at version 3: their answers must change
    text_only = [GenerationRequest([{"role": "user", "content": f"Task {i}: say OK."}],
                                   SamplingParams(max_new_tokens=16, temperature=0.0)) for i in range(2)]
    text_before = [g.response_token_ids for g in engine.generate(text_only)]
    transport.send(engine.policy_version + 1, vision_perturbed(hf.model.state_dict()))
    load_published(engine, transport, after=engine.policy_version)
    seen_image = [g.response_token_ids for g in engine.generate(greedy)]
    checks["vision_update_reaches_a_seen_image"] = seen_image != restored and engine.policy_version == 4
    checks["vision_update_leaves_text_only_answers"] = [g.response_token_ids
                                                        for g in engine.generate(text_only)] == text_before
    if hasattr(engine, "encoder_cache_resets"):
        figures["encoder_cache_resets"] = engine.encoder_cache_resets

    suppressed = set(suppressed_token_ids(hf.model))
    sampled = [g for gs in (gens, again, after, gens2) for g in gs]
    checks["no_vision_placeholder_sampled"] = not any(suppressed & set(g.response_token_ids) for g in sampled)
    if hasattr(engine, "llm"):  # vLLM: concurrent one-request calls go out together
        figures["generate_calls_for_8_concurrent"] = concurrent_generate_calls(engine, batch)
        checks["concurrent_calls_batched"] = figures["generate_calls_for_8_concurrent"] < len(batch)
    engine.close()


def vision_perturbed(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with noise of 3x each vision tensor's spread added to the vision tower only."""
    import torch

    generator = torch.Generator().manual_seed(1)
    out = {}
    for name, value in state.items():
        if "visual" in name.split(".")[:2] and value.is_floating_point():
            noise = torch.randn(value.shape, generator=generator)
            value = value + 3.0 * max(float(value.float().std()) if value.numel() > 1 else 0.0, 0.02) * noise
        out[name] = value
    return out


def concurrent_generate_calls(engine, batch) -> int:
    """How many ``LLM.generate`` calls ``len(batch)`` concurrent ``agenerate`` calls of one request made."""
    calls = []
    generate = engine.llm.generate

    def counted(prompts, *args, **kwargs):
        calls.append(len(prompts))
        return generate(prompts, *args, **kwargs)

    async def together():
        return await asyncio.gather(*(engine.agenerate([r]) for r in batch))

    engine.llm.generate = counted
    try:
        asyncio.run(together())
    finally:
        del engine.llm.generate
    return len(calls)


def rl_config(engine: str, model_path: str, steps: int, args) -> dict[str, Any]:
    """``mintgym train``'s config for step 5: the answer agent (one token per episode) on pytool."""
    if engine == "vllm":
        engine_cfg = {"name": "vllm", "options": {"gpu_memory_utilization": args.gpu_memory_utilization,
                                                   "max_model_len": args.max_model_len, "dtype": args.dtype,
                                                   "enforce_eager": True}}
        weights, gpus = {"transport": "vllm"}, 1.0
    else:
        engine_cfg = {"name": "hf", "options": {"aligned_logprobs": True, "max_batch_size": 8}}
        weights, gpus = {"transport": "filesystem"}, 0.0
    return {
        "model": {"path": model_path, "build_tiny": False},
        "tasks": [{"id": "pytool/count-shapes-0", "seeds": [0, 3, 7, 9]}],
        "engine": engine_cfg,
        "weights": weights,
        "agent": {"kind": "answer", "options": {"pick": "modulo", "choices": {"pytool": [str(d) for d in range(10)]}}},
        "rollout": {"workers": 1, "groups_in_flight": 2, "group_size": 16, "temperature": 1.0, "max_new_tokens": 1,
                    "worker_num_gpus": gpus},
        "train": {"mode": "sync", "steps": steps, "groups_per_step": 2, "lr": args.lr, "mismatch_snapshots": 0,
                  "checkpoint_every": 0, "sync_timeout": 300, "batch_timeout": 300},
        "eval": {"groups": 0},
        "log": {"sample_episodes_every": 0},
    }


def rl_loop_checks(args, path: str, tmp: Path, checks: dict[str, bool], figures: dict[str, float]) -> None:
    """Step 5: ``mintgym train`` through the CLI, the engine in a Ray rollout worker."""
    import yaml

    config, out = tmp / "rl.yaml", tmp / "rl-run"
    config.write_text(yaml.safe_dump(rl_config(args.engine, path, args.rl_steps, args)))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mintgym.cli", "train", "--config", str(config), "--out", str(out)],
                          check=False, cwd=ROOT, capture_output=True, text=True, timeout=args.rl_timeout)
    figures["rl_run_s"] = time.perf_counter() - t0
    print(proc.stdout[-3000:] + proc.stderr[-3000:])
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()] \
        if (out / "metrics.jsonl").exists() else []
    checks["rl_run_finished"] = proc.returncode == 0 and len(rows) == args.rl_steps
    checks["rl_every_step_measured_mismatch"] = bool(rows) and all(
        r.get("mismatch/tokens", 0) > 0 and math.isfinite(r.get("mismatch/kl_mean", math.nan)) for r in rows)
    if args.rl_steps > 1:  # later steps sampled with weights the trainer changed, loaded by the worker
        checks["rl_weights_moved_before_the_last_step"] = any(r.get("optimizer/skipped_no_signal", 1) == 0
                                                              for r in rows[:-1])
    for r in rows:
        figures[f"rl_step{r['step']}_mismatch_kl_mean"] = r.get("mismatch/kl_mean", math.nan)
        figures[f"rl_step{r['step']}_mismatch_max_abs"] = r.get("mismatch/max_abs", math.nan)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="checkpoint directory (default: build a small Qwen2-VL)")
    parser.add_argument("--engine", choices=["vllm", "hf"], default="vllm",
                        help="hf: the transformers engine on CPU in vLLM's place (the plumbing only)")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    parser.add_argument("--max-model-len", type=int, default=2048)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--lr", type=float, default=0.05, help="the trainer's steps (large: the update shows)")
    parser.add_argument("--rl-steps", type=int, default=3, help="step 5's trainer steps (0: skip step 5)")
    parser.add_argument("--rl-timeout", type=float, default=420.0)
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args(argv)

    from mintgym.models.tiny import build_tiny_vlm

    checks: dict[str, bool] = {}
    figures: dict[str, float] = {}
    tmp = Path(tempfile.mkdtemp(prefix="mintgym-gpu-check-"))
    t0 = time.perf_counter()
    path = args.model or build_tiny_vlm(tmp / "model", seed=0, hidden_size=128, num_heads=2,
                                        vision_embed_dim=128, vision_num_heads=2, vision_depth=2)
    figures["build_s"] = time.perf_counter() - t0
    steps = [("engine", engine_checks)] + ([("rl_loop", rl_loop_checks)] if args.rl_steps > 0 else [])
    for name, run in steps:
        try:
            run(args, str(path), tmp, checks, figures)
        except Exception:  # noqa: BLE001 -- report the step and go on: a lent GPU run should show every step
            traceback.print_exc()
            checks[f"{name}_ran"] = False

    for name, value in figures.items():
        print(f"{name:>30}: {value:.6g}")
    for name, ok in checks.items():
        print(f"{name:>42}: {'ok' if ok else 'FAILED'}")
    summary = {"engine": args.engine, "checks": checks, "figures": figures}
    print(json.dumps(summary))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0 if checks and all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
