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

REPO = Path(__file__).resolve().parents[3]


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
    first_at, first = lines[0]
    assert first_at < 10 and first.startswith("mintgym train:"), lines[:3]
    for phase in ("starting Ray", "starting env servers: null", "loading the model into the learner",
                  "rollout worker(s)", "warming up"):
        assert phase in text, phase
    step_at = {int(m.group(1)): (t, line) for t, line in lines if (m := re.match(r"step (\d+)/", line))}
    assert "ETA" not in step_at[1][1] and "ETA" not in step_at[2][1]  # the warm-up step alone says nothing
    at, line = step_at[3]
    eta = re.search(r"ETA (?:(\d+)m)?(\d+)s", line)
    assert eta, line
    said = 60 * int(eta.group(1) or 0) + int(eta.group(2))
    took = step_at[steps][0] - at
    assert took / 2 <= max(said, 1) <= took * 2, f"ETA {said}s at step 3; the other steps took {took:.1f}s"
    checkpoint = out / "checkpoints" / f"step-{steps:06d}"
    assert lines[-2][1] == f"checkpoint: {checkpoint}" and checkpoint.is_dir()
    assert lines[-1][1] == f"evaluate it: mintgym eval --model {out} --step {steps} --out {out}-eval"
