"""Agent-made faults are the agent's failures: the episode ends terminated with reward 0 and a reason, the
server answers 200 (not 5xx), counts no failure, gives a working environment for the next reset, and a
rollout records the episode as ``failure`` (trained on, never retried), not ``error``."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import ClassVar

import httpx
import pytest
import uvicorn

from mintgym.action_spaces import Done, Type
from mintgym.env.core import EnvironmentHost
from mintgym.env.episode import AgentFault, Episode
from mintgym.environments.null import NullEnvironment, tasks
from mintgym.policy import AgentStep
from mintgym.server.app import create_app

ECHO = tasks()[0]


class FaultyEnvironment(NullEnvironment):
    """Typing "boom" is an action the environment cannot survive; "kill" also leaves it dead."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.dead = False

    async def execute(self, action):
        if isinstance(action, Type) and action.text in ("boom", "kill"):
            self.answer = "ok"  # state that would score 1.0 if anything evaluated it
            self.dead = action.text == "kill"
            raise AgentFault(f"the agent typed {action.text!r}, which the input layer cannot handle")
        await super().execute(action)

    async def alive(self) -> bool:
        return not self.dead


class FaultyHost(EnvironmentHost):
    domain: ClassVar[str] = "null"

    def __init__(self):
        self.created = 0

    async def create(self, options):
        self.created += 1
        env = FaultyEnvironment(**options)
        await env.start()
        return env


async def test_episode_ends_as_the_agents_failure():
    env = FaultyEnvironment(width=64, height=48)
    episode = Episode(env)
    await episode.reset(ECHO, 0)
    outcome = await episode.step(Type(text="boom"))
    assert outcome.terminated and not outcome.truncated and outcome.reward == 0.0
    assert outcome.info["agent_fault"] is True and "cannot handle" in outcome.info["failure"]
    assert outcome.observation.last_error == outcome.info["failure"]
    assert await episode.evaluate() == 0.0  # the env's state says "ok", but the episode was broken by the agent
    await episode.reset(ECHO, 0)
    outcome = await episode.step(Done(answer="ok"))
    assert outcome.reward == 1.0 and "agent_fault" not in outcome.info


@pytest.fixture
def server():
    host = FaultyHost()
    app = create_app(host, token="t0k", sweep_seconds=3600)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.05)
    yield url, host, app
    srv.should_exit = True
    thread.join(10)
    sock.close()


def _step(url: str, sid: str, text: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/sessions/{sid}/step", headers={"Authorization": "Bearer t0k"},
                      json={"action_text": text, "frame": {"encoding": "raw"}}, timeout=30)


@pytest.mark.parametrize("what", ["boom", "kill"])
def test_server_answers_200_and_the_next_reset_works(server, what):
    from mintgym.wire import unpack_frame

    url, host, app = server
    headers = {"Authorization": "Bearer t0k"}
    sid = httpx.post(f"{url}/v1/sessions", headers=headers, json={"env_options": {"width": 64, "height": 48}},
                     timeout=30).json()["session_id"]
    assert httpx.post(f"{url}/v1/sessions/{sid}/reset", headers=headers, json={"task_id": "null/echo"},
                      timeout=30).status_code == 200
    resp = _step(url, sid, f'type(text="{what}")')
    assert resp.status_code == 200, resp.text
    obs, meta = unpack_frame(resp.content)
    assert meta.terminated and meta.reward == 0.0 and meta.info["agent_fault"] is True
    assert obs.screenshot.shape == (48, 64, 3)
    assert _step(url, sid, "wait()").status_code == 409  # the episode is over
    assert httpx.post(f"{url}/v1/sessions/{sid}/evaluate", headers=headers, timeout=30).json()["score"] == 0.0
    assert httpx.post(f"{url}/v1/sessions/{sid}/reset", headers=headers, json={}, timeout=30).status_code == 200
    assert _step(url, sid, 'done(answer="ok")').status_code == 200
    manager = app.state.manager
    assert manager.failed_requests == 0 and manager.replaced == 0
    assert host.created == (2 if what == "kill" else 1)  # a dead environment was renewed quietly


class BoomAgent:
    name = "boom"

    async def start(self, context) -> None:
        pass

    async def act(self, observation) -> AgentStep:
        return AgentStep(action=Type(text="boom"), text='type(text="boom")')


def test_rollout_records_a_failure_not_an_error(server):
    from mintgym.client.aio import AsyncEnvClient
    from mintgym.rollout.episode import run_episode

    url, _, _ = server

    async def play():
        async with AsyncEnvClient(url, token="t0k", encoding="raw") as client:
            session = await client.session(env_options={"width": 64, "height": 48})
            try:
                return await run_episode(session, BoomAgent(), "null/echo", seed=0)
            finally:
                await session.close()

    traj = asyncio.run(play())
    assert traj.status == "failure" and traj.total_reward == 0.0
    assert traj.extra["fault"] == "agent_action" and "cannot handle" in traj.error
