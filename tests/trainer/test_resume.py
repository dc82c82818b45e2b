"""Resuming from a checkpoint: a resumed learner trains on bit for bit as an uninterrupted one (weights, Adam's
moments and the random number generators come back, so a model with dropout draws the same masks), and the
learning rate it trains at is the config's, not the checkpoint's, with a line saying it changed."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml

from mintgym.buffer.types import Batch, Group, Sample, Turn
from mintgym.config import TrainConfig
from mintgym.inference import GenerationRequest, SamplingParams
from mintgym.inference.hf import HFEngine
from mintgym.models.loading import load_model, load_processor
from mintgym.trainer.ckpt import load_latest, save_checkpoint
from mintgym.trainer.learner import Learner


@pytest.fixture(scope="module")
def tiny_with_dropout(tmp_path_factory):
    """The tiny Qwen2-VL with attention dropout: each training forward draws masks from torch's generator."""
    from mintgym.models.tiny import build_tiny_vlm

    torch.set_num_threads(1)
    path = Path(build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256))
    config = json.loads((path / "config.json").read_text())
    config["text_config"]["attention_dropout"] = 0.2
    (path / "config.json").write_text(json.dumps(config))
    return str(path)


def _batches(path: str, n: int) -> list[Batch]:
    """``n`` one-group batches of four one-turn episodes with mixed rewards (sampled once, before training)."""
    engine = HFEngine(path, aligned_logprobs=True)
    rng = np.random.default_rng(0)
    batches = []
    for step in range(n):
        samples = []
        for i, reward in enumerate([1.0, 0.0, 0.0, 1.0] if step % 2 else [0.0, 1.0, 0.0, 0.0]):
            image = rng.integers(0, 256, (56, 56, 3), dtype=np.uint8)
            prompt = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Go"}]}]
            [gen] = engine.generate([GenerationRequest(prompt, SamplingParams(max_new_tokens=3, seed=10 * step + i))])
            samples.append(Sample("null/echo", "null", 0, reward,
                                  [Turn(gen.prompt_token_ids, gen.response_token_ids, gen.response_logprobs, step,
                                        [image])]))
        batches.append(Batch([Group(f"g{step}", "null/echo", "null", 0, samples)], trainer_version=step))
    return batches


def _start(seed: int) -> None:
    """What a run's process does first: seed its generators (mintgym.rl.components.Run)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def test_a_resumed_learner_trains_on_bit_for_bit_as_an_uninterrupted_one(tiny_with_dropout, tmp_path):
    """N steps straight vs K steps, a checkpoint, a new learner (fresh process state: seeded again, fresh
    weights) resumed from it, N - K steps: the same losses at every step and the same weights at the end."""
    n, k = 4, 2
    batches = _batches(tiny_with_dropout, n)
    processor = load_processor(tiny_with_dropout)
    config = TrainConfig(lr=1e-3, micro_batch=2)

    _start(0)
    straight = Learner(load_model(tiny_with_dropout), processor, config)
    losses = [straight.step(b)["loss"] for b in batches]

    _start(0)
    first = Learner(load_model(tiny_with_dropout), processor, config)
    resumed_losses = [first.step(b)["loss"] for b in batches[:k]]
    save_checkpoint(tmp_path, k, first.model, first.optimizer, {"version": first.version, "buffer": {}})
    del first
    _start(0)
    second = Learner(load_model(tiny_with_dropout), processor, config)
    _, state = load_latest(tmp_path, second.model, second.optimizer, lambda _: None)
    second.restored(int(state["version"]))
    resumed_losses += [second.step(b)["loss"] for b in batches[k:]]

    assert resumed_losses == losses
    mine, theirs = second.model.state_dict(), straight.model.state_dict()
    assert [name for name in mine if not torch.equal(mine[name], theirs[name])] == []
    # the dropout does act: the same step trained without the restored generator goes elsewhere
    _start(1)
    other = Learner(load_model(tiny_with_dropout), processor, config)
    load_latest(tmp_path, other.model, other.optimizer, lambda _: None)
    torch.manual_seed(1)
    assert other.step(batches[k])["loss"] != losses[k]


def test_the_random_generators_come_back_as_they_were_at_the_checkpoint(tmp_path):
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    _start(5)
    random.random(), np.random.rand(3), torch.rand(3)  # a run some way in
    save_checkpoint(tmp_path, 1, model, optimizer, {"version": 1, "buffer": {}})
    then = (random.random(), np.random.rand(3).tolist(), torch.rand(3).tolist(), np.random.randn())
    _start(5)
    load_latest(tmp_path, model, optimizer, lambda _: None)
    assert (random.random(), np.random.rand(3).tolist(), torch.rand(3).tolist(), np.random.randn()) == then


def test_a_resume_trains_at_the_config_learning_rate_and_says_it_changed(tiny_with_dropout, tmp_path):
    """docs/train.md: a resume may change the learning rate. optimizer.load_state_dict alone brought the saved
    one back (config 1e-6, the resumed optimizer trained at 1e-5)."""
    [batch] = _batches(tiny_with_dropout, 1)
    processor = load_processor(tiny_with_dropout)
    first = Learner(load_model(tiny_with_dropout), processor, TrainConfig(lr=1e-5))
    first.step(batch)
    save_checkpoint(tmp_path, 1, first.model, first.optimizer, {"version": first.version, "buffer": {}})

    second = Learner(load_model(tiny_with_dropout), processor, TrainConfig(lr=1e-6))
    said: list[str] = []
    load_latest(tmp_path, second.model, second.optimizer, said.append)
    assert [group["lr"] for group in second.optimizer.param_groups] == [1e-6] * len(second.optimizer.param_groups)
    assert [line for line in said if "lr changed" in line] == [
        ("optimizer lr changed on resume from 1e-05 to 1e-06 (the config's; moments and step counts are the "
         "checkpoint's)")]
    # the optimizer's state is still the checkpoint's: Adam goes on from step 1 with its moments
    saved = torch.load(tmp_path / "checkpoints" / "step-000001" / "optimizer.pt", weights_only=True)["state"]
    for index, state in second.optimizer.state_dict()["state"].items():
        assert float(state["step"]) == 1.0 and torch.equal(state["exp_avg"], saved[index]["exp_avg"])

    same = Learner(load_model(tiny_with_dropout), processor, TrainConfig(lr=1e-5))
    said.clear()
    load_latest(tmp_path, same.model, same.optimizer, said.append)
    assert [line for line in said if "changed" in line] == []


def _run(config: Path, out: Path, *args: str) -> str:
    """``mintgym train`` in its own process, as a user runs it; its output."""
    proc = subprocess.run([sys.executable, "-m", "mintgym.cli", "train", "--config", str(config), "--out", str(out),
                           *args], check=False, cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc.stdout + proc.stderr


def _checkpoint(out: Path, step: int, *names: str) -> dict[str, Any]:
    """The trainer's files of a checkpoint (``model``: the weights of its model folder, as saved)."""
    from safetensors.torch import load_file

    folder = out / "checkpoints" / f"step-{step:06d}"
    return {name: load_file(folder / "model.safetensors") if name == "model"
            else torch.load(folder / f"{name}.pt", weights_only=True) for name in names}


