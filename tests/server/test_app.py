"""The env server over real HTTP on loopback: bad input gets 4xx and the server keeps serving; a crashed
or hung environment fails only its own session, which is replaced."""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar

import httpx
import numpy as np
import pytest

from mintgym.action_spaces import ActionModel, Key
from mintgym.env import registration
from mintgym.env.core import SimpleHost
from mintgym.environments.null import NullEnvironment
from mintgym.errors import EnvironmentCrashed
from mintgym.server.app import create_app
from mintgym.wire import FRAME_CONTENT_TYPE, unpack_frame


class FragileEnvironment(NullEnvironment):
    """Crashes on key F12, hangs on key F11; otherwise the null environment."""

    domain: ClassVar[str] = "null"

    async def execute(self, action: ActionModel) -> None:
        if isinstance(action, Key) and action.keys == ("f12",):
            raise EnvironmentCrashed("the display died")
        if isinstance(action, Key) and action.keys == ("f11",):
            await asyncio.sleep(3600)
        await super().execute(action)


class FragileHost(SimpleHost):
    domain: ClassVar[str] = "null"
    env_cls = FragileEnvironment


@pytest.fixture
def server(serve_app):
    return serve_app(create_app(FragileHost(width=320, height=200), request_timeout=2.0, max_body_bytes=64_000))


def new_session(client: httpx.Client) -> str:
    resp = client.post("/v1/sessions", json={})
    assert resp.status_code == 201, resp.text
    return resp.json()["session_id"]


def reset(client, sid, encoding="raw"):
    resp = client.post(f"/v1/sessions/{sid}/reset", json={"task_id": "null/echo", "seed": 3,
                                                         "frame": {"encoding": encoding}})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith(FRAME_CONTENT_TYPE)
    return unpack_frame(resp.content)


def error_of(resp):
    return resp.json()["error"]


def test_health_spec_and_one_episode(server):
    with httpx.Client(base_url=server) as c:
        assert c.get("/v1/health").json()["status"] == "ok"
        spec = c.get("/v1/spec").json()
        assert spec["domain"] == "null" and any(t["id"] == "null/echo" for t in spec["tasks"])
        sid = new_session(c)
        obs, meta = reset(c, sid)
        assert obs.screenshot.shape == (200, 320, 3) and meta.info["task_id"] == "null/echo"
        resp = c.post(f"/v1/sessions/{sid}/step", json={"action": {"type": "done", "answer": "ok"}})
        obs, meta = unpack_frame(resp.content)
        assert meta.terminated and meta.reward == 1.0
        assert c.post(f"/v1/sessions/{sid}/evaluate").json()["score"] == 1.0


@pytest.mark.parametrize("encoding", ["png", "jpeg", "raw"])
def test_every_encoding_round_trips(server, encoding):
    with httpx.Client(base_url=server) as c:
        sid = new_session(c)
        obs, _ = reset(c, sid, encoding)
        raw, _ = reset(c, sid, "raw")
        tolerance = 8 if encoding == "jpeg" else 0
        assert np.abs(obs.screenshot.astype(int) - raw.screenshot.astype(int)).max() <= tolerance
        shot = c.get(f"/v1/sessions/{sid}/screenshot", params={"encoding": encoding})
        assert shot.status_code == 200 and shot.headers["x-mintgym-shape"] == "200,320,3"


@pytest.mark.parametrize("body, code, words", [
    ({"action": {"type": "clack", "x": 1, "y": 1}}, "invalid_action", "unknown action type 'clack'"),
    ({"action": {"type": "click", "x": 1}}, "invalid_action", "missing field 'y'"),
    ({"action": {"type": "click", "x": 1, "y": 1, "z": 3}}, "invalid_action", "unknown field 'z'"),
    ({"action": {"type": "click", "x": 500, "y": 1}}, "invalid_action", "off the 320x200 screen"),
    ({"action": {"type": "goto", "url": "http://x"}}, "invalid_action", "not in the 'desktop' action set"),
    ({}, "bad_request", "exactly one of"),
    ({"action": [1, 2]}, "bad_request", "action"),
])
def test_bad_actions_are_4xx_and_change_nothing(server, body, code, words):
    with httpx.Client(base_url=server) as c:
        sid = new_session(c)
        reset(c, sid)
        resp = c.post(f"/v1/sessions/{sid}/step", json=body)
        assert resp.status_code == 422, resp.text
        assert error_of(resp)["code"] == code and words in error_of(resp)["message"]
        listed = c.get("/v1/sessions").json()["sessions"]
        assert [s["step"] for s in listed if s["session_id"] == sid] == [0]


