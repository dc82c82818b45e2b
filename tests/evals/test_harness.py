"""The evaluation harness end to end: real env servers (null, pytool) as subprocesses, a real misbehaving
model server on loopback, results.json, report.html, resume, and faults that must be reported, not dropped."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
from typer.testing import CliRunner

from mintgym.agents.scripted import ScriptedAgent
from mintgym.agents.vlm import VLMAgent
from mintgym.env import registration
from mintgym.env.core import Environment, Task
from mintgym.errors import MintGymError
from mintgym.evals.harness import EvalConfig, episode_key, plan_jobs, run_eval
from mintgym.evals.suites import Benchmark, benchmark_for_tasks, matches, resolve_suite, suite_names
from mintgym.inference import make_engine
from mintgym.policy import AgentContext
from mintgym.testing import serve_asgi

AGENT_TESTS = Path(__file__).resolve().parents[1] / "agents"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def model_server():
    helpers = _load("mintgym_tests_agents_conftest", AGENT_TESTS / "conftest.py")
    with serve_asgi(helpers.load_model_server().create_app()) as url:
        yield url


def config(out: Path, **kw) -> EvalConfig:
    return EvalConfig(out=out, progress=False, **kw)


def vlm(url: str, mode: str, **kw) -> VLMAgent:
    engine = make_engine("openai", base_url=f"{url}/{mode}/v1", backoff_s=0.01, backoff_max_s=0.02, max_retries=1)
    return VLMAgent(engine, **kw)


class CrashingAgent:
    name = "crashing"

    async def start(self, context: AgentContext) -> None:
        pass

    async def act(self, observation):
        raise RuntimeError("the policy exploded")


@dataclass
class UnavailableTask(Task):
    domain: ClassVar[str] = "null"

    async def evaluate(self, env: Environment) -> float:
        return 0.0

    def unavailable(self) -> str | None:
        return "needs an app this machine does not have"


@pytest.fixture(scope="module")
def unavailable_task():
    registration.register_tasks("harness-test-unavailable",
                                lambda: [UnavailableTask(id="null/needs-app", instruction="n/a", family="null")])
    return "null/needs-app"


NULL = Benchmark(name="null-test", task_ids=("null/echo",))


def test_plan_gives_one_stable_job_per_runnable_task_and_seed():
    bench = Benchmark(name="b", task_ids=("t/a", "t/b"), seeds=(0, 1), skipped=(("t/b", "not here"),))
    assert [(j.task_id, j.seed, j.key) for j in plan_jobs(bench, EvalConfig(out=None))] == [
        ("t/a", 0, "t__a-seed0"), ("t/a", 1, "t__a-seed1")]
    assert [j.seed for j in plan_jobs(bench, EvalConfig(out=None, seed=10))] == [10, 11]
    assert [j.seed for j in plan_jobs(bench, EvalConfig(out=None, episodes=3, seed=5))] == [5, 6, 7]
    with pytest.raises(ValueError, match="episodes"):
        plan_jobs(bench, EvalConfig(out=None, episodes=0))


def test_scripted_eval_writes_results_report_and_viewer_pages(tmp_path):
    results = run_eval(resolve_suite("smoke"), ScriptedAgent, config(tmp_path, episodes=3, concurrency=2))
    overall = results["overall"]
    assert overall["episodes"] == 3 and overall["success_rate"] == 1.0 and overall["errors"]["count"] == 0
    lo, hi = overall["success_ci95"]
    assert 0.3 < lo < 1.0 and hi == 1.0
    assert set(results["tasks"]) == {"null/echo"} and set(results["domains"]) == {"null"}
    assert results["tasks"]["null/echo"]["family"] == "null" and set(results["families"]) == {"null"}
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert on_disk["overall"]["successes"] == 3
    report = (tmp_path / "report.html").read_text()
    for seed in range(3):
        link = f"trajectories/{episode_key('null/echo', seed)}/index.html"
        assert link in report and (tmp_path / link).is_file()
    assert "<svg" in report and (tmp_path / "trajectories" / "index.html").is_file()


def test_rerun_resumes_finished_episodes_and_reruns_unfinished_ones(tmp_path):
    run_eval(NULL, ScriptedAgent, config(tmp_path, episodes=2))
    metas = sorted((tmp_path / "trajectories").glob("*/meta.json"))
    stamps = [m.stat().st_mtime_ns for m in metas]
    # Everything is done: no env server is needed, so a backend that does not exist is never asked.
    again = run_eval(NULL, ScriptedAgent, config(tmp_path, episodes=2, backend="no-such-backend"))
    assert again["overall"]["successes"] == 2 and [m.stat().st_mtime_ns for m in metas] == stamps
    meta = json.loads(metas[0].read_text())
    metas[0].write_text(json.dumps({**meta, "status": "running"}))  # as if interrupted mid-episode
    third = run_eval(NULL, ScriptedAgent, config(tmp_path, episodes=2))
    assert third["overall"]["successes"] == 2
    assert metas[0].stat().st_mtime_ns != stamps[0] and metas[1].stat().st_mtime_ns == stamps[1]


def test_a_rerun_by_another_agent_is_refused_touching_nothing_and_force_starts_afresh(tmp_path):
    out = tmp_path / "e"
    run_eval(NULL, ScriptedAgent, config(out, episodes=2, describe={"agent": "scripted"}))
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    with pytest.raises(MintGymError, match=r"e was made by --agent scripted; this run is --agent crashing: give "
                                           r"another --out, or --force to start over"):
        run_eval(NULL, CrashingAgent, config(out, episodes=2, describe={"agent": "crashing"}))
    with pytest.raises(MintGymError, match=r"e was made by seeds 0, 1; this run is seeds 0"):
        run_eval(NULL, ScriptedAgent, config(out, episodes=1, describe={"agent": "scripted"}))
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before
    results = run_eval(NULL, CrashingAgent, config(out, episodes=2, describe={"agent": "crashing"}, force=True))
    assert results["overall"]["errors"]["count"] == 2 and results["resumed_episodes"] == 0
    [aside] = [p for p in tmp_path.iterdir() if p.name.startswith("e.before-")]
    assert results["moved_aside"] == str(aside)
    assert json.loads((aside / "results.json").read_text())["overall"]["successes"] == 2


def test_recorded_episodes_of_a_task_skipped_now_are_listed_not_dropped(tmp_path):
    two = Benchmark(name="two", task_ids=("null/echo", "pytool/count-shapes-0"))
    first = run_eval(two, ScriptedAgent, config(tmp_path))
    assert first["overall"]["episodes"] == 2
    gone = replace(two, skipped=(("pytool/count-shapes-0", "no Python sandbox here now"),))
    again = run_eval(gone, ScriptedAgent, config(tmp_path, backend="no-such-backend"))  # nothing left to run
    assert again["overall"]["episodes"] == 1 and again["resumed_episodes"] == 1
    assert again["not_counted"] == [{"key": "pytool__count-shapes-0-seed0", "task_id": "pytool/count-shapes-0",
                                     "reason": "its task is skipped here now: no Python sandbox here now"}]
    assert json.loads((tmp_path / "results.json").read_text())["not_counted"] == again["not_counted"]


def test_a_crashing_agent_counts_as_failures_with_the_reason(tmp_path):
    results = run_eval(NULL, CrashingAgent, config(tmp_path, episodes=2, concurrency=2))
    overall = results["overall"]
    assert overall["episodes"] == 2 and overall["success_rate"] == 0.0
    assert overall["errors"]["count"] == 2
    [reason] = overall["errors"]["reasons"]
    assert "the policy exploded" in reason
    assert "the policy exploded" in (tmp_path / "report.html").read_text()


def test_garbage_answers_are_invalid_steps_until_the_step_limit(tmp_path, model_server):
    httpx.post(f"{model_server}/control/garbage", json=["Sure! I will now click on it :)"]).raise_for_status()
    bench = Benchmark(name="garbage", task_ids=("null/echo",), max_steps=3)
    results = run_eval(bench, lambda: vlm(model_server, "script-garbage"), config(tmp_path, episodes=1))
    task = results["tasks"]["null/echo"]
    assert task["episodes"] == 1 and task["success_rate"] == 0.0 and task["errors"]["count"] == 0
    assert task["invalid_steps"] == 3 and task["logprob_steps"] == 3 and task["mean_steps"] == 3
    [ep] = results["episodes"]
    steps = [json.loads(line) for line in (tmp_path / ep["path"] / "steps.jsonl").read_text().splitlines()]
    assert [s["action"] is None for s in steps] == [True, True, True]
    assert all(s["text"] == "Sure! I will now click on it :)" for s in steps)
    # the limit truncates on the server (gymnasium semantics); it used to inject done(success=False) as a 4th
    # step, terminated, which OSWorld's scoring reads as the agent declaring an infeasible task infeasible
    assert [(s["terminated"], s["truncated"]) for s in steps] == [(False, False), (False, False), (False, True)]


def test_model_server_faults_end_episodes_cleanly_and_eval_goes_on(tmp_path, model_server):
    results = run_eval(NULL, lambda: vlm(model_server, "error500"), config(tmp_path, episodes=2, concurrency=2))
    overall = results["overall"]
    assert overall["episodes"] == 2 and overall["errors"]["count"] == 2
    assert all("HTTP 500" in reason for reason in overall["errors"]["reasons"])
    assert all(ep["status"] == "error" for ep in results["episodes"])


def test_an_unreachable_env_server_fails_every_episode_with_the_reason(tmp_path):
    results = run_eval(NULL, ScriptedAgent, config(tmp_path, episodes=2, env_url="http://127.0.0.1:9"))
    assert results["overall"]["errors"]["count"] == 2
    [reason] = results["overall"]["errors"]["reasons"]
    assert "env server for 'null' failed" in reason


def test_unavailable_tasks_are_listed_as_skipped_with_the_reason(tmp_path, unavailable_task):
    bench = benchmark_for_tasks(["null/echo", unavailable_task])
    results = run_eval(bench, ScriptedAgent, config(tmp_path))
    assert results["skipped"] == [{"task_id": unavailable_task,
                                   "reason": "needs an app this machine does not have"}]
    assert set(results["tasks"]) == {"null/echo"}
    assert "needs an app this machine does not have" in (tmp_path / "report.html").read_text()


def test_unknown_suite_or_task_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown suite 'nope'; suites: .*pytool-all"):
        resolve_suite("nope")
    assert {"pytool-all", "miniwob-all", "miniwob-easy", "osworld-offline", "webapps", "desktop-all",
            "android-all"} <= set(suite_names())
    with pytest.raises(KeyError, match="unknown task id"):
        benchmark_for_tasks(["null/ech"])


@dataclass
class FakeTask:
    id: str
    domain: str = "web"
    family: str = ""
    tags: tuple[str, ...] = ()
    reason: str | None = None

    def unavailable(self) -> str | None:
        return self.reason


def test_suites_are_filters_over_the_registry():
    tasks = [FakeTask("miniwob/click-button-v0"), FakeTask("miniwob/book-flight", tags=("difficulty:hard",)),
             FakeTask("miniwob/odd-one", tags=("difficulty:easy",)), FakeTask("webapps/shop-buy-lamp"),
             FakeTask("osworld/a", "desktop", reason="needs the internet"), FakeTask("osworld/b", "desktop")]
    easy = resolve_suite("miniwob-easy", tasks)
    assert easy.task_ids == ("miniwob/click-button-v0", "miniwob/odd-one") and easy.action_set == "web"
    assert resolve_suite("miniwob-all", tasks).task_ids == ("miniwob/book-flight", "miniwob/click-button-v0",
                                                            "miniwob/odd-one")
    assert resolve_suite("osworld-offline", tasks).task_ids == ("osworld/b",)
    desktop = resolve_suite("desktop-all", tasks)
    assert desktop.task_ids == ("osworld/a", "osworld/b") and desktop.skipped == (("osworld/a", "needs the internet"),)
    assert matches(tasks[0], {"names": ["click-button"]}) and not matches(tasks[0], {"domain": "android"})
    with pytest.raises(ValueError, match="selects no registered task"):
        resolve_suite("android-all", tasks)


def test_pytool_suite_resolves_from_the_registry():
    bench = resolve_suite("pytool-all")
    assert len(bench.task_ids) >= 3 and all(t.startswith("pytool/") for t in bench.task_ids)
    assert bench.action_set == "pytool" and bench.seeds == (0,)


def test_cli_eval_on_pytool_tasks_with_the_scripted_agent(tmp_path):
    from mintgym.cli import app

    ids = [t.id for t in registration.tasks(prefix="pytool/")][::8][:3]
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--tasks", ",".join(ids), "--agent", "scripted", "--concurrency", "2",
                                      "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "3/3 succeeded" in result.output
    results = json.loads((out / "results.json").read_text())
    assert set(results["tasks"]) == set(ids) and results["overall"]["success_rate"] == 1.0
    assert len(results["families"]) == 3


def test_cli_eval_with_the_vlm_agent_records_logprobs(tmp_path, model_server):
    from mintgym.cli import app

    httpx.post(f"{model_server}/control/cli", json=['done(answer="ok")']).raise_for_status()
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--tasks", "null/echo", "--agent", "vlm", "--engine", "openai",
                                      "--base-url", f"{model_server}/script-cli/v1", "--episodes", "2",
                                      "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["overall"]["successes"] == 2 and results["overall"]["logprob_steps"] == 2
    assert results["config"]["engine"] == "openai"


def test_cli_rejects_bad_input(tmp_path):
    from mintgym.cli import app

    runner = CliRunner()
    assert runner.invoke(app, ["eval", "--suite", "nope", "--out", str(tmp_path)]).exit_code == 2
    both = runner.invoke(app, ["eval", "--suite", "smoke", "--tasks", "null/echo", "--out", str(tmp_path)])
    assert both.exit_code != 0
    no_url = runner.invoke(app, ["eval", "--tasks", "null/echo", "--agent", "vlm", "--engine", "openai",
                                 "--out", str(tmp_path)])
    assert no_url.exit_code != 0 and "--model-url" in no_url.output


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_eval_against_serve_model_with_the_tiny_model_records_logprobs(tmp_path):
    """The acceptance path: `mintgym serve-model <tiny>` + `mintgym eval --agent vlm --engine openai`."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from mintgym.cli import app
    from mintgym.models.tiny import build_tiny_vlm

    model = build_tiny_vlm(str(tmp_path / "tiny"))
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "mintgym.cli", "serve-model", str(model), "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, "serve-model exited"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve-model did not become ready"
            time.sleep(0.5)
        ids = [t.id for t in registration.tasks(prefix="pytool/")][::8][:3]
        out = tmp_path / "v"
        result = CliRunner().invoke(app, [
            "eval", "--tasks", ",".join(ids), "--agent", "vlm", "--engine", "openai",
            "--base-url", f"http://127.0.0.1:{port}/v1", "--out", str(out), "--max-steps", "1",
            "--max-new-tokens", "8", "--max-pixels", "40000", "--no-progress"])
        assert result.exit_code == 0, result.output
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    results = json.loads((out / "results.json").read_text())
    assert results["overall"]["episodes"] == 3 and results["overall"]["errors"]["count"] == 0
    assert results["overall"]["logprob_steps"] == 3
    for ep in results["episodes"]:
        first = json.loads((out / ep["path"] / "steps.jsonl").read_text().splitlines()[0])
        assert first["logprobs"] and len(first["logprobs"]) == len(first["response_token_ids"])
        assert first["prompt_token_ids"] and first["policy_version"] == 0
