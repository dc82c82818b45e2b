"""A researcher's own web task pack, written in a folder outside the repository (a module on PYTHONPATH):
`mintgym rollout --packs ... --agent scripted` runs it through the default (local) backend, whose server
learns of the pack only by forwarding, and `mintgym check` passes on it. A pack that cannot be forwarded
is a clear error naming why."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from mintgym.env import registration

_spec = importlib.util.spec_from_file_location("mintgym_tests_outside", Path(__file__).with_name("outside.py"))
outside = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(outside)

PACK = '''
from dataclasses import dataclass

from mintgym.environments.web.task import WebTask
from mintgym.environments.web.ui import click_text

PAGE = ("<body style='margin:0'><button style='position:absolute;left:40px;top:40px;width:200px;height:80px;"
        "background:#0a0;font-size:30px' onclick='window.clicked=true'>Green</button></body>")


@dataclass
class GreenButton(WebTask):
    async def setup(self, env, rng):
        await env.open("about:blank")
        await env.main_page.set_content(PAGE)

    async def evaluate(self, env):
        return 1.0 if await env.main_page.evaluate("window.clicked === true") else 0.0

    def oracle(self, env):
        return click_text(env, "Green")


@dataclass
class Unscored(WebTask):
    """Scores 1 before anything is done: the check must catch it."""

    async def setup(self, env, rng):
        await env.open("about:blank")

    async def evaluate(self, env):
        return 1.0

    def oracle(self, env):
        return click_text(env, "nothing here")


def tasks():
    return [GreenButton(id="mine/green-button", instruction="Click the green button.", max_steps=5,
                        family="mine", tags=("deterministic",), viewport=(320, 200))]


def broken():
    return [Unscored(id="mine/unscored", instruction="Nothing to do.", max_steps=3, family="mine")]
'''


@pytest.fixture(scope="module")
def pack_dir(tmp_path_factory) -> Path:
    return outside.write_package(tmp_path_factory.mktemp("outside-the-repo"), {"mypkg.tasks": PACK})


def mintgym(pack_dir: Path, *args: str):
    return outside.mintgym(*args, path=pack_dir)


def test_rollout_of_an_outside_pack_through_the_default_backend(pack_dir, tmp_path):
    proc = mintgym(pack_dir, "rollout", "--packs", "mypkg.tasks:tasks", "--task", "mine/green-button", "--agent",
                   "scripted", "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr
    assert "mine/green-button seed=0: success reward=1.000" in proc.stdout and "1/1 succeeded" in proc.stdout


def test_check_passes_on_the_pack_and_catches_a_bad_task(pack_dir):
    proc = mintgym(pack_dir, "check", "mypkg.tasks:tasks")
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("mine/green-button"))
    assert row.split() == ["mine/green-button", "ok", "ok", "ok", "ok"]  # untouched, oracle, check_env, determinism
    assert "1 tasks: 1 pass, 0 fail" in proc.stdout
    bad = mintgym(pack_dir, "check", "--packs", "mypkg.tasks:broken", "mine/unscored")
    assert bad.returncode == 1
    row = next(line for line in bad.stdout.splitlines() if line.startswith("mine/unscored"))
    assert "the untouched state scores 1.0" in row and "oracle: " in row and row.split()[1:3] == ["FAIL", "FAIL"]


def test_tasks_lists_a_pack_and_a_bad_pack_is_one_line(pack_dir):
    listed = [json.loads(line) for line in mintgym(pack_dir, "tasks", "mine", "--json", "--packs",
                                                   "mypkg.tasks:tasks").stdout.splitlines()]
    assert [t["id"] for t in listed] == ["mine/green-button"] and listed[0]["available"]
    for spec, said in [("mypkg.tasks", "module:function"), ("mypkg.nosuch:tasks", "cannot import 'mypkg.nosuch'"),
                       ("mypkg.tasks:nothing", "has no 'nothing'")]:
        proc = mintgym(pack_dir, "rollout", "--packs", spec, "--task", "mine/green-button")
        assert proc.returncode == 2 and said in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def _lambda_pack():
    from mintgym.environments.null import EchoTask

    return [EchoTask(id="null/lambda-echo", instruction='Answer "ok".', family="null")]


def test_a_pack_that_cannot_be_forwarded_says_why(monkeypatch):
    monkeypatch.delenv(registration.PACKS_ENV, raising=False)
    registration.register_tasks("test-forward-lambda", lambda: _lambda_pack())
    try:
        registration.tasks()
        env = registration.forwarding_environment()
        assert "test-forward-lambda" not in json.loads(env.get(registration.PACKS_ENV, "{}"))
        why = json.loads(env[registration.UNFORWARDED_ENV])["test-forward-lambda"]
        assert "lambda" in why and "module-level function" in why
        assert "cannot be forwarded" in registration.forwarding_problem("null/lambda-echo")
        assert registration.forwarding_problem("null/echo") is None
        import mintgym  # refused before a server starts, with the pack and why

        with pytest.raises(registration.RegistrationError, match="cannot run 'null/lambda-echo' on the 'local' "
                                                                 "backend: task pack 'test-forward-lambda' cannot be "
                                                                 "forwarded .*lambda"):
            mintgym.make("null/lambda-echo")
        # what the server started with that environment answers for the lambda's task
        monkeypatch.setenv(registration.UNFORWARDED_ENV, env[registration.UNFORWARDED_ENV])
        with pytest.raises(KeyError, match="could not be forwarded: .*test-forward-lambda: .*lambda"):
            registration.task("null/lambda-echo-x")
    finally:
        registration._pack_refs.pop("test-forward-lambda", None)
        registration._runtime_packs.discard("test-forward-lambda")
        registration._all().pop("null/lambda-echo", None)


NULL_PACK = '''
from mintgym.environments.null import EchoTask


def tasks():
    return [EchoTask(id="mine/echo", instruction='Answer "ok".', family="mine")]
'''


def test_a_function_registered_at_run_time_reaches_a_local_server(tmp_path, monkeypatch):
    """The issue's first complaint: register_tasks(...) then mintgym.make("mine/...") on the default backend."""
    import importlib

    import mintgym

    monkeypatch.delenv(registration.PACKS_ENV, raising=False)
    monkeypatch.syspath_prepend(str(outside.write_package(tmp_path, {"runtimepack.tasks": NULL_PACK})))
    module = importlib.import_module("runtimepack.tasks")
    registration.register_tasks("test-runtime-pack", module.tasks)
    try:
        forwarded = registration.forwarding_environment()
        assert json.loads(forwarded[registration.PACKS_ENV])["test-runtime-pack"] == "runtimepack.tasks:tasks"
        assert str(tmp_path) in forwarded["PYTHONPATH"].split(":")
        env = mintgym.make("mine/echo")
        try:
            env.reset(seed=0)
            _, reward, terminated, _, _ = env.step('done(answer="ok")')
        finally:
            env.close()
        assert terminated and reward == 1.0
    finally:
        registration._pack_refs.pop("test-runtime-pack", None)
        registration._runtime_packs.discard("test-runtime-pack")
        registration._all().pop("mine/echo", None)


