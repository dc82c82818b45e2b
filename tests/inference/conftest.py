"""Fixtures: the tiny Qwen2-VL (built once per session), an hf engine on it, and it served over HTTP."""

from __future__ import annotations

import numpy as np
import pytest

from mintgym.inference import GenerationRequest, SamplingParams


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory) -> str:
    from mintgym.models.tiny import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny-vlm"), seed=0)


@pytest.fixture(scope="session")
def hf_engine(tiny_model_path):
    from mintgym.inference.hf import HFEngine

    return HFEngine(tiny_model_path)


@pytest.fixture(scope="session")
def screenshot() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (120, 200, 3), dtype=np.uint8)


@pytest.fixture(scope="session")
def make_request(screenshot):
    """``make_request(i, seed=, image=True, **sampling)``: a chat request with a screenshot and task i."""

    def make(i: int = 0, seed: int | None = 1, image: bool = True, **sampling) -> GenerationRequest:
        content: list[dict] = [{"type": "text", "text": f"Task {i}: click the OK button."}]
        if image:
            content.insert(0, {"type": "image", "image": screenshot})
        sampling.setdefault("max_new_tokens", 10)
        return GenerationRequest([{"role": "user", "content": content}], SamplingParams(seed=seed, **sampling))

    return make


def sampler_vs_recompute_gap(engine, requests) -> float:
    """The largest gap between the logprobs ``engine`` reports for what it sampled and the trainer's recompute."""
    import torch

    from mintgym.inference.logprobs import sequence_logprobs

    gens = engine.generate(requests)
    assert all(g.logprobs_source == "sampler" for g in gens)
    seqs = [engine.sequence_inputs(r.messages, g.response_token_ids) for r, g in zip(requests, gens, strict=True)]
    with torch.no_grad():
        recomputed = sequence_logprobs(engine.model, seqs)
    return max(float((lp - torch.tensor(g.response_logprobs)).abs().max())
               for lp, g in zip(recomputed, gens, strict=True))
