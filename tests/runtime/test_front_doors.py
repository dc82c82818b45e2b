"""Every domain through the front doors a user takes: ``mintgym.make`` with the default backend (a local
env server subprocess on uvloop) and the ``mintgym rollout`` CLI. In-process tests cannot catch what
breaks only in the served process (the desktop's config commands once failed there on uvloop)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mintgym
from mintgym.env import registration

GIMP_TASK = "osworld/gimp/7b7617bd-57cc-468e-9c91-40c4ec2bcb3d"
HAS_X = shutil.which("Xvfb") is not None and shutil.which("openbox") is not None
HAS_CHROMIUM = shutil.which("chromium") is not None

#: One task per domain (and OSWorld, whose config steps and getters run commands in the session).
CONFORMANCE = [
    pytest.param("null/echo", id="null"),
    pytest.param("pytool/count-shapes-0", id="pytool"),
    pytest.param("miniwob/click-test", id="web", marks=[pytest.mark.web, pytest.mark.skipif(
        not HAS_CHROMIUM, reason="Chromium is needed")]),
    pytest.param("desktop/terminal-file-v0", id="desktop", marks=[pytest.mark.desktop, pytest.mark.skipif(
        not HAS_X, reason="Xvfb and openbox are needed")]),
    pytest.param(GIMP_TASK, id="osworld", marks=[pytest.mark.desktop, pytest.mark.skipif(
        not HAS_X or shutil.which("gimp") is None, reason="Xvfb and GIMP are needed")]),
]


def _task_available(task_id: str) -> None:
    _domain, task = registration.resolve(task_id)
    reason = task.unavailable() if task is not None else None
    if reason:
        pytest.fail(f"{task_id} is unavailable here: {reason}")


@pytest.mark.parametrize("task_id", CONFORMANCE)
def test_oracle_scores_one_and_untouched_scores_zero_through_the_default_backend(task_id):
    _task_available(task_id)
    env = mintgym.make(task_id)  # backend="local": a served subprocess
    try:
        env.reset(seed=0)
        untouched = env.evaluate()
        reward, steps, terminated = 0.0, 0, False
        while not terminated and steps < 60:
            action = env.oracle_action()
            if action is None:
                break
            _obs, reward, terminated, truncated, info = env.step(action)
            assert not info.get("error"), info
            steps += 1
        assert env.evaluate() == 1.0, f"{task_id}: the oracle scored {env.evaluate()} after {steps} steps"
        env.reset(seed=0)
        assert env.evaluate() == untouched == 0.0
    finally:
        env.close()


@pytest.mark.desktop
@pytest.mark.skipif(not HAS_X, reason="Xvfb and openbox are needed")
@pytest.mark.parametrize("task_id", ["desktop/terminal-file-v0", GIMP_TASK])
def test_cli_rollout_of_a_desktop_task_scores_one(task_id, tmp_path):
    _task_available(task_id)
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "mintgym.cli", "rollout", "--task", task_id, "--agent", "scripted",
                           "--episodes", "1", "--out", str(out)], capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1/1 succeeded" in done.stdout, done.stdout + done.stderr
    steps = [json.loads(line) for path in Path(out).rglob("*.jsonl") for line in path.read_text().splitlines()
             if line.strip()]
    assert steps and not any(s.get("error") for s in steps if isinstance(s, dict) and "index" in s)


@pytest.mark.desktop
@pytest.mark.skipif(not HAS_X or shutil.which("unshare") is None, reason="Xvfb and unshare are needed")
@pytest.mark.parametrize("task_id", ["desktop/terminal-file-v0", GIMP_TASK])
def test_cli_rollout_as_a_non_root_user(task_id, tmp_path):
    """The same front door run by an ordinary user (here: ``nobody`` in a user namespace of our own, so the
    files we own stay readable); the desktop then falls back to one process group per session."""
    _task_available(task_id)
    probe = subprocess.run(["unshare", "--user", "--map-user=65534", "--map-group=65534", "id", "-u"],
                           capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.strip() != "65534":
        pytest.skip(f"user namespaces are not available here: {probe.stderr.strip()}")
    done = subprocess.run(["unshare", "--user", "--map-user=65534", "--map-group=65534", "--", sys.executable, "-m",
                           "mintgym.cli", "rollout", "--task", task_id, "--agent", "scripted", "--episodes", "1",
                           "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=280)
    assert done.returncode == 0 and "1/1 succeeded" in done.stdout, done.stdout + done.stderr
