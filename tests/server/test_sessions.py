"""The session manager: a session whose environment was replaced between calls lost its episode, and says
so (session_failed), rather than blaming the caller for a call out of order."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest

from mintgym.action_spaces import Click, Done
from mintgym.env import registration
from mintgym.env.core import SimpleHost
from mintgym.environments.null import NullEnvironment
from mintgym.errors import EnvironmentCrashed
from mintgym.server.sessions import SessionClosed, SessionFault, SessionManager


class _Mortal(NullEnvironment):
    """The null environment, which can die while idle (as a killed sandbox, browser or display does)."""

    domain: ClassVar[str] = "null"
    dead = False

    async def alive(self) -> bool:
        return not self.dead


class _MortalHost(SimpleHost):
    domain: ClassVar[str] = "null"
    env_cls = _Mortal


async def test_a_step_after_the_health_check_replaced_a_dead_environment_is_a_session_failure():
    manager = SessionManager(_MortalHost(width=64, height=48), request_timeout=10)
    task = registration.task("null/echo")
    victim, other = await manager.create(frozenset(), {}), await manager.create(frozenset(), {})
    try:
        await manager.reset(victim, task, 3)
        await manager.reset(other, task, 3)
        await manager.step(victim, Click(x=3, y=3), None)
        victim.env.dead = True  # dies between two steps of its episode
        assert await manager.health_sweep() == 1
        for call in (lambda: manager.step(victim, Done(answer="ok"), None), lambda: manager.evaluate(victim),
                     lambda: manager.oracle(victim)):
            with pytest.raises(SessionFault) as fault:
                await call()
            assert fault.value.code == "session_failed"
            assert "replaced (environment found dead by the health check); its episode is lost" in str(fault.value)
        assert (await manager.step(other, Click(x=3, y=3), None)).info.get("error") is None  # the other goes on
        await manager.reset(victim, task, 3)  # the replacement works, and its episode scores as usual
        assert await manager.oracle(victim) == Done(answer="ok")
        assert (await manager.step(victim, Done(answer="ok"), None)).reward == 1.0
        assert await manager.evaluate(victim) == 1.0
    finally:
        await manager.close_all()


async def test_a_step_waiting_for_the_session_while_the_health_check_replaces_it_is_a_session_failure():
    """The check is made under the session's lock: a step queued behind the sweep's replacement does not
    reach the fresh episode (which would answer 'step() before reset()')."""
    import asyncio

    manager = SessionManager(_MortalHost(width=64, height=48), request_timeout=10)
    task = registration.task("null/echo")
    victim = await manager.create(frozenset(), {})
    try:
        await manager.reset(victim, task, 3)
        await victim.lock.acquire()  # the sweep holds the session...
        step = asyncio.ensure_future(manager.step(victim, Click(x=3, y=3), None))
        await asyncio.sleep(0.05)  # ...while the step waits for it
        assert not step.done()
        await manager._replace(victim, "environment found dead by the health check")
        victim.lock.release()
        with pytest.raises(SessionFault) as fault:
            await step
        assert fault.value.code == "session_failed" and "its episode is lost" in str(fault.value)
    finally:
        await manager.close_all()


class _Slow(NullEnvironment):
    """The null environment, whose steps run until they are cancelled (a long cell, a slow page) and
    whose click at (1, 1) crashes it; it counts its closes and whether a step saw the cancellation."""

    domain: ClassVar[str] = "null"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.stepping = asyncio.Event()
        self.cancelled = False
        self.closes = 0

    async def execute(self, action) -> None:
        if isinstance(action, Click) and (action.x, action.y) == (1, 1):
            raise EnvironmentCrashed("the display died")
        self.stepping.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise

    async def close(self) -> None:
        self.closes += 1


class _SlowHost(SimpleHost):
    domain: ClassVar[str] = "null"
    env_cls = _Slow

    def __init__(self, **defaults):
        super().__init__(**defaults)
        self.made: list[_Slow] = []
        self.making = asyncio.Event()
        self.making.set()

    async def create(self, options):
        await self.making.wait()  # cleared by a test: a replacement that takes its time
        env = await super().create(options)
        self.made.append(env)
        return env


async def test_closing_a_session_mid_step_ends_the_step_and_closes_its_environment_once():
    host = _SlowHost(width=64, height=48)
    manager = SessionManager(host, request_timeout=30)
    session = await manager.create(frozenset(), {})
    await manager.reset(session, registration.task("null/echo"), 3)
    step = asyncio.ensure_future(manager.step(session, Click(x=3, y=3), None))
    await session.env.stepping.wait()
    queued = asyncio.ensure_future(manager.evaluate(session))  # waits for the session behind the step
    await asyncio.sleep(0)
    await manager.close(session.id)  # returns once the environment is closed
    env = host.made[0]
    assert env.cancelled and env.closes == 1
    for call in (step, queued):
        with pytest.raises(SessionClosed, match="was closed during (step|evaluate); its episode is gone"):
            await call
    assert len(host.made) == 1 and manager.failed_requests == 0  # nothing replaced, nothing counted as a fault
    assert session.id not in manager.sessions


async def test_a_session_closed_while_its_environment_is_being_replaced_keeps_no_environment():
    """The step's environment crashed and a replacement is starting when the session is closed: the
    replacement is closed as soon as it exists, and the step answers that the session was closed."""
    host = _SlowHost(width=64, height=48)
    manager = SessionManager(host, request_timeout=30)
    session = await manager.create(frozenset(), {})
    await manager.reset(session, registration.task("null/echo"), 3)
    host.making.clear()  # the replacement waits until the close has begun
    step = asyncio.ensure_future(manager.step(session, Click(x=1, y=1), None))  # crashes the environment
    while len(host.made) == 1 and not host.making.is_set() and not session.env.closes:
        await asyncio.sleep(0.01)  # the crashed environment is closed first, then the replacement starts
    closing = asyncio.ensure_future(manager.close(session.id))
    await asyncio.sleep(0.01)
    assert not closing.done()  # it waits for the replacement under way
    host.making.set()
    await closing
    with pytest.raises(SessionClosed):
        await step
    crashed, replacement = host.made
    assert replacement.closes == 1 and crashed.closes >= 1  # closing twice is allowed (check_env tries it)
