"""Layer 3: EnvPool -- N env sessions kept warm on one or more servers, with resets done in the background.

``prepare(task_id, seed)`` resets an idle session ahead of time; ``checkout(task_id, seed)`` hands out a
session already reset for that episode (or resets one now), the most recently returned idle one first (the
warm ones); ``checkin`` returns it. A session whose environment failed is closed and replaced by a new one,
so the pool keeps its size. Given several servers' clients, the pool opens its sessions on them in turn
and replaces a failed session on the server it was on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from mintgym.client.aio import AsyncEnvClient, AsyncSession
from mintgym.errors import MintGymError
from mintgym.types import Observation


@dataclass
class PreparedEpisode:
    session: AsyncSession
    observation: Observation
    info: dict


#: Episode endings (``Trajectory.extra["fault"]``) after which a session is not reused.
RETIRING_FAULTS = ("env", "timeout")


class EnvPool:
    def __init__(self, client: AsyncEnvClient | Sequence[AsyncEnvClient], size: int,
                 side_channels: tuple[str, ...] = (), env_options: dict | None = None, max_steps: int | None = None):
        if size < 1:
            raise ValueError(f"an EnvPool needs at least one session, got size={size}")
        #: The servers' clients; session i of ``start`` opens on ``clients[i % len(clients)]``.
        self.clients = [client] if isinstance(client, AsyncEnvClient) else list(client)
        if not self.clients:
            raise ValueError("an EnvPool needs at least one server's client, got none")
        self.size = size
        self.side_channels = side_channels
        self.env_options = env_options or {}
        #: A step cap for every episode of the pool (below each task's own limit; reaching it truncates).
        self.max_steps = max_steps
        #: Idle sessions, the most recently returned handed out first: a pool reuses the few sessions its
        #: concurrency needs, warm (their pages, caches and compiled scripts loaded), and leaves the rest
        #: untouched, instead of cycling through every session and paying each one's cold first episode.
        self._idle: asyncio.LifoQueue[AsyncSession] = asyncio.LifoQueue()
        self._prepared: dict[tuple, list[asyncio.Task]] = {}
        self.replaced = 0

    async def start(self) -> "EnvPool":
        clients = self.clients
        sessions = await asyncio.gather(*(self._new_session(clients[i % len(clients)]) for i in range(self.size)))
        for s in sessions:
            self._idle.put_nowait(s)
        return self

    async def _new_session(self, client: AsyncEnvClient) -> AsyncSession:
        return await client.session(self.side_channels, self.env_options)

    def prepare(self, task_id: str | None, seed: int | None) -> bool:
        """Reset an idle session for (task_id, seed) in the background; False when none is idle."""
        if self._idle.empty():
            return False
        session = self._idle.get_nowait()
        job = asyncio.create_task(self._reset(session, task_id, seed))
        self._prepared.setdefault((task_id, seed), []).append(job)
        return True

    async def _reset(self, session: AsyncSession, task_id, seed) -> PreparedEpisode:
        try:
            obs, info = await session.reset(task_id, seed, self.max_steps)
        except BaseException:
            await self.checkin(session, failed=True)
            raise
        return PreparedEpisode(session, obs, info)

    async def checkout(self, task_id: str | None, seed: int | None) -> PreparedEpisode:
        jobs = self._prepared.get((task_id, seed))
        if jobs:
            job = jobs.pop(0)
            if not jobs:
                del self._prepared[(task_id, seed)]
            return await job
        session = await self._idle.get()
        return await self._reset(session, task_id, seed)

    async def finish(self, session: AsyncSession, fault: str | None) -> None:
        """Return ``session`` after an episode, by the one retirement rule every caller (eval, training)
        follows: an episode that ended by an environment fault or by timing out (its server may still be
        busy with it) retires its session for a new one; any other ending (success, failure, the agent's
        own fault) leaves the session healthy and it is reused. ``fault`` is ``Trajectory.extra["fault"]``."""
        await self.checkin(session, failed=fault in RETIRING_FAULTS)

    async def checkin(self, session: AsyncSession, failed: bool = False) -> None:
        if failed:
            await session.close()
            try:
                session = await self._new_session(session.client)  # on the server it was on
                self.replaced += 1
            except MintGymError:
                self.size -= 1  # the server cannot give us another; shrink rather than hang
                return
        self._idle.put_nowait(session)

    async def close(self) -> None:
        for jobs in self._prepared.values():
            for job in jobs:
                job.cancel()
        for jobs in list(self._prepared.values()):
            for job in jobs:
                try:
                    prepared = await job
                    await prepared.session.close()
                except BaseException:
                    pass
        self._prepared.clear()
        while not self._idle.empty():
            await self._idle.get_nowait().close()
