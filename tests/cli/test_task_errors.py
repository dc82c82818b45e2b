"""Errors that point at the task author's code, through the `mintgym` command: a pack outside the repository
whose reward function divides by zero shows its file and line in rollout, eval and check; check marks that
task FAIL and goes on; an eval with some errored episodes prints the reasons grouped and exits 3; Ctrl-C
during an eval prints one line and leaves a partial results.json and report; a missing extra is named as
the extra to install; a port in use is MintGym's one line."""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("mintgym_tests_outside", Path(__file__).with_name("outside.py"))
outside = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(outside)

PACK = '''
import asyncio
from dataclasses import dataclass
from typing import ClassVar

from mintgym.action_spaces import Done
from mintgym.env.core import Task


def score(answer):
    return 1.0 / len(answer or "")


@dataclass
class Echo(Task):
    domain: ClassVar[str] = "null"

    async def evaluate(self, env):
        return 1.0 if env.answer == "ok" else 0.0

    async def oracle(self, env):
        yield Done(answer="ok")


@dataclass
class Divides(Echo):
    async def evaluate(self, env):
        return score("")


@dataclass
class Slow(Echo):
    async def setup(self, env, rng):
        await asyncio.sleep(1.0)


def tasks():
    return [Divides(id="mine/divides", instruction="Say ok.", max_steps=3, family="mine"),
            Echo(id="mine/ok", instruction="Say ok.", max_steps=3, family="mine"),
            Slow(id="mine/slow", instruction="Say ok.", max_steps=3, family="mine")]
'''
#: Where the pack's ZeroDivisionError is raised: the line of ``return 1.0 / len(...)``.
RAISES_AT = "mypkg/tasks.py:11"
PACKS = ("--packs", "mypkg.tasks:tasks")


@pytest.fixture(scope="module")
def pack_dir(tmp_path_factory) -> Path:
    root = outside.write_package(tmp_path_factory.mktemp("outside-the-repo"), {"mypkg.tasks": PACK})
    assert "return 1.0 / len" in (root / "mypkg" / "tasks.py").read_text().splitlines()[10]
    return root


def mintgym(pack_dir: Path, *args: str):
    return outside.mintgym(*args, path=pack_dir)


def test_rollout_shows_the_task_authors_file_and_line(pack_dir, tmp_path):
    proc = mintgym(pack_dir, "rollout", *PACKS, "--task", "mine/divides", "--agent", "scripted", "--out",
                   str(tmp_path / "r"))
    assert proc.returncode == 1, proc.stderr
    assert "evaluate() raised ZeroDivisionError" in proc.stdout and RAISES_AT in proc.stdout, proc.stdout
    assert 'in evaluate\n    return score("")' in proc.stdout  # the author's frames, outermost first
    assert "mintgym/env/episode.py" not in proc.stdout and "it was replaced" not in proc.stdout


def test_check_marks_the_task_fail_and_goes_on(pack_dir):
    proc = mintgym(pack_dir, "check", "mypkg.tasks:tasks")
    assert proc.returncode == 1, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()
            if line.startswith("mine/") and not line.split()[0].endswith(":")}  # the table, not the details
    assert set(rows) == {"mine/divides", "mine/ok", "mine/slow"}, proc.stdout
    assert "FAIL" in rows["mine/divides"] and RAISES_AT in rows["mine/divides"]
    assert "FAIL" not in rows["mine/ok"] and "FAIL" not in rows["mine/slow"]
    assert "3 tasks: 2 pass, 1 fail" in proc.stdout
    assert 'in score\n    return 1.0 / len(answer or "")' in proc.stdout  # the frames, below the table


def test_eval_with_some_errored_episodes_groups_the_reasons_and_exits_3(pack_dir, tmp_path):
    out = tmp_path / "e"
    proc = mintgym(pack_dir, "eval", *PACKS, "--tasks", "mine/ok,mine/divides", "--episodes", "2", "--agent",
                   "scripted", "--out", str(out), "--no-progress")
    assert proc.returncode == 3, proc.stderr
    assert "2 of 4 episodes errored, by reason:" in proc.stderr
    [reason] = [line for line in proc.stderr.splitlines() if line.strip().startswith("2x ")]
    assert "TaskError" in reason and RAISES_AT in reason
    assert 'return score("")' in proc.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["overall"]["successes"] == 2 and results["overall"]["errors"]["count"] == 2
    assert RAISES_AT in (out / "report.html").read_text()


def test_sigint_during_eval_says_what_was_kept_and_writes_partial_results(pack_dir, tmp_path):
    out = tmp_path / "s"
    env = {**os.environ, "PYTHONPATH": str(pack_dir)}
    env.pop("MINTGYM_PACKS", None)
    proc = subprocess.Popen([sys.executable, "-m", "mintgym.cli", "eval", *PACKS, "--tasks", "mine/slow",
                             "--episodes", "8", "--agent", "scripted", "--out", str(out), "--no-progress"],
                            env=env, cwd=pack_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            metas = glob.glob(str(out / "trajectories" / "*" / "meta.json"))
            if any(json.loads(Path(m).read_text() or "{}").get("status") == "success" for m in metas):
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("interrupted: ") and "run the same command again" in lines[0]
    results = json.loads((out / "results.json").read_text())
    finished, pending = results["interrupted"]["finished"], results["interrupted"]["pending"]
    assert finished >= 1 and pending >= 1 and finished + pending == 8
    assert f"{finished} of 8 episodes finished" in lines[0]
    assert results["overall"]["episodes"] == finished
    assert "Interrupted:" in (out / "report.html").read_text()


def test_envs_names_the_extra_of_a_missing_module(tmp_path):
    blocker = tmp_path / "Xlib"  # an install without the desktop extra: `import Xlib` fails
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'Xlib'\", name='Xlib')\n")
    proc = outside.mintgym("envs", path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ModuleNotFoundError" not in proc.stdout + proc.stderr
    assert "task pack 'desktop' did not load: it needs 'Xlib', from the desktop extra: " \
           "pip install 'mintgym[desktop]'" in proc.stderr
    [desktop] = [line for line in proc.stdout.splitlines() if line.startswith("desktop ")]
    assert "pip install 'mintgym[desktop]'" in desktop


def test_serve_on_a_port_in_use_is_one_mintgym_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = outside.mintgym("serve", "null", "--port", str(port))
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"error: port {port} on 127.0.0.1 is in use (another server?); stop it or pick " \
                                  "another with --port"