def test_invalid_action_in_count_mode_is_a_step(server):
    with httpx.Client(base_url=server) as c:
        sid = new_session(c)
        reset(c, sid)
        resp = c.post(f"/v1/sessions/{sid}/step", json={"action": {"type": "click", "x": 999, "y": 0},
                                                        "invalid": "count"})
        obs, meta = unpack_frame(resp.content)
        assert resp.status_code == 200 and obs.step == 1 and "off the" in meta.info["error"]


def test_malformed_json_unknown_session_oversized_payload(server):
    with httpx.Client(base_url=server) as c:
        sid = new_session(c)
        resp = c.post(f"/v1/sessions/{sid}/step", content=b"{not json", headers={"content-type": "application/json"})
        assert resp.status_code == 422 and error_of(resp)["code"] == "bad_request"
        resp = c.post("/v1/sessions/nope/reset", json={})
        assert resp.status_code == 404 and error_of(resp)["code"] == "unknown_session"
        resp = c.post(f"/v1/sessions/{sid}/step", json={"action_text": "type(text='" + "a" * 70_000 + "')"})
        assert resp.status_code == 413 and "exceeds the limit" in error_of(resp)["message"]
        resp = c.post(f"/v1/sessions/{sid}/reset", json={"task_id": "null/ech"})
        assert resp.status_code == 404 and "null/echo" in error_of(resp)["message"]
        resp = c.post(f"/v1/sessions/{sid}/step", json={"action": {"type": "done"}})
        assert resp.status_code == 409 and "before reset" in error_of(resp)["message"]
        assert c.get("/v1/health").status_code == 200  # still serving


def test_crashed_session_is_replaced_and_others_go_on(server):
    with httpx.Client(base_url=server) as c:
        a, b = new_session(c), new_session(c)
        reset(c, a)
        reset(c, b)
        resp = c.post(f"/v1/sessions/{a}/step", json={"action": {"type": "key", "keys": ["f12"]}})
        assert resp.status_code == 500 and error_of(resp)["code"] == "session_failed"
        assert "display died" in error_of(resp)["message"] and error_of(resp)["session_id"] == a
        ok = c.post(f"/v1/sessions/{b}/step", json={"action": {"type": "click", "x": 3, "y": 3}})
        assert ok.status_code == 200
        status = {s["session_id"]: s for s in c.get("/v1/sessions").json()["sessions"]}
        assert status[a]["status"] == "needs_reset" and status[a]["failures"] == 1
        again = c.post(f"/v1/sessions/{a}/step", json={"action": {"type": "done"}})  # its episode is gone
        assert again.status_code == 500 and error_of(again)["code"] == "session_failed"
        assert "its episode is lost, call reset" in error_of(again)["message"]
        oracle = c.post(f"/v1/sessions/{a}/oracle")  # nor is there an episode state to advise on
        assert oracle.status_code == 500 and error_of(oracle)["code"] == "session_failed"
        reset(c, a)  # the replacement works
        assert c.get("/v1/health").json()["replaced"] == 1


def test_hung_environment_times_out_alone(server):
    with httpx.Client(base_url=server, timeout=30) as c:
        a, b = new_session(c), new_session(c)
        reset(c, a)
        reset(c, b)
        resp = c.post(f"/v1/sessions/{a}/step", json={"action": {"type": "key", "keys": ["f11"]}})
        assert resp.status_code == 504 and error_of(resp)["code"] == "timeout"
        assert c.post(f"/v1/sessions/{b}/step", json={"action": {"type": "wait", "seconds": 0}}).status_code == 200


