"""Pointing MintGym at an OSWorld checkout: ``--osworld-root`` takes OSWorld's evaluation_examples folder
as OSWorld ships it, its test lists become suites, and a wrong path is a one-line error."""

import json
import shutil
import subprocess
import sys

import pytest

from mintgym.environments.desktop.osworld.loader import (
    ROOT_VARIABLE,
    OSWorldRootError,
    check_root,
    examples_dir,
    load_examples,
    task_lists,
)

pytestmark = pytest.mark.skipif(examples_dir() is None, reason="the shared OSWorld data is not present")


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mintgym.cli", *args], capture_output=True, text=True, timeout=120,
                          env=env)


@pytest.fixture
def checkout(tmp_path):
    """A copy of the bundled folder laid out as OSWorld's evaluation_examples/, with a test list."""
    root = tmp_path / "evaluation_examples"
    shutil.copytree(examples_dir(), root / "examples")
    apps = {}
    for spec in load_examples(root / "examples")[:7]:
        apps.setdefault(spec.app, []).append(spec.id)
    (root / "test_mine.json").write_text(json.dumps(apps))
    return root


def test_tasks_json_reads_a_copy_of_the_examples_folder(checkout):
    done = _cli("tasks", "osworld", "--osworld-root", str(checkout), "--json")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == len(list((checkout / "examples").glob("*/*.json")))
    for row in rows:
        assert row["id"].startswith("osworld/") and row["domain"] == "desktop"
        assert row["available"] == (row["reason"] is None)


def test_tasks_prints_counts_by_reason(checkout):
    done = _cli("tasks", "osworld", "--osworld-root", str(checkout))
    assert done.returncode == 0
    summary = done.stderr.strip().splitlines()
    assert "runnable here" in summary[0]
    counted = sum(int(line.split()[0]) for line in summary[1:])
    runnable, total = int(summary[0].split(": ")[1].split()[0]), int(summary[0].split()[0])
    assert runnable + counted == total


@pytest.mark.parametrize("bad", ["missing", "examples", "empty"])
def test_a_wrong_root_is_a_one_line_error(checkout, tmp_path, bad):
    path = {"missing": tmp_path / "nope", "examples": checkout / "examples", "empty": tmp_path}[bad]
    done = _cli("tasks", "osworld", "--osworld-root", str(path))
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "evaluation_examples" in done.stderr
    with pytest.raises(OSWorldRootError):
        check_root(path)


def test_a_wrong_root_in_the_environment_is_not_silently_replaced(tmp_path):
    env = {**__import__("os").environ, ROOT_VARIABLE: str(tmp_path / "nope")}
    done = _cli("tasks", "osworld", env=env)
    assert done.returncode != 0
    assert "nope" in done.stdout + done.stderr


def test_test_lists_become_suites(checkout, monkeypatch):
    from mintgym.evals.suites import resolve_suite, suite_names

    monkeypatch.setenv(ROOT_VARIABLE, str(checkout))
    assert task_lists()["test_mine"]
    assert "osworld-test_mine" in suite_names()
    lists = task_lists()["test_mine"]
    bench = resolve_suite("osworld-test_mine")
    assert sorted(bench.task_ids) == sorted(f"osworld/{app}/{i}" for app, ids in lists.items() for i in ids)


def test_a_malformed_test_list_names_its_file(checkout):
    (checkout / "test_bad.json").write_text('{"chrome": "not a list"}')
    with pytest.raises(ValueError, match="test_bad.json"):
        task_lists(checkout)
