"""EnvPool's one retirement rule: a session whose episode timed out or met an environment fault is replaced;
one whose episode merely failed (or whose agent broke) is reused. A replacement opens on any server that can
give one; a pool whose servers are all gone raises naming them instead of waiting forever."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from mintgym.action_spaces import Done
from mintgym.client.aio import AsyncEnvClient
from mintgym.environments.null import NullHost
from mintgym.errors import ServerError
from mintgym.policy import AgentStep
from mintgym.rollout.episode import run_episode
from mintgym.runtime.pool import NO_SESSION, EnvPool
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


def _held(url: str) -> set[str]:
    return {s["session_id"] for s in httpx.get(f"{url}/v1/sessions", trust_env=False).json()["sessions"]}


async def test_a_session_retired_while_its_server_is_down_is_reopened_on_another_server():
    with serve_asgi(create_app(NullHost())) as survivor:
        async with AsyncEnvClient(survivor) as a:
            with serve_asgi(create_app(NullHost())) as doomed:
                b = AsyncEnvClient(doomed)
                pool = await EnvPool([a, b], 2).start()
                on_b = await pool.checkout("null/echo", 0)
                on_a = await pool.checkout("null/echo", 1)
                if on_b.session.client is a:
                    on_a, on_b = on_b, on_a
            # the doomed server is gone: its session's replacement opens on the survivor
            await pool.finish(on_b.session, "env")
            await pool.finish(on_a.session, None)
            assert pool.replaced == 1 and len(_held(survivor)) == 2
            both = await asyncio.gather(pool.checkout("null/echo", 2), pool.checkout("null/echo", 3))
            assert {p.session.client for p in both} == {a}
            await pool.close()
            await b.aclose()
        assert not _held(survivor)


async def test_a_pool_whose_servers_are_gone_raises_naming_them_instead_of_waiting_forever():
    """Before: the session the server could not replace was dropped and the pool shrank, so the next
    checkout waited for an idle session forever. Now it raises ServerError(code="no_session") naming the
    server, both for a new checkout and for one already waiting for the session in use."""
    with serve_asgi(create_app(NullHost())) as url:
        client = AsyncEnvClient(url)
        pool = await EnvPool(client, 1).start()
        held = await pool.checkout("null/echo", 0)
        waiting = asyncio.create_task(pool.checkout("null/echo", 1))
        await asyncio.sleep(0.1)
        assert not waiting.done()  # the only session is in use
    await pool.finish(held.session, "env")  # the server is gone: no replacement
    with pytest.raises(ServerError, match=f"no env session could be opened.*{url}") as raised:
        await asyncio.wait_for(waiting, 10)
    assert raised.value.code == NO_SESSION
    with pytest.raises(ServerError, match=url):
        await asyncio.wait_for(pool.checkout("null/echo", 2), 10)
    await pool.close()
    await client.aclose()


async def test_a_retired_slot_is_reopened_when_next_needed_and_close_closes_sessions_in_use(server):
    async with AsyncEnvClient(server) as client:
        pool = await EnvPool(client, 2).start()
        first, second = await asyncio.gather(pool.checkout("null/echo", 0), pool.checkout("null/echo", 1))
        await pool.retire(first.session)  # as after a cancelled episode: closed, its slot empty
        assert _held(server) == {second.session.session_id}
        third = await pool.checkout("null/echo", 2)  # opened in the empty slot
        assert _held(server) == {second.session.session_id, third.session.session_id}
        await pool.close()  # both are still handed out
        assert not _held(server)
