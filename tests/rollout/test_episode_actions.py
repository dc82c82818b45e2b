"""Actions cross the wire once, typed: an action the agent rejected in its own frame is an explicit invalid
step (nothing executed), and a step cap given at reset truncates the episode (gymnasium semantics)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from mintgym.action_spaces import Click
from mintgym.agents.vlm import VLMAgent
from mintgym.client.aio import AsyncEnvClient
from mintgym.environments.null import NullHost
from mintgym.inference import make_engine
from mintgym.rollout.episode import run_episode
from mintgym.runtime.pool import EnvPool
from mintgym.server.app import create_app
from mintgym.testing import serve_asgi
from mintgym.trajectory.store import load_trajectory

pytestmark = pytest.mark.asyncio


def _model_server_module():
    path = Path(__file__).parents[1] / "agents" / "model_server.py"
    spec = importlib.util.spec_from_file_location("mintgym_tests_model_server_rollout", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def servers():
    with serve_asgi(_model_server_module().create_app()) as model, serve_asgi(create_app(NullHost())) as env:
        yield model, env


async def test_a_click_the_agent_rejected_in_its_frame_is_never_executed(servers, tmp_path):
    model, env_url = servers
    httpx.post(f"{model}/control/frame", json=["click(x=1200, y=300)", "done(answer=\"ok\")"]).raise_for_status()
    engine = make_engine("openai", base_url=f"{model}/script-frame/v1", backoff_s=0.01)
    agent = VLMAgent(engine, frame="normalized_1000", retries=0)
    client = AsyncEnvClient(env_url)
    try:
        session = await client.session()
        traj = await run_episode(session, agent, "null/echo", seed=0, run_dir=tmp_path)
    finally:
        await client.aclose()
    [folder] = [p for p in tmp_path.iterdir() if p.is_dir()]
    loaded = load_trajectory(folder)
    first, second = loaded.steps
    assert first.action is None and first.text == "click(x=1200, y=300)"
    assert first.error and "1000" in first.error  # the agent's own reason, in its own frame
    assert second.action["type"] == "done" and traj.success
    # The null env paints a white square where it clicks: the frame after the rejected click is unchanged.
    before = np.asarray(Image.open(folder / first.screenshot))
    after = np.asarray(Image.open(folder / second.screenshot))
    assert (before == after).all() and tuple(after[300, 1200]) != (255, 255, 255)


async def test_the_server_counts_an_agent_error_step_and_executes_nothing(servers):
    _, env_url = servers
    client = AsyncEnvClient(env_url)
    try:
        session = await client.session()
        before, _ = await session.reset("null/echo", 3)
        result = await session.step(None, agent_error="could not parse 'clik(1200, 300)'")
        assert result.info["error"] == "could not parse 'clik(1200, 300)'"
        assert not result.terminated and (result.observation.screenshot == before.screenshot).all()
        clicked = await session.step(Click(x=10, y=10))
        assert tuple(clicked.observation.screenshot[10, 10]) == (255, 255, 255)
        both = httpx.post(f"{env_url}/v1/sessions/{session.session_id}/step",
                          json={"action": {"type": "wait", "seconds": 0}, "agent_error": "x"})
        assert both.status_code == 422 and "exactly one" in both.text
    finally:
        await client.aclose()


async def test_a_step_cap_truncates_and_scores_the_state(servers):
    _, env_url = servers
    client = AsyncEnvClient(env_url)
    try:
        pool = await EnvPool(client, 1, max_steps=2).start()
        prepared = await pool.checkout("null/echo", 1)
        assert prepared.info["max_steps"] == 2
        first = await prepared.session.step(Click(x=1, y=1))
        assert not (first.terminated or first.truncated)
        second = await prepared.session.step(Click(x=2, y=2))
        assert second.truncated and not second.terminated and second.reward == 0.0
        await pool.close()
    finally:
        await client.aclose()
