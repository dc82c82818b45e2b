"""``mintgym train`` as a job scheduler stops it: SIGTERM ends the run as Ctrl-C does (exit 130, the last
checkpoint named, no env server left), not through Ray's crash report (exit 134)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml


@pytest.mark.timeout(300)
def test_sigterm_mid_run_stops_it_cleanly(tmp_path):
    import psutil

    from mintgym.models.tiny import build_tiny_vlm

    model = build_tiny_vlm(tmp_path / "model", vocab_size=256)
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({
        "model": {"path": str(model)},
        "tasks": [{"id": "null/echo", "seeds": [0, 1]}],
        "agent": {"kind": "answer", "options": {"choices": {"null": ["no", "ok"]}}},
        "rollout": {"workers": 1, "group_size": 2, "max_new_tokens": 1,
                    "simulated_step_seconds": [0.5, 0.1]},  # slow enough to stop it between steps
        "train": {"groups_per_step": 1, "steps": 200, "checkpoint_every": 1},
    }))
    repo, out, log = Path(__file__).resolve().parents[2], tmp_path / "run", tmp_path / "train.log"
    with log.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "mintgym.cli", "train", "--config", str(config), "--out",
                                 str(out)], cwd=repo, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 200
        while "step 2/200" not in log.read_text() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
        assert "step 2/200" in log.read_text(), log.read_text()[-2000:]
        servers = [p for p in psutil.process_iter(["cmdline"])
                   if f"--parent-pid {proc.pid}" in " ".join(p.info["cmdline"] or [])]
        assert servers, "the run's null env server should be up"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 130, log.read_text()[-2000:]
        text = log.read_text()
        assert "interrupted at step" in text and "to resume from step-" in text, text[-2000:]
        assert "SIGTERM received" not in text
        _, alive = psutil.wait_procs(servers, timeout=15)
        assert not alive, f"env servers left running: {[p.pid for p in alive]}"
    finally:
        if proc.poll() is None:
            proc.kill()