def test_token_required_when_configured(serve_app):
    url = serve_app(create_app(FragileHost(), token="s3cret"))
    with httpx.Client(base_url=url) as c:
        assert c.get("/v1/health").status_code == 200  # health stays open for probes
        resp = c.post("/v1/sessions", json={})
        assert resp.status_code == 401 and "bearer token" in error_of(resp)["message"]
        assert c.post("/v1/sessions", json={}, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.post("/v1/sessions", json={}, headers={"Authorization": "Bearer s3cret"}).status_code == 201


def test_off_loopback_without_token_refuses_to_start():
    from mintgym.server.serve import serve

    with pytest.raises(SystemExit, match="needs a bearer token"):
        serve("null", host="0.0.0.0", port=0)


def test_registry_sees_the_null_pack():
    assert registration.task("null/echo").domain == "null"


def test_deleting_a_session_mid_step_answers_that_step_409(serve_app):
    import threading

    url = serve_app(create_app(FragileHost(width=320, height=200), request_timeout=60.0))
    with httpx.Client(base_url=url, timeout=30) as c:
        sid, other = new_session(c), new_session(c)
        reset(c, sid)
        reset(c, other)
        answered = {}
        hang = threading.Thread(target=lambda: answered.update(resp=httpx.post(
            f"{url}/v1/sessions/{sid}/step", json={"action": {"type": "key", "keys": ["f11"]}}, timeout=30)))
        hang.start()
        while not any(s["session_id"] == sid and s["step"] == 1 for s in c.get("/v1/sessions").json()["sessions"]):
            time.sleep(0.01)  # until the step is under way
        assert c.delete(f"/v1/sessions/{sid}").status_code == 200
        hang.join(30)
        resp = answered["resp"]
        assert resp.status_code == 409 and error_of(resp)["code"] == "session_closed", resp.text
        assert "was closed during step" in error_of(resp)["message"]
        assert c.post(f"/v1/sessions/{sid}/step", json={"action": {"type": "wait", "seconds": 0}}).status_code == 404
        assert c.post(f"/v1/sessions/{other}/step", json={"action": {"type": "wait", "seconds": 0}}).status_code == 200
        assert c.get("/v1/health").json()["failed_requests"] == 0  # a close is no environment failure


@pytest.mark.parametrize("domain", ["null", "pytool", "web", "desktop", "android"])
async def test_every_domain_refuses_a_negative_seed_at_the_door(domain):
    """The seed is checked by the reset body's model, before any domain's RNG could meet it."""
    app = create_app(registration.host_class(domain)())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
        resp = await c.post("/v1/sessions/any/reset", json={"seed": -1})
    assert resp.status_code == 422, resp.text
    assert error_of(resp)["message"] == "invalid request: seed: Input should be greater than or equal to 0"


async def test_a_png_frame_is_encoded_off_the_event_loop():
    """While one session's large PNG frame is encoded, another session's step is answered."""
    app = create_app(FragileHost(width=320, height=200))
    manager = app.state.manager
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
        big = (await c.post("/v1/sessions", json={"env_options": {"width": 7680, "height": 4320}})).json()["session_id"]
        small = (await c.post("/v1/sessions", json={})).json()["session_id"]
        assert (await c.post(f"/v1/sessions/{small}/reset", json={"task_id": "null/echo"})).status_code == 200
        encoding = asyncio.ensure_future(c.post(f"/v1/sessions/{big}/reset", json={
            "task_id": "null/echo", "frame": {"encoding": "png"}}))
        while manager.sessions[big].status != "running":  # set just before its frame is encoded
            await asyncio.sleep(0)
        step = await c.post(f"/v1/sessions/{small}/step", json={"action": {"type": "wait", "seconds": 0},
                                                                 "frame": {"encoding": "raw"}})
        assert step.status_code == 200
        assert not encoding.done(), "the other session's step waited for the PNG encode"
        big_frame, _ = unpack_frame((await encoding).content)
        assert big_frame.screenshot.shape == (4320, 7680, 3)
