"""Layer 4: run many episodes concurrently over an EnvPool on one env server.

Used by ``mintgym rollout`` and ``mintgym eval``. Each of ``concurrency`` workers takes the next
(task, seed) job, asks the pool to reset a spare session for the job after it in the background, plays
its episode (:func:`~mintgym.rollout.episode.play_pooled`, the loop training uses too) and reports the
trajectory. A failed episode is reported with its reason, never dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mintgym.client.aio import AsyncEnvClient
from mintgym.policy import Agent
from mintgym.rollout.episode import play_pooled
from mintgym.runtime.pool import EnvPool
from mintgym.trajectory.types import Trajectory


@dataclass(frozen=True)
class EpisodeJob:
    task_id: str
    seed: int | None
    #: A stable name for the episode, so a resumed run can tell it is done.
    key: str


async def run_jobs(base_url: str, jobs: list[EpisodeJob], make_agent: Callable[[], Agent], *,
                   concurrency: int = 1, run_dir: str | Path | None = None, token: str | None = None,
                   encoding: str = "raw", max_seconds: float | None = None, max_steps: int | None = None,
                   on_done: Callable[[EpisodeJob, Trajectory], None] | None = None,
                   env_options: dict[str, Any] | None = None,
                   observe: tuple[str, ...] = ("screenshot",)) -> list[Trajectory]:
    """Play ``jobs`` on the env server at ``base_url``, ``concurrency`` at once, each in a session with
    ``env_options`` filling the channels ``observe`` gives the agent (:mod:`mintgym.observe`); each episode
    recorded under ``run_dir`` and handed to ``on_done`` as it ends."""
    if not jobs:
        return []
    concurrency = max(1, min(concurrency, len(jobs)))
    queue: list[EpisodeJob] = list(jobs)
    results: list[Trajectory] = []
    async with AsyncEnvClient(base_url, token=token, encoding=encoding) as client:
        pool = await EnvPool(client, concurrency + (1 if len(jobs) > concurrency else 0), max_steps=max_steps,
                             env_options=env_options, observe=observe).start()

        async def worker() -> None:
            agent = make_agent()
            while queue:
                job = queue.pop(0)
                if queue:
                    pool.prepare(queue[0].task_id, queue[0].seed)
                _finish(job, await play_pooled(pool, agent, job.task_id, job.seed, job.key, run_dir=run_dir,
                                               max_seconds=max_seconds))

        def _finish(job: EpisodeJob, traj: Trajectory) -> None:
            results.append(traj)
            if on_done is not None:
                on_done(job, traj)

        tasks = [asyncio.ensure_future(worker()) for _ in range(concurrency)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:  # one worker's error (a dead server) ends the others too, their sessions retired
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            await pool.close()
    return results
