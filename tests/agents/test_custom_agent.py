"""`--agent module:Class` / `module:factory`: a researcher's own agent, written outside the repository, run by
`mintgym eval` and `mintgym rollout` (subprocesses, as a user runs them), with an engine when asked."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import httpx
import pytest

from mintgym.agents import make_agent
from mintgym.cli.agent_options import AgentChoice, build_agent

AGENT_MODULE = '''
from mintgym.action_spaces import Done
from mintgym.inference import GenerationRequest, SamplingParams
from mintgym.policy import AgentStep


class MyAgent:
    """Answers a fixed text; the null task's echo wants "ok"."""

    name = "mine"

    def __init__(self, answer="ok", engine=None):
        self.answer, self.engine, self.seen = answer, engine, None

    async def start(self, context):
        self.seen = context.instruction

    async def act(self, observation):
        answer = self.answer
        if self.engine is not None:  # ask the model for the answer instead
            [g] = await self.engine.agenerate([GenerationRequest([{"role": "user", "content": self.seen}],
                                                                 SamplingParams(max_new_tokens=8))])
            answer = g.text
        return AgentStep(Done(answer=answer), text=f"done(answer={answer!r})")


def make(answer="ok", engine=None):
    return MyAgent(answer, engine)


class NotAnAgent:
    name = "bad"

    def act(self, observation):
        return None
'''


_spec = importlib.util.spec_from_file_location(
    "mintgym_tests_outside", Path(__file__).parents[1] / "cli" / "outside.py")
outside = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(outside)


@pytest.fixture(scope="module")
def agent_dir(tmp_path_factory) -> Path:
    return outside.write_package(tmp_path_factory.mktemp("byo-agent"), {"myagents.agent": AGENT_MODULE})


def mintgym(agent_dir: Path, *args: str):
    return outside.mintgym(*args, path=agent_dir)


def test_eval_runs_a_class_from_outside_the_repo(agent_dir, tmp_path):
    out = tmp_path / "eval"
    proc = mintgym(agent_dir, "eval", "--tasks", "null/echo", "--agent", "myagents.agent:MyAgent", "--episodes", "2",
                   "--no-progress", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "2/2 succeeded" in proc.stdout and "0 of 2 episodes errored" in proc.stdout
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["agent"] == "myagents.agent:MyAgent" and results["overall"]["successes"] == 2


def test_rollout_runs_a_factory_with_agent_options(agent_dir, tmp_path):
    proc = mintgym(agent_dir, "rollout", "--task", "null/echo", "--agent", "myagents.agent:make",
                   "--agent-option", 'answer="nope"', "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    assert "failure reward=0.000" in proc.stdout and "0/1 succeeded, 0 errored" in proc.stdout
    meta = json.loads(next((tmp_path / "r").glob("*/meta.json")).read_text())
    assert meta["agent"] == "mine"


@pytest.mark.parametrize("spec, expected", [
    ("myagents.nosuch:MyAgent", "cannot import module 'myagents.nosuch'"),
    ("myagents.agent:Missing", "has no attribute 'Missing'"),
    ("myagents.agent:NotAnAgent", "needs an `async def start(...)`"),
    ("nonsense", "unknown agent 'nonsense'"),
])
def test_a_bad_agent_is_one_line_before_any_server_starts(agent_dir, spec, expected):
    proc = mintgym(agent_dir, "eval", "--tasks", "null/echo", "--agent", spec, "--no-progress")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and expected in proc.stderr, proc.stderr


def test_a_custom_agent_gets_the_engine_it_asks_for(agent_dir, model_server, tmp_path):
    httpx.post(f"{model_server}/control/byo", json=["ok"]).raise_for_status()
    proc = mintgym(agent_dir, "eval", "--tasks", "null/echo", "--agent", "myagents.agent:make", "--model-url",
                   f"{model_server}/script-byo/v1", "--no-progress", "--out", str(tmp_path / "e"))
    assert proc.returncode == 0, proc.stderr
    assert "1/1 succeeded" in proc.stdout
    seen = httpx.get(f"{model_server}/control/requests").json()
    assert any(r["mode"] == "script-byo" and r["texts"] == ['Answer "ok".'] for r in seen)
    results = json.loads((tmp_path / "e" / "results.json").read_text())
    assert results["config"]["engine"] == "openai"


def test_make_agent_in_process(agent_dir, monkeypatch):
    monkeypatch.syspath_prepend(str(agent_dir))
    agent = make_agent("myagents.agent:make", answer="x")
    assert agent.name == "mine" and agent.answer == "x"
    with pytest.raises(ValueError, match="does not take the options"):
        make_agent("myagents.agent:MyAgent", colour="red")
    built = build_agent(AgentChoice(agent="myagents.agent:MyAgent", agent_option=("answer=42",)))
    assert built.make().answer == 42 and built.describe["agent_options"] == {"answer": 42}
    assert not built.needs_oracle and build_agent(AgentChoice(agent="scripted")).needs_oracle