def _losses(out: Path) -> dict[int, float]:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {int(row["step"]): row["loss"] for row in rows}


@pytest.mark.timeout(600)
def test_mintgym_train_resumed_goes_on_bit_for_bit_and_takes_a_new_learning_rate(tiny_with_dropout, tmp_path):
    """Through the front door: a run of 3 steps, and the same run killed after step 2's checkpoint and run
    again, end on the same weights, Adam state and step-3 loss (sync mode, greedy rollouts: the episodes do not
    depend on the workers' seed streams, which a resume starts afresh; an entropy bonus trains the tiny model
    whose greedy answers tie, through attention dropout drawn from the trainer's restored generator). Run again
    with another ``train.lr``, the optimizer trains at it and the output says so."""
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({
        "model": {"path": tiny_with_dropout},
        "tasks": [{"id": "null/echo", "seeds": [0]}],
        "agent": {"kind": "answer", "options": {"choices": {"null": ["no", "ok"]}}},
        "rollout": {"workers": 1, "group_size": 2, "groups_in_flight": 1, "max_new_tokens": 1, "temperature": 0},
        "train": {"mode": "sync", "steps": 3, "groups_per_step": 1, "lr": 1e-3, "checkpoint_every": 1,
                  "entropy_coef": 0.5, "skip_no_signal": False, "sync_timeout": 60, "batch_timeout": 120},
    }))
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    _run(config, straight)
    shutil.copytree(straight, resumed)  # the run killed during step 3: its last checkpoint is step 2's
    shutil.rmtree(resumed / "checkpoints" / "step-000003")
    said = _run(config, resumed)
    assert "resumed from" in said and "at step 2" in said, said[-3000:]

    mine, theirs = _checkpoint(resumed, 3, "model", "optimizer"), _checkpoint(straight, 3, "model", "optimizer")
    assert _losses(resumed)[3] == _losses(straight)[3]
    assert [k for k, v in mine["model"].items() if not torch.equal(v, theirs["model"][k])] == []
    for index, state in mine["optimizer"]["state"].items():
        assert all(torch.equal(v, theirs["optimizer"]["state"][index][k]) for k, v in state.items())
    # the dropout does act in the trainer: its generator moved on between the checkpoints
    rng = {step: _checkpoint(straight, step, "rng")["rng"]["torch"] for step in (2, 3)}
    assert not torch.equal(rng[2], rng[3])
    assert torch.equal(_checkpoint(resumed, 3, "rng")["rng"]["torch"], rng[3])

    said = _run(config, resumed, "--steps", "4", "train.lr=1e-4")
    assert "optimizer lr changed on resume from 0.001 to 0.0001" in said, said[-3000:]
    groups = _checkpoint(resumed, 4, "optimizer")["optimizer"]["param_groups"]
    assert [group["lr"] for group in groups] == [1e-4] * len(groups)
