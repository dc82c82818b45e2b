"""VLMAgent.imitate: an oracle's action taken as if the model had answered it (behaviour-cloning data).

The prompts are checked against what ``act`` sends for the same answers, on the misbehaving model server
of tests/agents/model_server.py replaying those answers.
"""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from mintgym.action_spaces import DESKTOP, PYTOOL, WEB, Click, Done, Drag, Key, Python, Tap, Type
from mintgym.agents.vlm import VLMAgent
from mintgym.inference import SamplingParams, make_engine
from mintgym.policy import AgentContext
from mintgym.types import Observation

SCREEN = (160, 210)


def observation(step: int, size: tuple[int, int] = SCREEN) -> Observation:
    rng = np.random.default_rng(step)
    pixels = rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)
    return Observation(pixels, "Click ONE, then TWO.", "web", step, f"f{step}")


def context(action_set=WEB, domain: str = "web", size: tuple[int, int] = SCREEN) -> AgentContext:
    return AgentContext(task_id="test/two-step", domain=domain, instruction="Click ONE, then TWO.",
                        action_set=action_set, screen_size=size, max_steps=5, seed=7)


def engine(url: str, mode: str):
    return make_engine("openai", base_url=f"{url}/{mode}/v1", backoff_s=0.01, backoff_max_s=0.02)


def script(url: str, name: str, texts: list[str]) -> None:
    httpx.post(f"{url}/control/{name}", json=texts).raise_for_status()


def seeds_sent(url: str, mode: str) -> list[int | None]:
    return [r["seed"] for r in httpx.get(f"{url}/control/requests").json() if r["mode"] == mode]


async def started(agent: VLMAgent, ctx: AgentContext | None = None) -> VLMAgent:
    await agent.start(ctx or context())
    return agent


ACTIONS = [Click(x=20, y=60), Click(x=150, y=200, clicks=2), Drag(x1=0, y1=0, x2=159, y2=209),
           Type(text='say "hi"\n'), Key(keys=["ctrl", "a"]), Done(answer="TWO")]


@pytest.mark.parametrize("options", [{"frame": "absolute"}, {"frame": "normalized_1000"},
                                     {"frame": "resized_absolute:80x105"}, {"frame": "absolute", "max_pixels": 8000},
                                     {"frame": "relative"}])
async def test_imitated_text_parses_back_to_the_recorded_action(model_server, options):
    agent = await started(VLMAgent(engine(model_server, "script-unused"), history=2, **options))
    for i, action in enumerate(ACTIONS):
        obs = observation(i)
        step = await agent.imitate(obs, action)
        frame, _shown = agent.frame_for(obs.screen_size)
        parsed, error = agent._parse(step.text, frame, obs.screen_size)
        assert error is None and parsed == step.action, (options, action, step.text)
        assert step.extra["frame"] == frame.spec and step.extra["imitated"] == action.to_json()
        assert step.response_token_ids is None and step.error is None
        if options == {"frame": "absolute"}:
            assert step.action == action  # the screen's own frame loses nothing
        elif action.type == "click":  # a coarser frame moves a point by less than one of its cells
            assert abs(step.action.x - action.x) <= 2 and abs(step.action.y - action.y) <= 2


async def test_imitate_builds_the_prompt_act_builds_and_moves_the_history_the_same_way(model_server):
    actions = [Click(x=30, y=90), Click(x=120, y=150), Done()]
    texts = ["click(x=30, y=90)", "click(x=120, y=150)", "done()"]
    script(model_server, "same", texts)
    actor = await started(VLMAgent(engine(model_server, "script-same"), history=2))
    imitator = await started(VLMAgent(engine(model_server, "script-unused"), history=2))
    for i, (action, text) in enumerate(zip(actions, texts, strict=True)):
        acted = await actor.act(observation(i))
        imitated = await imitator.imitate(observation(i), action)
        assert imitated.text == acted.text == text
        assert imitated.action == acted.action == action
        assert imitated.messages == acted.messages
    last = imitated.messages
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user"]
    images = [p["frame_id"] for m in last for p in m["content"] if p["type"] == "image"]
    assert images == ["f1", "f2"]  # history=2: the previous screenshot and the current one
    assert "click(x=30, y=90)" in last[1]["content"][0]["text"]  # the oldest answer, as text


