"""The session manager: a session whose environment was replaced between calls lost its episode, and says
so (session_failed), rather than blaming the caller for a call out of order."""

from __future__ import annotations

from typing import ClassVar

import pytest
from mintgym.action_spaces import Click, Done
from mintgym.environments.null import NullEnvironment

from mintgym.env import registration
from mintgym.env.core import SimpleHost
from mintgym.server.sessions import SessionFault, SessionManager


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
