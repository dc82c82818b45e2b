"""Layer 3: EnvPool -- N env sessions kept warm on one or more servers, with resets done in the background.

``prepare(task_id, seed)`` resets an idle session ahead of time; ``checkout(task_id, seed)`` hands out a
session already reset for that episode (or resets one now), the most recently returned idle one first (the
warm ones); ``checkin`` returns it. Given several servers' clients, the pool opens its sessions on them in
turn.

A session whose environment failed is retired: closed on its server and replaced by a new one, on the
server it was on or, when that one cannot open it, on any other. When no server can, its slot stays empty
and a later ``checkout`` opens it; a checkout that finds no idle session and cannot open one on any server
raises :class:`~mintgym.errors.ServerError` (code ``no_session``) naming the servers, rather than wait for a
session that will never come. A session whose episode was cancelled or raised is retired the same way and
its slot reopened when next needed, so the pool keeps its size. ``close()`` closes every session of the
pool, those in use included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from mintgym import observe as observation
from mintgym.client.aio import AsyncEnvClient, AsyncSession
from mintgym.errors import MintGymError, ServerError, first_line
from mintgym.types import Observation


@dataclass
class PreparedEpisode:
    session: AsyncSession
    observation: Observation
    info: dict


#: Episode endings (``Trajectory.extra["fault"]``) after which a session is not reused.
RETIRING_FAULTS = ("env", "timeout")

#: ``ServerError.code`` of a checkout that found no idle session and could open none on any server.
NO_SESSION = "no_session"


class EnvPool:
    def __init__(self, client: AsyncEnvClient | Sequence[AsyncEnvClient], size: int,
                 observe: tuple[str, ...] = observation.DEFAULT, env_options: dict | None = None,
                 max_steps: int | None = None):
        if size < 1:
            raise ValueError(f"an EnvPool needs at least one session, got size={size}")
        #: The servers' clients; session i of ``start`` opens on ``clients[i % len(clients)]``.
        self.clients = [client] if isinstance(client, AsyncEnvClient) else list(client)
        if not self.clients:
            raise ValueError("an EnvPool needs at least one server's client, got none")
        self.size = size
        #: The observation channels the agents playing on this pool are given (:mod:`mintgym.observe`)...
        self.observe = tuple(observe)
        #: ... and the side channels its sessions fill for them.
        self.side_channels = observation.session_channels(self.observe)
        self.env_options = env_options or {}
        #: A step cap for every episode of the pool (below each task's own limit; reaching it truncates).
        self.max_steps = max_steps
        #: Idle sessions, the most recently returned handed out last in the list (taken first): a pool reuses
        #: the few sessions its concurrency needs, warm (their pages, caches and compiled scripts loaded), and
        #: leaves the rest untouched, instead of cycling through every session and paying each one's cold
        #: first episode.
        self._idle: list[AsyncSession] = []
        #: Sessions handed out (being reset in the background or played), by ``id()``.
        self._out: dict[int, AsyncSession] = {}
        #: Slots whose session was retired and not replaced yet: a checkout opens them when none is idle.
        self._lost = 0
        #: Set whenever a session or a slot comes back, to wake checkouts waiting for one.
        self._returned = asyncio.Event()
        self._prepared: dict[tuple, list[asyncio.Task]] = {}
        self._closed = False
        self.replaced = 0

    async def start(self) -> EnvPool:
        clients = self.clients
        opened = await asyncio.gather(*(self._new_session(clients[i % len(clients)]) for i in range(self.size)),
                                      return_exceptions=True)
        errors = [s for s in opened if isinstance(s, BaseException)]
        if errors:
            await asyncio.gather(*(s.close() for s in opened if isinstance(s, AsyncSession)))
            raise errors[0]
        self._idle.extend(opened)
        return self

    async def _new_session(self, client: AsyncEnvClient) -> AsyncSession:
        return await client.session(self.side_channels, self.env_options)

    async def _open(self, first: AsyncEnvClient | None = None) -> AsyncSession:
        """A new session on ``first``'s server if it is still one of the pool's, else on the others in turn;
        ServerError (code ``no_session``) naming every server when none can open one."""
        errors = []
        for client in sorted(self.clients, key=lambda c: c is not first):
            try:
                return await self._new_session(client)
            except MintGymError as err:
                text = first_line(err)
                errors.append(text if client.base_url in text else f"{client.base_url}: {text}")
        raise ServerError(f"no env session could be opened on any of the pool's {len(self.clients)} server(s): "
                          + "; ".join(errors), code=NO_SESSION)

    def _hand_out(self, session: AsyncSession) -> AsyncSession:
        self._out[id(session)] = session
        return session

    def _give_back(self, session: AsyncSession | None) -> None:
        """An idle session (None: an empty slot) is back; wake the checkouts waiting for one."""
        if session is None:
            self._lost += 1
        else:
            self._idle.append(session)
        self._returned.set()

    def prepare(self, task_id: str | None, seed: int | None) -> bool:
        """Reset an idle session for (task_id, seed) in the background; False when none is idle."""
        if not self._idle or self._closed:
            return False
        session = self._hand_out(self._idle.pop())
        job = asyncio.create_task(self._reset(session, task_id, seed))
        self._prepared.setdefault((task_id, seed), []).append(job)
        return True

    async def _reset(self, session: AsyncSession, task_id, seed) -> PreparedEpisode:
        try:
            obs, info = await session.reset(task_id, seed, self.max_steps)
        except MintGymError:
            await asyncio.shield(self.checkin(session, failed=True))
            raise
        except BaseException:  # cancelled, or an unexpected error (a garbled frame)
            await asyncio.shield(self.retire(session))
            raise
        return PreparedEpisode(session, obs, info)

    async def checkout(self, task_id: str | None, seed: int | None) -> PreparedEpisode:
        """A session reset for (task_id, seed): one prepared for it, else an idle one reset now, else one opened
        in an empty slot, else the next one returned. ServerError (code ``no_session``) when none is idle and
        no server can open one."""
        jobs = self._prepared.get((task_id, seed))
        if jobs:
            job = jobs.pop(0)
            if not jobs:
                del self._prepared[(task_id, seed)]
            return await job
        return await self._reset(await self._take(), task_id, seed)

    async def _take(self) -> AsyncSession:
        while True:
            if self._closed:
                raise RuntimeError("this EnvPool is closed")
            if self._idle:
                return self._hand_out(self._idle.pop())
            if self._lost:
                self._lost -= 1
                try:
                    return self._hand_out(await self._open())
                except BaseException:
                    self._lost += 1
                    raise
            self._returned.clear()
            await self._returned.wait()

    async def finish(self, session: AsyncSession, fault: str | None) -> None:
        """Return ``session`` after an episode, by the one retirement rule every caller (eval, training)
        follows: an episode that ended by an environment fault or by timing out (its server may still be
        busy with it) retires its session for a new one; any other ending (success, failure, the agent's
        own fault) leaves the session healthy and it is reused. ``fault`` is ``Trajectory.extra["fault"]``."""
        await self.checkin(session, failed=fault in RETIRING_FAULTS)

    async def checkin(self, session: AsyncSession, failed: bool = False) -> None:
        """Return ``session``; ``failed``: close it and open its replacement now (on its server, else on any
        other; when none can, its slot is reopened by a later checkout)."""
        if not failed:
            self._out.pop(id(session), None)
            if self._closed:
                await session.close()
            else:
                self._give_back(session)
            return
        await self.retire(session, reopen=False)
        if self._closed:
            return
        try:
            new = await self._open(session.client)
        except MintGymError:
            self._give_back(None)  # no server can give one now: a later checkout tries again
            return
        self.replaced += 1
        if self._closed:  # closed while it opened
            await new.close()
        else:
            self._give_back(new)

    async def retire(self, session: AsyncSession, reopen: bool = True) -> None:
        """Close ``session`` on its server (after an episode that was cancelled or raised: its state is
        unknown); ``reopen``: its slot is reopened by the next checkout that finds no idle session."""
        self._out.pop(id(session), None)
        await session.close()
        if reopen:
            self._give_back(None)

    async def replace_client(self, old: AsyncEnvClient, new: AsyncEnvClient) -> None:
        """Open sessions on ``new`` in place of ``old`` from now on (``old``'s server died and ``new`` is its
        replacement): the idle sessions on ``old`` are retired now, and those in use when their episode ends
        in the fault a dead server causes."""
        self.clients = [new if c is old else c for c in self.clients]
        stale = [s for s in self._idle if s.client is old]
        self._idle = [s for s in self._idle if s.client is not old]
        for session in stale:
            await self.retire(session)

    async def close(self) -> None:
        """Close every session of the pool: idle, being reset, and in use (an episode still playing on one
        fails at its next request, and its session is not reused)."""
        self._closed = True
        self._returned.set()
        jobs = [job for queued in self._prepared.values() for job in queued]
        self._prepared.clear()
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        sessions = self._idle + list(self._out.values())
        self._idle, self._out = [], {}
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
