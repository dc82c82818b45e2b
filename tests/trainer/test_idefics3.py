"""The trainer side on the tiny Idefics3 (``build_tiny_vlm(..., architecture="idefics3")``), whose processor gives
``pixel_values`` [prompts, images, C, H, W] and ``pixel_attention_mask`` rather than Qwen2-VL's patch rows and
``image_grid_thw``: the hf engine samples image prompts in mixed batches, the learner recomputes what it sampled
exactly, the warm start's padded batches score as each sequence alone, and a 3-step ``mintgym train`` runs.
(vLLM serves this model too: tests/inference/test_vllm_cpu_train.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from mintgym.buffer.types import Batch, Group, Sample, Turn
from mintgym.config import TrainConfig
from mintgym.inference import GenerationRequest, SamplingParams
from mintgym.inference.logprobs import sequence_logprobs
from mintgym.inference.messages import split_messages
from mintgym.models.loading import load_model, load_processor
from mintgym.trainer.learner import Learner

#: Image tokens per image of the tiny Idefics3 (one 32x32 crop of 8x8 patches, pixel shuffle 2).
IMAGE_TOKENS = 4


@pytest.fixture(scope="module")
def idefics3(tmp_path_factory) -> str:
    from mintgym.models.tiny import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", architecture="idefics3", vocab_size=256)


@pytest.fixture(scope="module")
def engine(idefics3):
    from mintgym.inference.hf import HFEngine

    return HFEngine(idefics3)


def request(seed: int, images: int) -> GenerationRequest:
    """A prompt with ``images`` screenshots of different sizes (0 to 2), sampled with ``seed``."""
    rng = np.random.default_rng(seed)
    content = [{"type": "image", "image": rng.integers(0, 256, (40, 50 + 30 * k, 3), dtype=np.uint8)}
               for k in range(images)]
    content.append({"type": "text", "text": "Click the button."})
    return GenerationRequest([{"role": "user", "content": content}], SamplingParams(seed=seed, max_new_tokens=5))


def test_a_mixed_batch_samples_each_prompt_with_its_own_images(engine):
    """Prompts with 1, 2 and 0 images in one batch (the processor pads the first to two images with a zero one):
    each samples as it does alone, and the aligned logprobs are the sampler's own up to rounding."""
    from mintgym.inference.hf import HFEngine

    requests = [request(0, 1), request(1, 2), request(2, 0)]
    gens = engine.generate(requests)
    raw = HFEngine(model=engine.model, processor=engine.processor, aligned_logprobs=False).generate(requests)
    for n, req, gen, own in zip((1, 2, 0), requests, gens, raw, strict=True):
        assert gen.prompt_token_ids.count(engine.model.config.image_token_id) == n * IMAGE_TOKENS
        alone = engine.generate([req])[0]
        assert alone.response_token_ids == gen.response_token_ids == own.response_token_ids
        assert alone.response_logprobs == gen.response_logprobs
        assert np.allclose(gen.response_logprobs, own.response_logprobs, atol=1e-5)


def test_the_learner_recomputes_what_the_engine_sampled_exactly(engine, idefics3):
    """Its image inputs come from the image processor alone (not the engine's padded batch): the mismatch at
    equal weights is exactly 0, and a screenshot short of the prompt's placeholders is refused by name."""
    learner = Learner(load_model(idefics3), load_processor(idefics3), TrainConfig(lr=1e-2, micro_batch=8))
    requests = [request(10 + i, i % 3) for i in range(4)]
    samples = []
    for i, (req, gen) in enumerate(zip(requests, engine.generate(requests), strict=True)):
        images = [np.asarray(img) for img in split_messages(req.messages)[1]]
        samples.append(Sample("null/echo", "null", 0, float(i), [Turn(
            gen.prompt_token_ids, gen.response_token_ids, gen.response_logprobs, 0, images=images)]))
    metrics = learner.step(Batch([Group("g", "null/echo", "null", 0, samples)], trainer_version=0))
    assert metrics["mismatch/sequences"] == 4 and metrics["mismatch/max_abs"] == 0.0
    assert metrics["mismatch/images=2/tokens"] == 5 and metrics["grad_norm"] > 0
    two = samples[2].turns[0]
    short = Turn(two.prompt_token_ids, two.response_token_ids, two.logprobs, 1, images=two.images[:1])
    with pytest.raises(ValueError, match=r"^sequence 7: 8 image tokens in the prompt but its 1 image\(s\) give 4 "
                                         r"features$"):
        learner.sequence_input(short, "sequence 7")


def test_a_right_padded_batch_scores_as_each_sequence_alone(engine):
    """The warm start's layout (:func:`~mintgym.trainer.sft.supervised_steps`): sequences from the engine's
    ``sequence_inputs``, two with images, run as one padded batch."""
    seqs = [engine.sequence_inputs(request(20 + n, n).messages, [30, 41, 52][:n + 1]) for n in (2, 0, 1)]
    with torch.no_grad():
        alone = sequence_logprobs(engine.model, seqs)
        padded = sequence_logprobs(engine.model, seqs, layout="right_padded")
    for a, b in zip(alone, padded, strict=True):
        assert torch.allclose(a, b, atol=1e-5)


def test_three_steps_of_mintgym_train_with_the_hf_engine(idefics3, tmp_path):
    """Through the front door (the CLI, a null env server, a Ray rollout worker): sync mode, so every sample was
    drawn with the learner's newest weights, and the hf engine's aligned logprobs make the mismatch exactly 0."""
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({
        "model": {"path": idefics3},
        "tasks": [{"id": "null/echo", "seeds": [0, 1]}],
        "agent": {"kind": "answer", "options": {"pick": "modulo", "choices": {"null": ["no", "ok"]}}},
        "rollout": {"workers": 1, "group_size": 8, "max_new_tokens": 1},
        "train": {"mode": "sync", "groups_per_step": 1, "steps": 3, "checkpoint_every": 3, "lr": 0.05},
    }))
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mintgym.cli", "train", "--config", str(config), "--out",
                           str(tmp_path / "run")], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["version"] for r in rows] == [1.0, 2.0, 3.0]
    assert rows[0]["optimizer/skipped_no_signal"] == 0.0 and rows[0]["grad_norm"] > 0  # the weights moved
    for row in rows:
        assert row["lag/max"] == 0 and row["samples"] == 8 and row["mismatch/images=1/tokens"] == 8
        assert row["mismatch/max_abs"] == 0.0
    print(f"3 steps of mintgym train (hf engine, tiny Idefics3) in {time.perf_counter() - started:.1f} s")


def test_an_unknown_image_layout_is_refused_by_its_keys():
    from mintgym.inference.logprobs import split_images

    said = r"^unknown image layout: the processor gave \['image_sizes', 'pixel_values'\]"
    with pytest.raises(ValueError, match=said):
        split_images({"pixel_values": torch.zeros(1, 3, 8, 8), "image_sizes": torch.tensor([[8, 8]])}, [1])
