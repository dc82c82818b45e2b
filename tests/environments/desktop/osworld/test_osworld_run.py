"""OSWorld tasks on real desktop sessions: config steps, evaluators, and oracles that score 1."""

import json

import pytest

from mintgym.env.episode import Episode
from mintgym.environments.desktop.osworld.loader import examples_dir, parse_task
from mintgym.environments.desktop.osworld.oracles import ORACLES
from mintgym.environments.desktop.osworld.steps import ConfigStepFailed, run_steps
from mintgym.environments.desktop.osworld.task import OSWorldTask
from mintgym.environments.desktop.osworld.tasks import tasks
from mintgym.testing import check_task

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module"),
              pytest.mark.skipif(examples_dir() is None, reason="the shared OSWorld data is not present")]

def _oracle_tasks():
    return sorted((t for t in tasks() if t.spec.id in ORACLES), key=lambda t: t.id)


def test_at_least_fifteen_oracles_over_three_apps():
    chosen = _oracle_tasks()
    assert len(chosen) >= 15
    assert len({t.spec.app for t in chosen}) >= 3


def _oracle_params():
    """Every oracle task; the default run plays the first of each app, the others are marked slow (each is a
    desktop session of 15-40 s on the 2-core box; ``pytest -m slow`` plays them all)."""
    seen: set[str] = set()
    params = []
    for task in _oracle_tasks():
        params.append(pytest.param(task, id=task.id, marks=[pytest.mark.slow] if task.spec.app in seen else []))
        seen.add(task.spec.app)
    return params


@pytest.mark.parametrize("task", _oracle_params())
async def test_oracle_scores_one_untouched_scores_zero(host, task):
    assert task.unavailable() is None, task.unavailable()
    await check_task(host, task)


async def test_unavailable_tasks_are_refused_not_scored(env):
    from mintgym.errors import TaskUnavailable

    blocked = [t for t in tasks() if t.unavailable()][0]
    with pytest.raises(TaskUnavailable, match="cannot run here"):
        await Episode(env).reset(blocked)


def _spec(tmp_path, config, evaluator=None):
    data = {"id": "local-1", "instruction": "x", "config": config, "evaluator": evaluator or {
        "func": "check_include_exclude", "result": {"type": "vm_command_line", "command": "cat ~/Desktop/a.txt",
                                                     "shell": True},
        "expected": {"type": "rule", "rules": {"include": ["hello"], "exclude": []}}}}
    f = tmp_path / "os" / "local-1.json"
    f.parent.mkdir(exist_ok=True)
    f.write_text(json.dumps(data))
    return parse_task(data, f)


async def test_config_steps_run_in_the_session_sandbox(env, tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("hello from a local file\n")
    spec = _spec(tmp_path, [
        {"type": "download", "parameters": {"files": [{"url": f"file://{src}", "path": "/home/user/Desktop/a.txt"}]}},
        {"type": "execute", "parameters": {"command": "id -u > /home/user/uid.txt; echo $HOME > /home/user/h.txt",
                                           "shell": True}},
        {"type": "launch", "parameters": {"command": ["mousepad", "/home/user/Desktop/a.txt"]}},
        {"type": "activate_window", "parameters": {"window_name": "a.txt"}},
        {"type": "sleep", "parameters": {"seconds": 0.1}},
    ])
    task = OSWorldTask.from_spec(spec)
    episode = Episode(env)
    await episode.reset(task, 0)
    assert (env.home / "Desktop" / "a.txt").read_text().startswith("hello")
    assert int((env.home / "uid.txt").read_text()) == env.sandbox.uid
    assert (env.home / "h.txt").read_text().strip() == str(env.home)
    assert await episode.evaluate() == 1.0


async def test_a_failing_config_step_raises_a_clear_error(env, tmp_path):
    await env.reset(None, 0)
    with pytest.raises(ConfigStepFailed, match=r"config\[0\] \(execute\).*exited with code 3"):
        await run_steps(env, _spec(tmp_path, [{"type": "execute", "parameters": {
            "command": "echo broken >&2; exit 3", "shell": True}}]).config)
    with pytest.raises(ConfigStepFailed, match="huggingface.co.*needs the internet"):
        await run_steps(env, _spec(tmp_path, [{"type": "download", "parameters": {"files": [
            {"url": "https://huggingface.co/x.txt", "path": "x.txt"}]}}]).config)
    with pytest.raises(ConfigStepFailed, match="did not finish"):
        await run_steps(env, _spec(tmp_path, [{"type": "execute", "parameters": {
            "command": "sleep 30", "shell": True, "timeout": 1}}]).config)
    with pytest.raises(ConfigStepFailed, match="not supported offline"):
        await run_steps(env, _spec(tmp_path, [{"type": "googledrive", "parameters": {}}]).config)
    assert await env.alive()
