"""Layer 2: the sessions one env server hosts, each an Episode on its own Environment.

Every environment call runs under the session's lock and the server's per-request timeout. When an
environment crashes (EnvironmentCrashed, any unexpected exception, or a timeout) the session is marked
failed, its environment is closed and replaced by a fresh one, and :class:`SessionFault` carries the
reason to the route, which answers 5xx; the other sessions never notice.

Closing a session ends it at once: the call it is running is cancelled (and answers
:class:`SessionClosed`, a 409), calls queued behind it are refused the same way, and its environment is
closed as soon as the cancelled call has unwound -- never replaced, so nothing of it outlives the close.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mintgym.env import registration
from mintgym.env.core import Environment, EnvironmentHost, Task
from mintgym.env.episode import Episode
from mintgym.errors import (
    EnvironmentCrashed,
    EpisodeStateError,
    RegistrationError,
    TaskError,
    TaskUnavailable,
    first_line,
)

log = logging.getLogger("mintgym.server")
T = TypeVar("T")


class SessionFault(Exception):
    """An environment failure the server reports (and has already recovered from by replacement)."""

    def __init__(self, code: str, message: str, session_id: str):
        super().__init__(message)
        self.code = code
        self.message = message
        self.session_id = session_id


class SessionMissing(KeyError):
    pass


class SessionClosed(Exception):
    """The session was closed while this call ran or waited for it."""

    def __init__(self, session_id: str, what: str):
        super().__init__(f"session {session_id!r} was closed during {what}; its episode is gone")
        self.session_id = session_id


class Busy(Exception):
    pass


@dataclass
class Session:
    id: str
    env: Environment
    episode: Episode
    options: dict[str, Any]
    side_channels: frozenset[str]
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    created: float = field(default_factory=time.time)
    failures: int = 0
    last_failure: str | None = None
    status: str = "ready"  # ready | running | ended | failed | needs_reset
    #: Set by :meth:`SessionManager.close`: nothing runs on this session any more.
    closed: bool = False
    #: The environment call running now (what a close cancels).
    call: asyncio.Future | None = None


class SessionManager:
    def __init__(self, host: EnvironmentHost, request_timeout: float = 60.0, max_sessions: int = 1024):
        self.host = host
        self.request_timeout = request_timeout
        self.max_sessions = max_sessions
        self.sessions: dict[str, Session] = {}
        self.replaced = 0
        self.failed_requests = 0
        self._creating = 0

    # ---- lifecycle -------------------------------------------------------------------------------
    async def create(self, side_channels: frozenset[str], env_options: dict[str, Any]) -> Session:
        if len(self.sessions) + self._creating >= self.max_sessions:
            raise Busy(f"server holds the maximum of {self.max_sessions} sessions; close some first")
        self._creating += 1
        try:
            env = await asyncio.wait_for(self.host.create(dict(env_options)), self.request_timeout)
        finally:
            self._creating -= 1
        sid = uuid.uuid4().hex
        session = Session(sid, env, Episode(env, side_channels), dict(env_options), side_channels)
        self.sessions[sid] = session
        return session

    def get(self, sid: str) -> Session:
        try:
            return self.sessions[sid]
        except KeyError:
            raise SessionMissing(sid) from None

    async def close(self, sid: str) -> None:
        """End session ``sid`` now: cancel its running call, then close its environment."""
        session = self.sessions.pop(sid, None)
        if session is None:
            raise SessionMissing(sid)
        await self._end(session)

    async def close_all(self) -> None:
        for sid in list(self.sessions):
            await self._end(self.sessions.pop(sid))

    async def _end(self, session: Session) -> None:
        session.closed = True
        if session.call is not None:
            session.call.cancel()
        try:  # the cancelled call unwinds, and no replacement is under way, before the environment goes
            await asyncio.wait_for(session.lock.acquire(), min(self.request_timeout, 30.0))
        except TimeoutError:
            log.warning("session %s: its running call did not end; closing its environment under it", session.id)
            await self._close_env(session.env)
            return
        try:
            await self._close_env(session.env)
        finally:
            session.lock.release()

    async def _close_env(self, env: Environment) -> None:
        try:
            await asyncio.wait_for(env.close(), min(self.request_timeout, 30.0))
        except Exception as err:  # a dead environment may fail to close; it is being discarded anyway
            log.warning("closing an environment failed: %s", err)

    # ---- guarded calls ---------------------------------------------------------------------------
    async def run(self, session: Session, call: Callable[[], Awaitable[T]], what: str, *,
                  on_episode: bool = False) -> T:
        """Run one environment call for ``session`` under its lock and the timeout; recover on failure.
        ``on_episode``: the call works on the session's episode, which a replaced environment (a crash, a
        timeout, or found dead by the health check between calls) lost: refused as the environment's
        failure, not as a call out of order."""
        async with session.lock:
            if session.closed:
                raise SessionClosed(session.id, what)
            if on_episode and session.status == "needs_reset":
                raise SessionFault("session_failed", f"{what}: this session's environment was replaced "
                                   f"({session.last_failure}); its episode is lost, call reset", session.id)
            session.call = asyncio.ensure_future(call())
            try:
                return await asyncio.wait_for(session.call, self.request_timeout)
            except asyncio.CancelledError:
                if session.closed and not _cancelled_from_outside():
                    raise SessionClosed(session.id, what) from None
                raise
            except TimeoutError:
                _refuse_if_closed(session, what)
                await self._replace(session, f"{what} took longer than {self.request_timeout:.0f}s")
                _refuse_if_closed(session, what)  # closed while the replacement started: it is closed too
                raise SessionFault("timeout", f"{what} timed out after {self.request_timeout:.0f}s; "
                                   "the session's environment was replaced, call reset", session.id) from None
            except EnvironmentCrashed as err:
                _refuse_if_closed(session, what)
                await self._replace(session, f"{what}: {err}")
                _refuse_if_closed(session, what)
                raise SessionFault("session_failed", f"the environment crashed during {what}: {err}; "
                                   "it was replaced, call reset", session.id) from None
            except (EpisodeStateError, TaskUnavailable, RegistrationError, NotImplementedError):
                _refuse_if_closed(session, what)
                raise  # the caller's mistake (step before reset, task not runnable here): no replacement
            except TaskError as err:  # the task author's code raised: its message points there
                _refuse_if_closed(session, what)
                log.warning("session %s: %s", session.id, err)
                await self._replace(session, f"{what}: {first_line(err)}")  # the episode's state is unknown
                _refuse_if_closed(session, what)
                raise SessionFault("task_error", str(err), session.id) from None
            except Exception as err:
                _refuse_if_closed(session, what)  # closed under the call: whatever it raised, the close caused
                log.exception("unexpected failure in %s for session %s", what, session.id)
                await self._replace(session, f"{what}: {type(err).__name__}: {err}")
                _refuse_if_closed(session, what)
                raise SessionFault("session_failed", f"the environment failed during {what}: "
                                   f"{type(err).__name__}: {err}; it was replaced, call reset", session.id) from None
            finally:
                session.call = None

    async def _replace(self, session: Session, reason: str) -> None:
        self.failed_requests += 1
        session.failures += 1
        session.last_failure = reason
        session.status = "failed"
        if await self._renew(session):
            session.status = "needs_reset"
            self.replaced += 1

    async def _renew(self, session: Session) -> bool:
        """Close the session's environment and give it a fresh one; False (session dropped) if that fails."""
        await self._close_env(session.env)
        try:
            env = await asyncio.wait_for(self.host.create(dict(session.options)), self.request_timeout)
        except Exception as err:
            log.error("could not renew the environment of session %s: %s", session.id, err)
            self.sessions.pop(session.id, None)
            return False
        if session.closed:  # closed while the new environment started: it goes too
            await self._close_env(env)
            return False
        session.env = env
        session.episode = Episode(env, session.side_channels)
        return True

    # ---- episode operations ----------------------------------------------------------------------
    async def reset(self, session: Session, task: Task, seed: int | None, max_steps: int | None = None):
        result = await self.run(session, lambda: session.episode.reset(task, seed, max_steps), f"reset of {task.id}")
        session.status = "running"
        return result

    async def step(self, session: Session, action, parse_error: str | None):
        outcome = await self.run(session, lambda: session.episode.step(action, parse_error), "step", on_episode=True)
        if outcome.terminated or outcome.truncated:
            session.status = "ended"
        if outcome.info.get("agent_fault"):
            await self._recover_after_fault(session)
        return outcome

    async def evaluate(self, session: Session) -> float:
        return await self.run(session, lambda: session.episode.evaluate(), "evaluate", on_episode=True)

    async def oracle(self, session: Session):
        """The task oracle's next action for the episode's current state."""
        return await self.run(session, lambda: session.episode.oracle_action(), "oracle", on_episode=True)

    async def _recover_after_fault(self, session: Session) -> None:
        """After the agent broke its own episode, make sure the next reset finds a working environment.

        Not a failure of the server: nothing is counted, the episode already ended as the agent's failure.
        """
        if session.closed:
            return
        try:
            alive = await asyncio.wait_for(session.env.alive(), 5.0)
        except Exception:
            alive = False
        if alive:
            return
        async with session.lock:
            task = session.episode.task
            if not await self._renew(session):
                return
            session.episode.task = task  # a reset without task_id keeps the task
            session.episode.ended = True  # and a step before that reset is refused (409)
            session.status = "ended"

    async def health_sweep(self) -> int:
        """Replace sessions whose environment died while idle; returns how many were replaced."""
        count = 0
        for session in list(self.sessions.values()):
            if session.lock.locked():
                continue
            try:
                alive = await asyncio.wait_for(session.env.alive(), 5.0)
            except Exception:
                alive = False
            if not alive:
                async with session.lock:
                    if session.closed:
                        continue
                    await self._replace(session, "environment found dead by the health check")
                count += 1
        return count


def _cancelled_from_outside() -> bool:
    """Whether the running task itself is being cancelled (not only the call it waits for)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _refuse_if_closed(session: Session, what: str) -> None:
    if session.closed:
        raise SessionClosed(session.id, what) from None


def resolve_task(task_id: str | None, domain: str, current: Task | None) -> Task:
    if task_id is None:
        if current is not None:
            return current
        found = registration.tasks(domain=domain)
        if not found:
            raise LookupError(f"no tasks are registered for domain {domain!r}")
        return found[0]
    task = registration.task(task_id)
    if task.domain != domain:
        raise LookupError(f"task {task_id!r} is a {task.domain!r} task; this server serves {domain!r}")
    return task

