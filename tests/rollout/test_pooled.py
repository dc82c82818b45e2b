"""``play_pooled``: the one episode loop eval (``run_jobs``) and training (the rollout worker) share, against a
real null env server: an episode returns its session for reuse, a failed reset is an error trajectory (on
disk too) and the pool goes on serving; an episode cancelled or ended by an unexpected error closes its
session on the server; a server that dies mid-run fails ``run_jobs`` by name instead of hanging it."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import httpx
import pytest

from mintgym.action_spaces import Done
from mintgym.agents.scripted import ScriptedAgent
from mintgym.client.aio import AsyncEnvClient
from mintgym.environments.null import NullHost
from mintgym.errors import ServerError
from mintgym.policy import AgentStep
from mintgym.rollout.episode import play_pooled
from mintgym.rollout.runner import EpisodeJob, run_jobs
from mintgym.runtime.fleet import start_env_servers
from mintgym.runtime.make import provider
from mintgym.runtime.pool import EnvPool
from mintgym.server.app import create_app
from mintgym.testing import serve_asgi
from mintgym.trajectory.store import load_trajectory

pytestmark = pytest.mark.asyncio


@pytest.fixture(scope="module")
def env_url():
    with serve_asgi(create_app(NullHost())) as url:
        yield url


async def test_an_episode_reuses_its_session_and_a_failed_reset_is_an_error_episode(env_url, tmp_path):
    async with AsyncEnvClient(env_url) as client:
        pool = await EnvPool(client, 1).start()
        try:
            first = await play_pooled(pool, ScriptedAgent(), "null/echo", 1, "ep-1", run_dir=tmp_path,
                                      group_id="g")
            assert first.status == "success" and first.group_id == "g" and pool.replaced == 0
            bad = await play_pooled(pool, ScriptedAgent(), "null/no-such-task", 1, "ep-2", run_dir=tmp_path)
            assert bad.status == "error" and bad.error.startswith("reset failed: ")
            assert bad.extra["fault"] == "reset" and load_trajectory(tmp_path / "ep-2").status == "error"
            again = await play_pooled(pool, ScriptedAgent(), "null/echo", 2, "ep-3")
            assert again.status == "success" and pool.size == 1
        finally:
            await pool.close()


async def test_run_jobs_reports_every_job_through_the_same_loop(env_url, tmp_path):
    jobs = [EpisodeJob("null/echo", 0, "a"), EpisodeJob("null/no-such-task", 0, "b"), EpisodeJob("null/echo", 1, "c")]
    done = await run_jobs(env_url, jobs, ScriptedAgent, concurrency=2, run_dir=tmp_path)
    by_key = {t.id: t for t in done}
    assert sorted(by_key) == ["a", "b", "c"]
    assert by_key["a"].status == by_key["c"].status == "success" and by_key["b"].status == "error"


class _KillsTheServer:
    """An agent that kills the env server (its whole process group) at its first step, then answers done()."""

    name = "killer"

    def __init__(self, pid: int, killed: list):
        self.pid, self.killed = pid, killed

    async def start(self, context) -> None:
        pass

    async def act(self, observation) -> AgentStep:
        if not self.killed:
            self.killed.append(self.pid)
            os.killpg(self.pid, signal.SIGKILL)
            await asyncio.sleep(0.5)
        return AgentStep(Done(answer="ok"), text='done(answer="ok")')


async def test_run_jobs_on_a_server_killed_mid_run_raises_naming_it_within_seconds():
    """Before: the pool shrank to nothing and run_jobs waited for a session forever."""
    with start_env_servers(provider("local"), "null", 1) as group:
        url, killed = group.urls[0], []
        jobs = [EpisodeJob("null/echo", i, f"k{i}") for i in range(6)]
        t0 = time.monotonic()
        with pytest.raises(ServerError, match=f"no env session could be opened.*{url}"):
            await asyncio.wait_for(run_jobs(url, jobs, lambda: _KillsTheServer(int(group.handles[0].ident), killed),
                                            concurrency=2), 30)
        assert killed and time.monotonic() - t0 < 15


class _Slow:
    name = "slow"

    async def start(self, context) -> None:
        pass

    async def act(self, observation) -> AgentStep:
        await asyncio.sleep(30)
        return AgentStep(Done(answer="ok"), text='done(answer="ok")')


class _SlowNoting(_Slow):
    def __init__(self, acting: list, ended: list):
        self.acting, self.ended = acting, ended

    async def act(self, observation) -> AgentStep:
        self.acting.append(1)
        try:
            return await super().act(observation)
        except asyncio.CancelledError:
            self.ended.append("cancelled")
            raise


class _KillsOnceTheOtherActs(_KillsTheServer):
    """Kills the server only once the slow agent is inside its step (so the test does not race a loaded box)."""

    def __init__(self, pid: int, killed: list, acting: list):
        super().__init__(pid, killed)
        self.acting = acting

    async def act(self, observation) -> AgentStep:
        for _ in range(400):
            if self.acting:
                break
            await asyncio.sleep(0.05)
        return await super().act(observation)


async def test_when_one_worker_fails_run_jobs_cancels_the_others_before_it_raises():
    """One worker's episode hits the dead server while the other's agent thinks for 30 s: run_jobs raised
    and left the other episode running on, unowned (its agent still acting after the error)."""
    with start_env_servers(provider("local"), "null", 1) as group:
        url, killed, made, acting, ended = group.urls[0], [], [], [], []

        def agent():
            made.append(1)
            if len(made) == 1:
                return _SlowNoting(acting, ended)
            return _KillsOnceTheOtherActs(int(group.handles[0].ident), killed, acting)

        jobs = [EpisodeJob("null/echo", i, f"s{i}") for i in range(4)]
        with pytest.raises(ServerError):
            await asyncio.wait_for(run_jobs(url, jobs, agent, concurrency=2), 25)
        assert killed and ended == ["cancelled"]


def _sessions(url: str) -> list[dict]:
    return httpx.get(f"{url}/v1/sessions", trust_env=False).json()["sessions"]


async def test_cancelled_run_jobs_leaves_no_session_on_the_server(env_url):
    """As by Ctrl-C during ``mintgym eval --env-url``: before, the 4 sessions in use stayed open, 'running'."""
    jobs = [EpisodeJob("null/echo", i, f"c{i}") for i in range(8)]
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(run_jobs(env_url, jobs, _Slow, concurrency=4), 1.5)
    assert _sessions(env_url) == []


async def test_a_cancelled_episode_retires_its_session_and_the_pool_keeps_its_size(env_url):
    async with AsyncEnvClient(env_url) as client:
        pool = await EnvPool(client, 2).start()
        try:
            episode = asyncio.create_task(play_pooled(pool, _Slow(), "null/echo", 0, "slow-0"))
            await asyncio.sleep(0.5)
            episode.cancel()
            with pytest.raises(asyncio.CancelledError):
                await episode
            assert len(_sessions(env_url)) == 1  # closed on the server, not left 'running'
            done = await asyncio.gather(*(play_pooled(pool, ScriptedAgent(), "null/echo", i, f"ok-{i}")
                                          for i in range(2)))  # both slots serve again
            assert [t.status for t in done] == ["success", "success"] and len(_sessions(env_url)) == 2
        finally:
            await pool.close()
        assert _sessions(env_url) == []


class _GarblesSteps:
    """An env server app whose step answers, once ``garble`` is set, are not MintGym frames."""

    def __init__(self, app):
        self.app, self.garble = app, False

    async def __call__(self, scope, receive, send):
        if not (self.garble and scope["type"] == "http" and scope["path"].endswith("/step")):
            return await self.app(scope, receive, send)

        async def garbled(message):
            if message["type"] == "http.response.body" and message.get("body"):
                message = {**message, "body": b"XXXX" + message["body"][4:]}
            await send(message)

        await self.app(scope, receive, garbled)


async def test_an_unexpected_error_raises_and_retires_its_session():
    """A frame that cannot be read (ValueError from the wire codec) is no episode ending: it propagates, and
    the session is closed and its slot reopened (before, it was dropped from the pool for good)."""
    app = _GarblesSteps(create_app(NullHost()))
    with serve_asgi(app) as url:
        async with AsyncEnvClient(url) as client:
            pool = await EnvPool(client, 1).start()
            try:
                app.garble = True
                with pytest.raises(ValueError, match="not a MintGym frame"):
                    await play_pooled(pool, ScriptedAgent(), "null/echo", 0, "bad")
                assert _sessions(url) == []
                app.garble = False
                again = await asyncio.wait_for(play_pooled(pool, ScriptedAgent(), "null/echo", 1, "again"), 10)
                assert again.status == "success" and len(_sessions(url)) == 1
            finally:
                await pool.close()
