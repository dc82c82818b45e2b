"""``POST /v1/batch`` resets and steps several sessions concurrently and answers every frame in one envelope, a
failed item as its own error; a session created for a task answers that task's declared screen."""

from __future__ import annotations

import asyncio
import json
import time
from typing import ClassVar

import httpx
import pytest

from mintgym.action_spaces import ActionModel
from mintgym.client import protocol
from mintgym.client.transport import HttpResponse
from mintgym.env.core import SimpleHost
from mintgym.env.declarations import Declaration, declaring
from mintgym.environments.null import NullEnvironment
from mintgym.errors import SessionNotFound
from mintgym.server.app import create_app
from mintgym.wire import BATCH_CONTENT_TYPE, MAGIC, unpack_batch, unpack_frame

STEP_SECONDS = 0.4


class SlowHost(SimpleHost):
    """Null sessions whose every action takes STEP_SECONDS."""

    domain: ClassVar[str] = "null"

    class env_cls(NullEnvironment):
        async def execute(self, action: ActionModel) -> None:
            await asyncio.sleep(STEP_SECONDS)
            await super().execute(action)


@pytest.fixture
def server(serve_app):
    return serve_app(create_app(SlowHost(width=64, height=48), request_timeout=10.0))


def sessions(c: httpx.Client, n: int, **body) -> list[str]:
    out = []
    for _ in range(n):
        resp = c.post("/v1/sessions", json=body)
        assert resp.status_code == 201, resp.text
        out.append(resp.json()["session_id"])
    return out


def batch(c: httpx.Client, items: list[dict]) -> list[bytes]:
    resp = c.post("/v1/batch", json={"items": items})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith(BATCH_CONTENT_TYPE)
    return unpack_batch(resp.content)


def reset_item(sid: str, seed: int) -> dict:
    return {"session_id": sid, "reset": {"task_id": "null/echo", "seed": seed, "frame": {"encoding": "raw"}}}


def test_one_request_resets_then_steps_every_session_concurrently(server):
    with httpx.Client(base_url=server, timeout=30) as c:
        ids = sessions(c, 4)
        frames = [unpack_frame(item) for item in batch(c, [reset_item(sid, i) for i, sid in enumerate(ids)])]
        assert [meta.info["seed"] for _, meta in frames] == [0, 1, 2, 3]
        steps = [{"session_id": sid, "step": {"action_text": f"click(x={i}, y=1)", "frame": {"encoding": "png"}}}
                 for i, sid in enumerate(ids)]
        started = time.monotonic()
        frames = [unpack_frame(item) for item in batch(c, steps)]
        assert time.monotonic() - started < 2 * STEP_SECONDS  # concurrently: not 4 x STEP_SECONDS
        assert [meta.info["action"]["x"] for _, meta in frames] == [0, 1, 2, 3]
        assert all(obs.screenshot.shape == (48, 64, 3) and obs.step == 1 for obs, _ in frames)


def test_a_failed_item_is_its_own_error_and_the_others_go_on(server):
    with httpx.Client(base_url=server, timeout=30) as c:
        [sid] = sessions(c, 1)
        items = batch(c, [reset_item(sid, 5), reset_item("nope", 5),
                          {"session_id": sid + "x", "reset": {}, "step": {"action_text": "wait()"}}])
        assert items[0][:4] == MAGIC and unpack_frame(items[0])[1].info["seed"] == 5
        missing, both = json.loads(items[1]), json.loads(items[2])
        assert missing["status"] == 404 and missing["error"]["code"] == "unknown_session"
        assert missing["error"]["session_id"] == "nope"
        assert both["status"] == 422 and "exactly one of 'reset' and 'step'" in both["error"]["message"]
        resp = c.post("/v1/batch", json={"items": [reset_item(sid, 1), reset_item("nope", 1)]})
        with pytest.raises(SessionNotFound, match="no session 'nope'"):  # the client raises the first failure
            protocol.decode_batch(HttpResponse(resp.status_code, dict(resp.headers), resp.content))


@pytest.mark.parametrize("body, words", [
    ({"items": []}, "at least 1 item"),
    ({"items": [{"session_id": "a", "reset": {}}, {"session_id": "a", "reset": {}}]}, "each session at most once"),
    ({"items": [{"session_id": "a", "jump": {}}]}, "Extra inputs are not permitted"),
])
def test_bad_batches_are_422(server, body, words):
    with httpx.Client(base_url=server) as c:
        resp = c.post("/v1/batch", json=body)
        assert resp.status_code == 422 and words in resp.json()["error"]["message"], resp.text


def test_a_session_made_for_a_task_answers_its_declared_screen(server):
    def task_screen(task, size):
        return (size[0] // 2, size[1] // 2) if task.id == "null/echo" else size

    with httpx.Client(base_url=server) as c:
        plain = c.post("/v1/sessions", json={}).json()
        assert plain["screen_size"] == [64, 48]  # null declares nothing: the session's own size
        with declaring(null=Declaration(task_screen=task_screen)):
            created = c.post("/v1/sessions", json={"task_id": "null/echo"}).json()
            assert created["screen_size"] == [32, 24]
            default = c.post("/v1/sessions", json={}).json()  # the task a reset without task_id starts
            assert default["screen_size"] == [32, 24]
        before = len(c.get("/v1/sessions").json()["sessions"])
        resp = c.post("/v1/sessions", json={"task_id": "null/nothing-here"})
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "unknown_task"
        assert len(c.get("/v1/sessions").json()["sessions"]) == before  # refused before an environment started
