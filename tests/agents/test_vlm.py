"""The VLM agent against a real OpenAI-compatible server on loopback that misbehaves on purpose."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from mintgym.action_spaces import DESKTOP, PYTOOL, Click, Done
from mintgym.action_spaces.frames import Normalized1000, ResizedAbsolute
from mintgym.agents import make_agent
from mintgym.agents.history import History, Turn
from mintgym.agents.vlm import VLMAgent, fit_pixels
from mintgym.errors import ServerError
from mintgym.inference import make_engine
from mintgym.policy import Agent, AgentContext
from mintgym.types import Observation

SCREEN = (1280, 720)


def observation(step: int = 0, size: tuple[int, int] = SCREEN, **kw) -> Observation:
    pixels = np.full((size[1], size[0], 3), 40 + step, dtype=np.uint8)
    return Observation(pixels, "Click the button.", "desktop", step, f"f{step}", **kw)


def context(action_set=DESKTOP, domain: str = "desktop", seed: int | None = 3) -> AgentContext:
    return AgentContext(task_id="test/task", domain=domain, instruction="Click the button.", action_set=action_set,
                        screen_size=SCREEN, max_steps=10, seed=seed)


def engine(url: str, mode: str, **kw):
    return make_engine("openai", base_url=f"{url}/{mode}/v1", backoff_s=0.01, backoff_max_s=0.02, **kw)


def script(url: str, name: str, texts: list[str]) -> None:
    httpx.post(f"{url}/control/{name}", json=texts).raise_for_status()


def requests_for(url: str, mode: str) -> list[dict]:
    return [r for r in httpx.get(f"{url}/control/requests").json() if r["mode"] == mode]


async def started(agent: VLMAgent, ctx: AgentContext | None = None) -> VLMAgent:
    await agent.start(ctx or context())
    return agent


def test_registry_builds_the_vlm_agent_and_it_is_an_agent(model_server):
    agent = make_agent("vlm", engine="openai", base_url=f"{model_server}/script-x/v1")
    assert isinstance(agent, Agent) and agent.name == "vlm"
    agent.close()
    with pytest.raises(ValueError, match="apply only when engine is a name"):
        VLMAgent(engine=engine(model_server, "script-x"), base_url="http://127.0.0.1:1")
    with pytest.raises(ValueError, match="unknown coordinate frame"):
        VLMAgent(engine=engine(model_server, "script-x"), frame="pixels")


async def test_valid_answer_records_tokens_logprobs_and_version(model_server):
    script(model_server, "ok", ['done(answer="42")'])
    agent = await started(VLMAgent(engine(model_server, "script-ok")))
    step = await agent.act(observation())
    assert step.error is None and step.action == Done(answer="42")
    assert step.prompt_token_ids == [1, 2, 3, 4]
    assert step.response_token_ids and len(step.logprobs) == len(step.response_token_ids)
    assert step.policy_version == 7
    assert step.extra["frame"] == "absolute" and step.extra["shown_size"] == list(SCREEN)


@pytest.mark.parametrize("text", ["I would like to click the blue thing please", "click(x=, y=)",
                                  "{\"type\": \"teleport\"}", "click(x=99999, y=5)"])
async def test_unusable_answer_is_a_step_with_the_raw_text_and_an_error(model_server, text):
    script(model_server, "bad", [text])
    agent = await started(VLMAgent(engine(model_server, "script-bad")))
    step = await agent.act(observation())
    assert step.action is None and step.text == text and step.error
    assert step.response_token_ids  # what the model said is still recorded for training


async def test_empty_answer_is_an_error_step(model_server):
    script(model_server, "empty", [""])
    agent = await started(VLMAgent(engine(model_server, "script-empty")))
    step = await agent.act(observation())
    assert step.action is None and step.text == "" and "empty" in step.error


async def test_retry_tells_the_model_what_was_wrong(model_server):
    script(model_server, "retry", ["no idea", "click(x=10, y=20)"])
    agent = await started(VLMAgent(engine(model_server, "script-retry"), retries=2))
    step = await agent.act(observation())
    assert step.action == Click(x=10, y=20) and step.error is None
    assert [a["error"] is None for a in step.extra["attempts"]] == [False, True]
    second = requests_for(model_server, "script-retry")[-1]
    assert second["roles"][-2:] == ["assistant", "user"] and "could not be used" in second["texts"][-1]


async def test_retries_exhausted_returns_the_last_error(model_server):
    script(model_server, "never", ["nope"])
    agent = await started(VLMAgent(engine(model_server, "script-never"), retries=1))
    step = await agent.act(observation())
    assert step.action is None and len(step.extra["attempts"]) == 2


async def test_resized_screenshot_converts_through_the_declared_frame(model_server):
    script(model_server, "resize", ["click(x=320, y=180)"])
    agent = await started(VLMAgent(engine(model_server, "script-resize"), max_pixels=640 * 360))
    step = await agent.act(observation())
    frame = ResizedAbsolute((640, 360))
    assert step.extra["frame"] == frame.spec
    assert (step.action.x, step.action.y) == frame.to_screen(320, 180, SCREEN)
    assert requests_for(model_server, "script-resize")[-1]["images"] == [[640, 360]]


async def test_normalized_frame(model_server):
    script(model_server, "norm", ["click(x=500, y=1000)"])
    agent = await started(VLMAgent(engine(model_server, "script-norm"), frame="normalized_1000"))
    step = await agent.act(observation())
    assert (step.action.x, step.action.y) == Normalized1000().to_screen(500, 1000, SCREEN) == (640, 719)


async def test_history_shows_the_last_k_screenshots_and_earlier_actions(model_server):
    script(model_server, "hist", ["click(x=1, y=1)", "click(x=2, y=2)", "click(x=3, y=3)", "done()"])
    agent = await started(VLMAgent(engine(model_server, "script-hist"), history=2))
    for i in range(4):
        await agent.act(observation(i))
    last = requests_for(model_server, "script-hist")[-1]
    assert len(last["images"]) == 2
    assert last["roles"] == ["system", "user", "assistant", "user"]
    assert "click(x=1, y=1)" in last["texts"][1] and "click(x=2, y=2)" in last["texts"][1]
    assert "click(x=3, y=3)" in last["texts"]


def test_history_keeps_only_the_images_it_will_show():
    history = History(images=2)
    for i in range(5):
        history.add(Turn(np.zeros((2, 2, 3), np.uint8), f"a{i}"))
    assert [t.image is not None for t in history.turns] == [False, False, False, False, True]
    with pytest.raises(ValueError):
        History(images=0)


async def test_prompt_is_built_from_the_domain_action_set(model_server):
    script(model_server, "prompt", ["done()"])
    agent = await started(VLMAgent(engine(model_server, "script-prompt")), context(PYTOOL, "pytool"))
    await agent.act(observation())
    system = requests_for(model_server, "script-prompt")[-1]["texts"][0]
    assert "python(" in system and "click(" not in system


async def test_seeds_are_reproducible_per_episode_and_step(model_server):
    script(model_server, "seed", ["done()"])
    for _ in range(2):
        agent = await started(VLMAgent(engine(model_server, "script-seed"), seed=1), context(seed=5))
        await agent.act(observation())
        await agent.act(observation(1))
    seeds = [r["seed"] for r in requests_for(model_server, "script-seed")]
    assert seeds[:2] == seeds[2:] and seeds[0] != seeds[1]


async def test_server_500s_are_retried_then_raise(model_server):
    agent = await started(VLMAgent(engine(model_server, "error500", max_retries=1)))
    with pytest.raises(ServerError, match="HTTP 500"):
        await agent.act(observation())
    flaky = await started(VLMAgent(engine(model_server, "flaky-2", max_retries=3)))
    assert (await flaky.act(observation())).action == Done(answer="ok")


async def test_server_timeout_raises(model_server):
    agent = await started(VLMAgent(engine(model_server, "slow", timeout_s=0.3, max_retries=0)))
    with pytest.raises(ServerError, match="Timeout"):
        await agent.act(observation())


async def test_non_json_answer_raises(model_server):
    agent = await started(VLMAgent(engine(model_server, "badjson", max_retries=0)))
    with pytest.raises(ServerError, match="not JSON"):
        await agent.act(observation())


async def test_image_too_large_shrinks_the_image_and_asks_again(model_server):
    agent = await started(VLMAgent(engine(model_server, "limit-100000")))
    step = await agent.act(observation())
    assert step.action == Done(answer="ok")
    assert len(step.extra["image_shrinks"]) == 2  # 921,600 -> 230,400 -> 57,600 pixels
    w, h = step.extra["shown_size"]
    assert w * h <= 100_000 and step.extra["frame"] == f"resized_absolute:{w}x{h}"
    # A fixed model frame cannot shrink: the refusal is raised.
    fixed = await started(VLMAgent(engine(model_server, "limit-100000"), frame="resized_absolute:640x360"))
    with pytest.raises(ServerError, match="413"):
        await fixed.act(observation())


def test_fit_pixels_keeps_aspect_and_bound():
    assert fit_pixels((1280, 720), None) == (1280, 720)
    assert fit_pixels((1280, 720), 2_000_000) == (1280, 720)
    w, h = fit_pixels((1280, 720), 100_000)
    assert w * h <= 100_000 and abs(w / h - 16 / 9) < 0.02


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from mintgym.models.tiny import build_tiny_vlm

    return str(build_tiny_vlm(str(tmp_path_factory.mktemp("tiny-vlm"))))


async def test_hf_engine_by_name_records_aligned_logprobs(tiny_model):
    agent = VLMAgent(engine="hf", model_path=tiny_model, max_new_tokens=8, max_pixels=40_000, seed=0)
    try:
        await agent.start(context(PYTOOL, "pytool"))
        step = await agent.act(observation())
    finally:
        agent.close()
    assert step.response_token_ids and len(step.logprobs) == len(step.response_token_ids)
    assert all(lp <= 0 for lp in step.logprobs) and step.extra["logprobs_source"] == "aligned"
    assert step.policy_version == 0 and step.prompt_token_ids
    assert (step.action is None) == (step.error is not None)


async def test_concurrent_agents_share_one_batched_in_process_engine(tiny_model):
    import asyncio

    from mintgym.agents.batched import BatchedEngine

    shared = BatchedEngine(make_engine("hf", model_path=tiny_model, max_batch_size=4), max_batch_size=4,
                           window_s=0.05)
    try:
        agents = [VLMAgent(shared, max_new_tokens=4, max_pixels=20_000, seed=i) for i in range(3)]
        for agent in agents:
            await agent.start(context(PYTOOL, "pytool"))
        steps = await asyncio.gather(*(agent.act(observation()) for agent in agents))
        [batcher] = shared._batchers.values()
    finally:
        shared.close()
    assert all(s.logprobs and len(s.logprobs) == len(s.response_token_ids) for s in steps)
    assert batcher.requests == 3 and batcher.largest_batch >= 2
