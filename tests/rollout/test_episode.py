"""How an episode ends, and whether training may use it (``drop_cause``): against a real null env server and the
real hf engine, an episode that fails through the agent's own doing (its prompt outgrew the context, it kept
acting past the wall-clock budget) is a failure to train on; one the infrastructure broke (the env stalled or
failed, the reset failed, the agent's engine raised) is dropped, under its cause."""

from __future__ import annotations

import asyncio

import pytest

from mintgym.action_spaces import Click
from mintgym.client.aio import AsyncEnvClient
from mintgym.environments.null import NullEnvironment, NullHost
from mintgym.inference import GenerationRequest, SamplingParams
from mintgym.inference.hf import HFEngine
from mintgym.policy import AgentStep
from mintgym.rollout.episode import play_pooled
from mintgym.runtime.pool import EnvPool
from mintgym.server.app import create_app
from mintgym.testing import serve_asgi

pytestmark = pytest.mark.asyncio


class _StallingEnvironment(NullEnvironment):
    """A null environment whose second action never finishes (a hung browser, a stuck VM)."""

    async def execute(self, action) -> None:
        if self.actions:
            await asyncio.sleep(3600)
        await super().execute(action)


class _StallingHost(NullHost):
    env_cls = _StallingEnvironment


class _Talker:
    """An agent that asks the model each turn, its prompt growing by ``grow`` words a turn, and clicks; it
    sleeps ``think[k]`` seconds after the model's answer at turn k."""

    name = "talker"

    def __init__(self, engine, grow: int = 0, think: tuple[float, ...] = ()):
        self.engine, self.grow, self.think, self.turn = engine, grow, think, 0

    async def start(self, context) -> None:
        self.turn = 0

    async def act(self, observation) -> AgentStep:
        text = "Click the button." + " again" * (self.grow * self.turn)
        [g] = await self.engine.agenerate([GenerationRequest([{"role": "user", "content": text}],
                                                             SamplingParams(max_new_tokens=2, seed=self.turn))])
        if self.turn < len(self.think):
            await asyncio.sleep(self.think[self.turn])
        self.turn += 1
        return AgentStep(Click(x=1, y=1), text=g.text, prompt_token_ids=g.prompt_token_ids,
                         response_token_ids=g.response_token_ids, logprobs=g.response_logprobs,
                         policy_version=g.policy_version)


class _Broken:
    name = "broken"

    async def start(self, context) -> None:
        pass

    async def act(self, observation) -> AgentStep:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")


@pytest.fixture(scope="module")
def servers():
    with serve_asgi(create_app(NullHost())) as null, serve_asgi(create_app(_StallingHost())) as stalling:
        yield null, stalling


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from mintgym.models.tiny import build_tiny_vlm

    return HFEngine(build_tiny_vlm(tmp_path_factory.mktemp("tiny"), vocab_size=256))


def drop_cause(traj):
    from mintgym.rollout.episode import drop_cause

    return drop_cause(traj)


async def play(url, agent, task_id="null/echo", max_seconds=None):
    async with AsyncEnvClient(url) as client:
        pool = await EnvPool(client, 1, env_options={"width": 32, "height": 32}).start()
        try:
            return await play_pooled(pool, agent, task_id, 0, "ep", max_seconds=max_seconds)
        finally:
            await pool.close()


async def test_a_prompt_that_outgrew_the_context_is_the_agents_failure(servers, engine):
    first = len(engine.generate([GenerationRequest([{"role": "user", "content": "Click the button."}],
                                                   SamplingParams(max_new_tokens=1))])[0].prompt_token_ids)
    small = HFEngine(model=engine.model, processor=engine.processor, max_model_len=first + 3)
    traj = await play(servers[0], _Talker(small, grow=8))
    assert traj.status == "failure" and traj.extra["fault"] == "context" and traj.total_reward == 0.0
    assert traj.error.startswith("context overflow: ") and "max_model_len" in traj.error
    assert len(traj.steps) == 1 and len(traj.steps[0].response_token_ids) <= 2  # turn 1 fit, and is kept
    assert drop_cause(traj) is None


async def test_a_timeout_while_the_agent_acts_is_its_own(servers, engine):
    traj = await play(servers[0], _Talker(engine, think=(0.0, 600.0)), max_seconds=3)
    assert traj.status == "timeout" and traj.extra["timeout_in"] == "agent" and len(traj.steps) == 1
    assert drop_cause(traj) is None


async def test_a_timeout_while_the_env_stalls_drops_the_group(servers, engine):
    traj = await play(servers[1], _Talker(engine), max_seconds=3)
    assert traj.status == "timeout" and traj.extra["timeout_in"] == "env" and len(traj.steps) == 1
    assert drop_cause(traj) == "env_stall"


async def test_infrastructure_faults_drop_the_group_under_their_cause(servers):
    assert drop_cause(await play(servers[0], _Broken())) == "policy_error"
    assert drop_cause(await play(servers[0], _Broken(), task_id="null/no-such-task")) == "reset_failed"
