"""The VLM agent records the messages it sent, exactly, with images replaced by the frames they came from."""

from __future__ import annotations

import json

import httpx
import numpy as np

from mintgym.action_spaces import DESKTOP
from mintgym.agents.vlm import VLMAgent, recorded_messages
from mintgym.inference import make_engine
from mintgym.policy import AgentContext
from mintgym.types import Observation


def _observation(step: int) -> Observation:
    return Observation(np.full((720, 1280, 3), 40 + step, dtype=np.uint8), "Click the button.", "desktop", step,
                       f"frame-{step}")


def _flat(messages: list[dict]) -> tuple[list[str], list[str], list[list[int]], list[str | None]]:
    roles = [m["role"] for m in messages]
    texts = [p["text"] for m in messages for p in m["content"] if p["type"] == "text"]
    images = [p for m in messages for p in m["content"] if p["type"] == "image"]
    return roles, texts, [i["size"] for i in images], [i["frame_id"] for i in images]


def _script(url: str, texts: list[str]) -> None:
    httpx.post(f"{url}/control/rec", json=texts).raise_for_status()


def _requests(url: str) -> list[dict]:
    return [r for r in httpx.get(f"{url}/control/requests").json() if r["mode"] == "script-rec"]


async def test_recorded_messages_are_what_the_server_received(model_server):
    _script(model_server, ["no action here", "click(x=5, y=6)", "done()"])
    engine = make_engine("openai", base_url=f"{model_server}/script-rec/v1", backoff_s=0.01)
    agent = VLMAgent(engine, history=2, retries=1, max_pixels=320 * 180)
    await agent.start(AgentContext(task_id="t/x", domain="desktop", instruction="Click the button.",
                                   action_set=DESKTOP, screen_size=(1280, 720), max_steps=5, seed=0))
    first = await agent.act(_observation(0))  # the first answer is unusable, the retry is a click
    second = await agent.act(_observation(1))
    sent = _requests(model_server)
    assert len(sent) == 3
    for step, request in ((first, sent[1]), (second, sent[2])):
        json.dumps(step.messages)  # JSON-safe as recorded
        roles, texts, sizes, _ = _flat(step.messages)
        assert roles == request["roles"] and texts == request["texts"]
        assert [tuple(s) for s in sizes] == [tuple(s) for s in request["images"]]
    assert _flat(first.messages)[0] == ["system", "user", "assistant", "user"]  # the retry as sent
    assert "could not be used" in _flat(first.messages)[1][-1]
    assert _flat(first.messages)[3] == ["frame-0"]
    assert _flat(second.messages)[3] == ["frame-0", "frame-1"]  # the history image, then the current one
    assert _flat(second.messages)[2] == [[320, 180], [320, 180]]


def test_unknown_images_and_string_contents():
    image = np.zeros((4, 6, 3), dtype=np.uint8)
    out = recorded_messages([{"role": "system", "content": "be brief"},
                             {"role": "user", "content": [{"type": "image", "image": image},
                                                          {"type": "text", "text": "go"}]}], [])
    assert out == [{"role": "system", "content": [{"type": "text", "text": "be brief"}]},
                   {"role": "user", "content": [{"type": "image", "frame_id": None, "size": [6, 4]},
                                                {"type": "text", "text": "go"}]}]
