"""The VLM agent in the RL loop: multi-turn episodes with several screenshots per prompt reach the learner.

The default run plays 2-turn episodes of the full VLMAgent (history of 2 screenshots, its real prompt and
parser) in a rollout worker against a real null env server and a tiny random Qwen2-VL, then trains the
learner on them. The slow test runs ``mintgym train --config examples/two_step.yaml`` through the CLI:
a behaviour-cloning warm start on the task oracle, then RL, and checks that success rises within RL.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import ray
import torch

from mintgym.buffer.store import TrajectoryBuffer
from mintgym.config import TrainConfig
from mintgym.models.loading import load_model, load_processor
from mintgym.rollout.ray_worker import RolloutWorker
from mintgym.runtime.fleet import start_env_servers
from mintgym.runtime.local import LocalProvider
from mintgym.trainer.learner import Learner
from mintgym.weights import FilesystemBroadcast

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def null_server(tmp_path_factory):
    """(tiny model path, a null env server's URL), with a local Ray instance for the worker's buffer actor."""
    from mintgym.models.tiny import build_tiny_vlm

    path = build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256)
    ray.init(address="local", num_cpus=1, include_dashboard=False, configure_logging=False, log_to_driver=False)
    try:
        with start_env_servers(LocalProvider(), "null") as servers:
            yield path, servers.urls[0]
    finally:
        ray.shutdown()


async def test_two_turn_vlm_episodes_reach_the_learner_with_their_screenshots(null_server, tmp_path, worker_spec):
    path, url = null_server
    torch.set_num_threads(1)
    buffer = ray.remote(TrajectoryBuffer).options(num_cpus=0).remote(["null"], groups_per_step=1, max_lag=0,
                                                                     own_images=True)
    spec = worker_spec(path, [("null/echo", [5], "null")], {"null": [url]},
                       envs=[{"domain": "null", "session_options": {"width": 112, "height": 112}}],
                       engine={"options": {"aligned_logprobs": True}},
                       agent={"kind": "vlm", "max_turns": 2, "options": {
                           "frame": "resized_absolute:56x56", "history": 2, "actions": ["click", "done"],
                           "seeded": False}},
                       rollout={"group_size": 3, "groups_in_flight": 1, "max_new_tokens": 6, "temperature": 1.0})
    worker = RolloutWorker(spec, buffer, FilesystemBroadcast(tmp_path / "w"))
    try:
        await worker.run(max_groups=1)
        batch = await buffer.get_batch.remote(1, 0, 10.0)
        [group] = batch.groups
        image_token = worker.engine.model.config.image_token_id
        tokenizer = worker.engine.tokenizer
        responses = set()
        for sample in group.samples:
            assert [len(turn.images) for turn in sample.turns] == [1, 2]  # turn 2 shows both screenshots
            first, second = sample.turns
            # the second prompt shows the first answer (history), then the two screenshots
            answer = tokenizer.decode(first.response_token_ids, skip_special_tokens=True).strip() or "(empty answer)"
            assert answer in tokenizer.decode(second.prompt_token_ids)
            for turn in sample.turns:
                assert sum(t == image_token for t in turn.prompt_token_ids) == 4 * len(turn.images)  # 56x56: 4 each
                assert len(turn.logprobs) == len(turn.response_token_ids) <= 6
                responses.add(tuple(turn.response_token_ids))
        assert len(responses) > 1  # unseeded: the episodes of one task seed sample apart

        model = load_model(path)
        learner = Learner(model, load_processor(path), TrainConfig(lr=1e-3, micro_batch=4))
        metrics = learner.step(batch)
    finally:
        await worker.close()
        ray.kill(buffer)
    assert metrics["sequences"] == 6  # 3 episodes x 2 turns, each turn its own sequence
    assert metrics["mismatch/turn=1/tokens"] > 0 and metrics["mismatch/images=2/tokens"] > 0
    assert metrics["mismatch/images=2/tokens"] == metrics["mismatch/turn=1/tokens"]
    assert metrics["mismatch/kl_mean"] == pytest.approx(0.0, abs=1e-6)  # the trainer scores what was sampled
    assert math.isfinite(metrics["loss"])


@pytest.mark.slow
@pytest.mark.web
@pytest.mark.timeout(1800)
def test_two_step_success_rises_within_rl(tmp_path):
    """``mintgym train --config examples/two_step.yaml`` through the CLI: the oracle warm start on seeds 0 and 3
    (the tiny model mixes up their TWO buttons), then RL of the VLM agent on click-button-sequence seed 0. A
    random tiny model never writes a parseable action (success 0); the warm start leaves RL at about a third to
    a half, and RL makes the second click land."""
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "mintgym.cli", "train", "--config", "examples/two_step.yaml",
                           "--out", str(out), "--eval-groups", "0", "train.checkpoint_every=0"],
                          cwd=REPO, capture_output=True, text=True, timeout=1500, check=False,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((out / "warm_start" / "summary.json").read_text())
    assert summary["examples"] == 4 and summary["last_loss"] < summary["first_loss"]  # 2 seeds x 2 clicks
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    success = [r["success/web"] for r in rows if "success/web" in r]
    assert len(success) == 24, success
    first, last = np.mean(success[:4]), np.mean(success[-4:])
    assert first <= 0.7 and last >= 0.8 and last - first >= 0.25, f"success per step {success}"
