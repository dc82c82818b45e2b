"""EnvPool's one retirement rule: a session whose episode timed out or met an environment fault is replaced;
one whose episode merely failed (or whose agent broke) is reused."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from mintgym.action_spaces import Done
from mintgym.environments.null import NullHost

from mintgym.client.aio import AsyncEnvClient
from mintgym.policy import AgentStep
from mintgym.rollout.episode import run_episode
from mintgym.runtime.pool import EnvPool
from mintgym.server.app import create_app
from mintgym.testing import serve_asgi

pytestmark = pytest.mark.asyncio


class _Slow:
    """An agent that thinks for ``seconds`` before answering done()."""

    name = "slow"

    def __init__(self, seconds: float):
        self.seconds = seconds

    async def start(self, context) -> None:
        pass

    async def act(self, observation) -> AgentStep:
        await asyncio.sleep(self.seconds)
        return AgentStep(Done(answer="ok"), text='done(answer="ok")')


@pytest.fixture(scope="module")
def server():
    with serve_asgi(create_app(NullHost())) as url:
        yield url


@pytest.mark.parametrize(("think", "budget", "retired"), [(2.0, 0.3, True), (0.0, 5.0, False)])
async def test_a_timed_out_episode_retires_its_session(server, think, budget, retired):
    async with AsyncEnvClient(server) as client:
        pool = await EnvPool(client, 1).start()
        prepared = await pool.checkout("null/echo", 0)
        traj = await run_episode(prepared.session, _Slow(think), "null/echo", seed=0, max_seconds=budget,
                                 started=(prepared.observation, prepared.info))
        assert traj.status == ("timeout" if retired else "success")
        await pool.finish(prepared.session, traj.extra.get("fault"))
        assert pool.replaced == int(retired)
        ids = {s["session_id"] for s in httpx.get(f"{server}/v1/sessions").json()["sessions"]}
        assert (prepared.session.session_id in ids) is not retired
        await pool.close()


async def test_the_pool_reuses_its_warm_sessions_first(server):
    """Idle sessions go out most recently returned first: two episodes at a time over an 8-session pool keep
    using the same two sessions, warm, and the other six are never touched. Handed out in turn, every session
    would pay its cold first episode (a fresh browser context loads and compiles the page from nothing: 16
    MiniWoB episodes took 2.3-3.1 s on cold sessions against 0.4 s on warm ones)."""
    async with AsyncEnvClient(server) as client:
        pool = await EnvPool(client, 8).start()
        used = set()
        for _ in range(4):
            prepared = await asyncio.gather(*(pool.checkout("null/echo", seed) for seed in (0, 1)))
            used |= {p.session.session_id for p in prepared}
            for p in prepared:
                await pool.finish(p.session, None)
        assert len(used) == 2
        await pool.close()


async def test_a_pool_over_two_servers_spreads_its_sessions_and_replaces_one_where_it_was():
    with serve_asgi(create_app(NullHost())) as first, serve_asgi(create_app(NullHost())) as second:
        async with AsyncEnvClient(first) as a, AsyncEnvClient(second) as b:
            pool = await EnvPool([a, b], 4).start()

            def held(url: str) -> set[str]:
                return {s["session_id"] for s in httpx.get(f"{url}/v1/sessions").json()["sessions"]}

            assert len(held(first)) == 2 and len(held(second)) == 2
            prepared = await pool.checkout("null/echo", 0)
            where = second if prepared.session.client is b else first
            await pool.finish(prepared.session, "env")  # an env fault: replaced on the same server
            assert pool.replaced == 1
            assert len(held(first)) == 2 and len(held(second)) == 2
            assert prepared.session.session_id not in held(where)
            await pool.close()
            assert not held(first) and not held(second)


async def test_a_pool_without_a_server_is_refused():
    with pytest.raises(ValueError, match="at least one server's client"):
        EnvPool([], 1)
