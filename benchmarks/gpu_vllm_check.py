"""GPU check of the vllm engine: generate with logprobs, update weights in place, compare with hf.

Run on a machine with a CUDA GPU and the ``vllm`` extra. It builds a small Qwen2-VL (head size 64, which
every vLLM attention backend supports) or uses ``--model``, serves it with :class:`VLLMEngine`, and checks:

1. a batch of 8 image prompts returns text, token ids and one finite logprob per token; same seeds give
   the same tokens;
2. ``update_weights`` with perturbed weights changes the fingerprint, the policy version and the greedy
   outputs; loading the original weights back restores the original outputs;
3. the sampler/trainer mismatch: vLLM's logprobs of its own tokens against the hf recompute
   (:func:`mintgym.inference.logprobs.sequence_logprobs`, float32 on CPU) at the same weights.

Prints the figures and a JSON summary; exits 1 if a check fails.

    python benchmarks/gpu_vllm_check.py [--model PATH] [--gpu-memory-utilization 0.3]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time

import numpy as np


def requests(n: int, temperature: float, seed0: int = 0):
    from mintgym.inference import GenerationRequest, SamplingParams

    rng = np.random.default_rng(seed0)
    out = []
    for i in range(n):
        shot = rng.integers(0, 256, (240, 320, 3), dtype=np.uint8)
        out.append(GenerationRequest(
            [{"role": "user", "content": [{"type": "image", "image": shot},
                                          {"type": "text", "text": f"Task {i}: click the OK button."}]}],
            SamplingParams(max_new_tokens=24, temperature=temperature, seed=seed0 + i)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="checkpoint directory (default: build a small Qwen2-VL)")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    parser.add_argument("--max-model-len", type=int, default=2048)
    parser.add_argument("--dtype", default="bfloat16")
    args = parser.parse_args()

    import torch

    from mintgym.inference.logprobs import sequence_logprobs
    from mintgym.inference.vllm import VLLMEngine
    from mintgym.models.loading import load_model
    from mintgym.models.tiny import build_tiny_vlm

    checks: dict[str, bool] = {}
    figures: dict[str, float] = {}
    tmp = tempfile.mkdtemp(prefix="mintgym-gpu-check-")
    t0 = time.perf_counter()
    path = args.model or build_tiny_vlm(f"{tmp}/model", seed=0, hidden_size=128, num_heads=2,
                                        vision_embed_dim=128, vision_num_heads=2, vision_depth=2)
    figures["build_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    engine = VLLMEngine(path, gpu_memory_utilization=args.gpu_memory_utilization,
                        max_model_len=args.max_model_len, dtype=args.dtype, enforce_eager=True)
    figures["engine_start_s"] = time.perf_counter() - t0

    # 1. sampling with logprobs, deterministic by seed
    batch = requests(8, temperature=1.0)
    engine.generate(batch[:1])  # warm-up
    t0 = time.perf_counter()
    gens = engine.generate(batch)
    wall = time.perf_counter() - t0
    tokens = sum(len(g.response_token_ids) for g in gens)
    figures["tokens_per_s_batch8"] = tokens / wall
    checks["logprobs_one_per_token"] = all(
        g.response_logprobs is not None and len(g.response_logprobs) == len(g.response_token_ids) > 0 for g in gens)
    checks["logprobs_finite"] = all(math.isfinite(lp) and lp <= 0 for g in gens for lp in g.response_logprobs or [])
    checks["prompt_ids_present"] = all(len(g.prompt_token_ids) > 0 for g in gens)
    again = engine.generate(batch)
    checks["same_seed_same_tokens"] = [g.response_token_ids for g in gens] == [g.response_token_ids for g in again]
    checks["version_0"] = all(g.policy_version == 0 for g in gens)

    # 3. mismatch against the trainer's recompute (hf, float32, CPU) at the same weights
    model = load_model(path)
    from mintgym.inference.hf import HFEngine

    hf = HFEngine(model=model, processor=engine.processor)
    diffs = []
    for request, g in zip(batch, gens):
        seq = hf.sequence_inputs(request.messages, g.response_token_ids)
        checks.setdefault("same_prompt_ids_as_hf", True)
        checks["same_prompt_ids_as_hf"] &= seq.token_ids[:seq.prompt_length] == g.prompt_token_ids
        with torch.no_grad():
            [lp] = sequence_logprobs(model, [seq], temperature=request.sampling.temperature)
        diffs.append((lp - torch.tensor(g.response_logprobs)).abs())
    every = torch.cat(diffs)
    figures["mismatch_max_abs"] = float(every.max())
    figures["mismatch_mean_abs"] = float(every.mean())

    # 2. in-place weight update
    greedy = requests(4, temperature=0.0, seed0=100)
    before = [g.response_token_ids for g in engine.generate(greedy)]
    fingerprint0 = engine.weight_sum()
    original = {k: v.clone() for k, v in model.state_dict().items()}
    gen = torch.Generator().manual_seed(0)
    perturbed = {k: v + 0.05 * torch.randn(v.shape, generator=gen) * v.float().std().clamp(min=1e-3)
                 if v.is_floating_point() else v for k, v in original.items()}
    t0 = time.perf_counter()
    engine.update_weights(1, perturbed)
    figures["update_weights_s"] = time.perf_counter() - t0
    fingerprint1 = engine.weight_sum()
    after = engine.generate(greedy)
    checks["fingerprint_changed"] = fingerprint1 != fingerprint0
    checks["version_bumped"] = engine.policy_version == 1 and all(g.policy_version == 1 for g in after)
    checks["outputs_changed"] = [g.response_token_ids for g in after] != before
    engine.update_weights(2, original)
    restored = [g.response_token_ids for g in engine.generate(greedy)]
    checks["restore_gives_original_outputs"] = restored == before
    checks["restore_gives_original_fingerprint"] = math.isclose(engine.weight_sum(), fingerprint0, rel_tol=1e-6)
    engine.close()

    for name, value in figures.items():
        print(f"{name:>28}: {value:.6g}")
    for name, ok in checks.items():
        print(f"{name:>36}: {'ok' if ok else 'FAILED'}")
    print(json.dumps({"checks": checks, "figures": figures}))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
