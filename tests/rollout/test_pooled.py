"""``play_pooled``: the one episode loop eval (``run_jobs``) and training (the rollout worker) share, against a
real null env server: an episode returns its session for reuse, a failed reset is an error trajectory (on
disk too) and the pool goes on serving."""

from __future__ import annotations

import pytest

from mintgym.agents.scripted import ScriptedAgent
from mintgym.client.aio import AsyncEnvClient
from mintgym.environments.null import NullHost
from mintgym.rollout.episode import play_pooled
from mintgym.rollout.runner import EpisodeJob, run_jobs
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