TASK_FILE = """
# a researcher's task file, outside the repository
tasks:
  - id: pytool/mine/answer-v1
    domain: pytool
    instruction: What is six times seven?
    max_steps: 3
    scorer: {type: number, value: 42}
    oracle:
      - {type: done, answer: "42"}
  - id: pytool/mine/unsolved-v1
    domain: pytool
    instruction: What is six times eight?
    scorer: {type: number, value: 48}
"""


def test_a_task_file_runs_and_checks_through_the_default_backend(tmp_path):
    (tmp_path / "tasks.yaml").write_text(TASK_FILE)
    proc = outside.mintgym("rollout", "--packs", "tasks.yaml", "--task", "mine/answer-v1", "--agent", "scripted",
                           "--out", str(tmp_path / "run"), path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "mine/answer-v1 seed=0: success reward=1.000" in proc.stdout
    checked = outside.mintgym("check", "tasks.yaml", path=tmp_path)
    rows = {line.split()[0]: line for line in checked.stdout.splitlines() if line.startswith("pytool/mine/")}
    assert rows["pytool/mine/answer-v1"].split() == ["pytool/mine/answer-v1", "ok", "ok", "ok", "n/a"]
    unsolved = rows["pytool/mine/unsolved-v1"]
    assert "no oracle" in unsolved and "the task ships no oracle" in unsolved
    assert checked.returncode == 1 and "2 tasks: 1 pass, 1 fail" in checked.stdout


def test_a_bad_task_file_is_one_line(tmp_path):
    (tmp_path / "tasks.yaml").write_text(TASK_FILE.replace("type: number, value: 42", "type: numbr, value: 42"))
    for args in (["check", "tasks.yaml"], ["rollout", "--packs", "tasks.yaml", "--task", "mine/answer-v1"]):
        proc = outside.mintgym(*args, path=tmp_path)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "tasks.yaml: task 'pytool/mine/answer-v1': field 'scorer': Input tag 'numbr'" in proc.stderr
