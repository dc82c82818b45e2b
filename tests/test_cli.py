"""The CLI as a new user runs it (subprocesses of the installed `mintgym` command)."""

import json
import subprocess
import sys
from pathlib import Path

MINTGYM = [sys.executable, "-m", "mintgym.cli"]


def run(*args, check=True, timeout=300):
    proc = subprocess.run([*MINTGYM, *args], capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"mintgym {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_envs_lists_the_domains():
    out = run("envs").stdout
    for domain in ("pytool", "null"):
        assert domain in out


def test_tasks_pytool_lists_at_least_40():
    lines = [json.loads(line) for line in run("tasks", "pytool", "--json").stdout.splitlines()]
    assert len(lines) >= 40 and all(t["domain"] == "pytool" for t in lines)
    assert len({t["family"] for t in lines}) >= 4


def test_tasks_of_an_unknown_domain_fails_clearly():
    proc = run("tasks", "nosuch", check=False)
    assert proc.returncode == 2 and "no tasks for 'nosuch'" in proc.stderr


def test_rollout_scripted_pytool_then_view(tmp_path: Path):
    task = json.loads(run("tasks", "pytool", "--json").stdout.splitlines()[0])["id"]
    out = tmp_path / "demo"
    proc = run("rollout", "--task", task, "--agent", "scripted", "--episodes", "3", "--out", str(out))
    assert "3/3 succeeded" in proc.stdout
    run("view", str(out))
    pages = sorted(out.glob("*/index.html"))
    assert len(pages) == 3
    page = pages[0].read_text()
    assert "<img src=\"frames/0000.png\"" in page and "python:" in page
    assert (out / "index.html").exists()


def test_rollout_of_an_unknown_task_suggests():
    proc = run("rollout", "--task", "pytool/count-shape-0", check=False)
    assert proc.returncode != 0 and "unknown task id" in (proc.stderr + proc.stdout)


def test_view_of_an_empty_dir_fails_clearly(tmp_path):
    proc = run("view", str(tmp_path), check=False)
    assert proc.returncode == 2 and "no trajectories" in proc.stderr
