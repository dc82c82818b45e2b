"""Text channels in prompts: the a11y listing in the model's coordinate frame, the system prompt's lines about
each channel, and the VLM agent's requests with and without the screenshot (a real OpenAI-compatible server)."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from mintgym import grounding
from mintgym.action_spaces import WEB
from mintgym.action_spaces.frames import frame_from_name
from mintgym.agents.channels import a11y_in_frame, channel_intro, channel_text
from mintgym.agents.vlm import VLMAgent
from mintgym.inference import make_engine
from mintgym.policy import AgentContext
from mintgym.types import Observation

LISTING = """[1] text "Click button ONE." (79,24) [0,0][160,50]
[2] button "ONE" (24,76) [5,57][45,97] focused
  [3] button "TWO" [44,253][84,293] offscreen
... 2 more elements not listed"""


def test_the_listing_is_rewritten_in_the_models_frame_and_clicks_land_where_it_says():
    frame = frame_from_name("normalized_1000")
    rewritten = a11y_in_frame(LISTING, frame, (160, 210))
    one = next(e for e in grounding.parse(rewritten) if e.name == "ONE")
    assert frame.to_screen(*one.point, (160, 210)) == (24, 76)  # a click written at the listed point lands there
    assert one.flags == frozenset({"focused"}) and one.depth == 0
    two = next(e for e in grounding.parse(rewritten) if e.name == "TWO")
    assert two.point is None and two.depth == 1 and "offscreen" in two.flags
    assert rewritten.endswith("... 2 more elements not listed")
    assert a11y_in_frame(LISTING, frame_from_name("absolute"), (160, 210)) == LISTING
    relative = a11y_in_frame(LISTING, frame_from_name("relative"), (160, 210))
    assert '[2] button "ONE" (0.1531,0.3643)' in relative


def test_a_listing_in_another_format_is_kept_as_it_is():
    odd = "node 1: Button 'OK' bounds=[0,0][10,10]"
    assert a11y_in_frame(odd, frame_from_name("normalized_1000"), (100, 100)) == odd


def test_channel_intro_and_text():
    assert channel_intro(("screenshot",)) == ""
    som = channel_intro(("screenshot", "som"))
    assert "Numbered boxes" in som and "one per line" in som and "not shown" not in som
    assert "not shown the screen" in channel_intro(("a11y",))
    obs = Observation(np.zeros((210, 160, 3), np.uint8), "Click button ONE.", "web", 0, "f0", a11y=LISTING,
                      dom="<html>" + "x" * 50 + "</html>")
    listing, html = channel_text(obs, frame_from_name("absolute"), limit=40)
    assert listing.startswith("Elements on screen:\n[1] text") and "more characters cut" in listing
    assert html.startswith("Page HTML:\n<html>xxx")


@pytest.mark.parametrize("observe, images", [(("a11y",), 0), (("screenshot", "som"), 1)])
async def test_the_vlm_agent_shows_what_the_episode_observes(model_server, observe, images):
    mode = f"chan{len(observe)}"
    httpx.post(f"{model_server}/control/{mode}", json=["click(x=24, y=76)"]).raise_for_status()
    engine = make_engine("openai", base_url=f"{model_server}/script-{mode}/v1", backoff_s=0.01)
    agent = VLMAgent(engine)
    await agent.start(AgentContext(task_id="miniwob/click-test-2", domain="web", instruction="Click button ONE.",
                                   action_set=WEB, screen_size=(160, 210), max_steps=5, seed=0, observe=observe))
    step = await agent.act(Observation(np.zeros((210, 160, 3), np.uint8), "Click button ONE.", "web", 0, "f0",
                                       a11y=LISTING))
    [request] = [r for r in httpx.get(f"{model_server}/control/requests").json() if r["mode"] == f"script-{mode}"]
    assert len(request["images"]) == images
    assert step.action is not None and (step.action.x, step.action.y) == (24, 76)
    text = "\n".join(request["texts"])
    assert '[2] button "ONE" (24,76)' in text
    assert ("not shown the screen" in text) == (images == 0)
    assert ("Numbered boxes" in text) == ("som" in observe)