async def test_an_action_the_agent_cannot_write_is_skipped_and_leaves_the_history(model_server):
    agent = await started(VLMAgent(engine(model_server, "script-unused"), history=2), context(DESKTOP, "desktop"))
    first = await agent.imitate(observation(0), Click(x=5, y=5))
    assert first is not None
    assert await agent.imitate(observation(1), Tap(x=5, y=5)) is None  # not in the desktop action set
    assert await agent.imitate(observation(1), Python(code="print(1)")) is None
    assert await agent.imitate(observation(1), Click(x=160, y=5)) is None  # off the 160x210 screen
    second = await agent.imitate(observation(1), Done())
    assert len(agent.history.turns) == 2
    assert "Current screenshot (step 2)" in second.messages[-1]["content"][0]["text"]
    pytool = await started(VLMAgent(engine(model_server, "script-unused")), context(PYTOOL, "pytool"))
    assert (await pytool.imitate(observation(0), Python(code="print(1 + 1)"))).text == 'python(code="print(1 + 1)")'


async def test_imitate_needs_start_and_a_typed_action(model_server):
    agent = VLMAgent(engine(model_server, "script-unused"))
    with pytest.raises(RuntimeError, match="before start"):
        await agent.imitate(observation(0), Done())
    await agent.start(context())
    with pytest.raises(TypeError, match="typed action"):
        await agent.imitate(observation(0), {"type": "done"})


async def test_sampling_options_and_unseeded_requests(model_server):
    with pytest.raises(ValueError, match="not both"):
        VLMAgent(engine(model_server, "script-x"), sampling=SamplingParams(max_new_tokens=4), max_new_tokens=8)
    with pytest.raises(TypeError, match="SamplingParams"):
        VLMAgent(engine(model_server, "script-x"), sampling={"max_new_tokens": 4})
    agent = VLMAgent(engine(model_server, "script-x"), sampling=SamplingParams(max_new_tokens=5, temperature=1.0))
    assert agent.sampling.max_new_tokens == 5
    script(model_server, "unseeded", ["done()", "done()"])
    for seeded in (True, False):
        agent = await started(VLMAgent(engine(model_server, "script-unseeded"), seed=1, seeded=seeded))
        await agent.act(observation(0))
    seeds = seeds_sent(model_server, "script-unseeded")
    assert seeds[0] is not None and seeds[1] is None


async def test_actions_restrict_what_the_prompt_lists_and_the_parser_accepts(model_server):
    script(model_server, "restricted", ["scroll(x=1, y=1, dy=3)", "click(x=4, y=5)"])
    agent = await started(VLMAgent(engine(model_server, "script-restricted"), actions=["click", "done"]))
    system = agent.system_text(*agent.frame_for(SCREEN))
    assert "click(" in system and "done(" in system and "scroll(" not in system and "goto(" not in system
    refused = await agent.act(observation(0))
    assert refused.action is None and "not in the" in refused.error
    assert (await agent.act(observation(1))).action == Click(x=4, y=5)
    assert await agent.imitate(observation(2), Type(text="x")) is None
    with pytest.raises(ValueError, match="actions must be"):
        VLMAgent(engine(model_server, "script-x"), actions=["click", "teleport"])
    with pytest.raises(ValueError, match="actions must be"):
        VLMAgent(engine(model_server, "script-x"), actions=[])
    pytool = VLMAgent(engine(model_server, "script-x"), actions=["click"])
    with pytest.raises(ValueError, match="VLMAgent actions: .* has no types"):
        await pytool.start(context(PYTOOL, "pytool"))
