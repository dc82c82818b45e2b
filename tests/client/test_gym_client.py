"""The clients are real gymnasium envs: env_checker passes over HTTP and in process, and they agree."""

import asyncio

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import mintgym
from mintgym.client.aio import AsyncEnvClient
from mintgym.errors import RegistrationError
from mintgym.runtime.pool import EnvPool


@pytest.mark.parametrize("encoding", ["raw", "png"])
def test_env_checker_passes_over_http(null_server, encoding):
    env = mintgym.make("null/echo", base_url=null_server, encoding=encoding)
    try:
        check_env(env.unwrapped, skip_render_check=True)
        obs, info = env.reset(seed=5)
        assert env.observation_space.contains(obs)
        assert "frame_id" not in info and env.last_observation.frame_id.endswith("-0")
        _, reward, terminated, truncated, info = env.step("done(answer='ok')")
        assert terminated and reward == 1.0
    finally:
        env.close()
        env.close()  # twice is fine


def test_inprocess_env_matches_http(null_server):
    remote = mintgym.make("null/echo", base_url=null_server, encoding="raw")
    local = mintgym.make("null/echo", backend="inprocess")
    try:
        check_env(local, skip_render_check=True)
        a, _ = remote.reset(seed=9)
        b, _ = local.reset(seed=9)
        np.testing.assert_array_equal(a["screenshot"], b["screenshot"])
        ra = remote.step({"type": "click", "x": 10, "y": 10})
        rb = local.step({"type": "click", "x": 10, "y": 10})
        np.testing.assert_array_equal(ra[0]["screenshot"], rb[0]["screenshot"])
        assert ra[1:4] == rb[1:4]
    finally:
        remote.close()
        local.close()


def test_make_starts_and_stops_a_local_server():
    env = mintgym.make("null/echo")
    url = env.base_url
    env.reset(seed=0)
    env.close()
    import httpx

    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/v1/health", timeout=2)


def test_unknown_id_names_close_matches():
    with pytest.raises(RegistrationError, match="did you mean null/echo"):
        mintgym.make("null/ecko")


def test_unknown_reset_option_is_an_error(null_server):
    env = mintgym.make("null/echo", base_url=null_server)
    try:
        with pytest.raises(ValueError, match="unknown reset options"):
            env.reset(options={"task": "x"})
    finally:
        env.close()


async def test_pool_prepares_in_the_background_and_replaces_failed(null_server):
    async with AsyncEnvClient(null_server, encoding="raw") as client:
        pool = await EnvPool(client, 2).start()
        assert pool.prepare("null/echo", 1) and pool.prepare("null/echo", 2)
        assert not pool.prepare("null/echo", 3)  # no idle session left
        first = await pool.checkout("null/echo", 1)
        second = await pool.checkout("null/echo", 2)
        assert first.session.session_id != second.session.session_id
        assert first.observation.step == 0 and first.info["seed"] == 1
        step = await first.session.step({"type": "done", "answer": "ok"})
        assert step.terminated and step.reward == 1.0
        await pool.checkin(first.session)
        await pool.checkin(second.session, failed=True)
        assert pool.replaced == 1
        again = await asyncio.wait_for(pool.checkout("null/echo", 7), 30)
        assert again.info["seed"] == 7
        await pool.checkin(again.session)
        await pool.close()
        health = await client.health()
        assert health["sessions"] == 0
