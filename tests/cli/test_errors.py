"""User mistakes end a command with one `error:` line saying what to do (`--debug` shows the traceback);
`envs`, `tasks` and `suites` say what can run here; the scripted agent reports tasks without an oracle as
"no oracle", not as errors (console, results.json, report.html)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("mintgym_tests_outside", Path(__file__).with_name("outside.py"))
outside = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(outside)

NO_ORACLE_PACK = '''
from dataclasses import dataclass
from typing import ClassVar

from mintgym.env.core import Task


@dataclass
class Unsolvable(Task):
    domain: ClassVar[str] = "null"

    async def evaluate(self, env):
        return 0.0


def tasks():
    return [Unsolvable(id="mine/no-oracle", instruction="Nothing.", family="mine")]
'''


mintgym = outside.mintgym


@pytest.fixture(scope="module")
def pack_dir(tmp_path_factory) -> Path:
    return outside.write_package(tmp_path_factory.mktemp("no-oracle-pack"), {"nooracle": NO_ORACLE_PACK})


def test_unknown_task_is_one_line_and_debug_shows_the_traceback():
    proc = mintgym("rollout", "--task", "pytool/count-shape-0")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: unknown task id 'pytool/count-shape-0'")
    assert "did you mean pytool/count-shapes-0" in proc.stderr
    debug = mintgym("--debug", "rollout", "--task", "pytool/count-shape-0")
    assert debug.returncode != 0 and "Traceback" in debug.stderr and "RegistrationError" in debug.stderr


@pytest.mark.parametrize("args, said", [
    (("train", "--config", "/nonexistent/run.yaml", "--out", "OUT"), "/nonexistent/run.yaml: no such config file"),
    (("train", "--config", "{bad}", "--out", "OUT"), "train.nosuchkey: unknown key"),
    (("eval", "--tasks", "null/echo", "--agent", "vlm", "--model-url", "http://127.0.0.1:9/v1", "--model-retries",
      "0"), "cannot use the model server at http://127.0.0.1:9/v1"),
    (("eval", "--suite", "no-such-suite"), "unknown suite 'no-such-suite'; suites:"),
    (("eval", "--tasks", "null/echo", "--agent", "scripted", "--model", "m"), "options of agents that take an engine"),
    (("rollout", "--task", "null/echo", "--agent-option", "x"), "--agent-option wants KEY=VALUE"),
    (("rollout", "--task", "null/echo", "--agent", "vlm"), "the hf engine needs --model PATH"),
    (("rollout", "--task", "null/echo", "--agent", "vlm", "--engine", "hf", "--model", "m", "--token-ids", "on"),
     "--token-ids is an option of the openai engine"),
])
def test_mistakes_are_one_line(tmp_path, args, said):
    bad = tmp_path / "bad.yaml"
    bad.write_text("train:\n  nosuchkey: 3\n")
    args = tuple(str(bad) if a == "{bad}" else str(tmp_path / "out") if a == "OUT" else a for a in args)
    proc = mintgym(*args, "--out", str(tmp_path / "o")) if args[0] == "eval" else mintgym(*args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1 and said in proc.stderr, proc.stderr


@pytest.mark.parametrize("args, said", [
    (("rollout",), "Missing option '--task'. (see `"),
    (("eval", "--nosuch"), "No such option: --nosuch"),
    (("check",), "Missing argument 'target'."),
    (("tasks", "nosuch"), "no tasks for 'nosuch'; domains: "),
])
def test_usage_mistakes_are_one_line(args, said):
    proc = mintgym(*args)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
    assert said in proc.stderr, proc.stderr


def test_android_without_a_device_is_one_line_and_listed_as_not_runnable():
    no_adb = {"MINTGYM_ADB": "/nonexistent/adb"}
    proc = mintgym("rollout", "--task", "android/SystemWifiTurnOn", env=no_adb)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "cannot run here: no `adb` binary (install Android platform-tools" in proc.stderr
    envs = mintgym("envs", env=no_adb).stdout.splitlines()
    android = next(line for line in envs if line.startswith("android"))
    assert " 0 runnable here" in android and "no `adb` binary" in android
    assert any(line.startswith("null") and "1 runnable here" in line for line in envs)
    listed = [json.loads(line) for line in mintgym("tasks", "android", "--json", env=no_adb).stdout.splitlines()]
    assert listed and not any(t["available"] for t in listed) and "adb" in listed[0]["reason"]


def test_suites_lists_names_counts_and_descriptions():
    proc = mintgym("suites")
    assert proc.returncode == 0
    smoke = next(line for line in proc.stdout.splitlines() if line.startswith("smoke "))
    assert "1 (   1)" in smoke and "echo task" in smoke
    assert any(line.startswith("screenspot ") and "needs --data" in line for line in proc.stdout.splitlines())


def test_scripted_eval_reports_tasks_without_an_oracle_as_such(pack_dir, tmp_path):
    out = tmp_path / "eval"
    proc = mintgym("eval", "--packs", "nooracle:tasks", "--tasks", "null/echo,mine/no-oracle", "--agent", "scripted",
                   "--no-progress", "--out", str(out), path=pack_dir)
    assert proc.returncode == 0, proc.stderr
    assert "1/1 succeeded" in proc.stdout and "0 of 1 episodes errored" in proc.stdout
    assert "skipped 1 tasks with no oracle" in proc.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["no_oracle"] == [{"task_id": "mine/no-oracle", "reason": "no oracle"}]
    assert [e["task_id"] for e in results["episodes"]] == ["null/echo"] and results["overall"]["errors"]["count"] == 0
    assert "No oracle (1)" in (out / "report.html").read_text()
    single = mintgym("rollout", "--packs", "nooracle:tasks", "--task", "mine/no-oracle", "--out", str(tmp_path / "r"),
                     path=pack_dir)
    assert single.returncode == 0 and "mine/no-oracle: skipped, no oracle" in single.stdout
