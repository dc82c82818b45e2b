"""The openai engine against small real servers on loopback that fail on purpose."""

from __future__ import annotations

import asyncio
import socket

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from mintgym.errors import ServerError
from mintgym.inference import GenerationRequest, SamplingParams, make_engine
from mintgym.testing import serve_asgi as serve_in_thread

COMPLETION = {
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "click(x=1, y=2)"},
                 "finish_reason": "stop",
                 "logprobs": {"content": [{"token": "token_id:7", "logprob": -0.5},
                                          {"token": "token_id:9", "logprob": -1.25}]}}],
    "prompt_token_ids": [1, 2, 3],
}


def _request() -> GenerationRequest:
    return GenerationRequest([{"role": "user", "content": "hi"}], SamplingParams(max_new_tokens=4, seed=0))


def _app(handler) -> tuple[FastAPI, list[dict]]:
    """An app whose /v1/chat/completions is ``handler(call_number, body)``; records every body."""
    app = FastAPI()
    calls: list[dict] = []

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": "flaky-model", "object": "model"}]}

    @app.post("/v1/chat/completions")
    async def complete(request: Request):
        calls.append(await request.json())
        return await handler(len(calls), calls[-1])

    return app, calls


def _engine(url: str, **kwargs):
    kwargs.setdefault("max_retries", 2)
    kwargs.setdefault("backoff_s", 0.01)
    return make_engine("openai", base_url=url, **kwargs)


async def _fail_twice(n: int, body: dict):
    if n <= 2:
        return JSONResponse({"error": {"message": "overloaded"}}, status_code=500 if n == 1 else 503)
    return JSONResponse(COMPLETION)


def test_two_server_errors_then_success():
    app, calls = _app(_fail_twice)
    with serve_in_thread(app) as url:
        engine = _engine(url)
        [g] = engine.generate([_request()])
        engine.close()
    assert len(calls) == 3
    assert g.text == "click(x=1, y=2)"
    assert g.response_token_ids == [7, 9]  # vLLM's return_tokens_as_token_ids form
    assert g.response_logprobs == [-0.5, -1.25]
    assert g.prompt_token_ids == [1, 2, 3]
    assert g.policy_version is None  # the server does not say
    body = calls[-1]
    assert body["model"] == "flaky-model" and body["logprobs"] is True and body["return_token_ids"] is True
    assert body["max_tokens"] == 4 and body["seed"] == 0


async def test_two_server_errors_then_success_async():
    app, calls = _app(_fail_twice)
    with serve_in_thread(app) as url:
        engine = _engine(url)
        [g] = await engine.agenerate([_request()])
    assert len(calls) == 3 and g.response_token_ids == [7, 9]


def test_server_errors_past_the_retries_raise():
    async def always_500(n, body):
        return JSONResponse({"error": {"message": "boom"}}, status_code=500)

    app, calls = _app(always_500)
    with serve_in_thread(app) as url:
        engine = _engine(url, max_retries=2)
        with pytest.raises(ServerError, match="after 3 attempts.*HTTP 500: boom") as info:
            engine.generate([_request()])
    assert len(calls) == 3 and info.value.status == 500


def test_a_server_slower_than_the_timeout_raises_after_retries():
    async def slow(n, body):
        await asyncio.sleep(1.5)
        return JSONResponse(COMPLETION)

    app, calls = _app(slow)
    with serve_in_thread(app) as url:
        engine = _engine(url, timeout_s=0.2, max_retries=1, model="m")
        with pytest.raises(ServerError, match="after 2 attempts.*Timeout"):
            engine.generate([_request()])
    assert len(calls) == 2


def test_client_errors_are_not_retried():
    async def bad(n, body):
        return JSONResponse({"error": {"message": "messages: missing", "code": "invalid_request"}}, status_code=400)

    app, calls = _app(bad)
    with serve_in_thread(app) as url, pytest.raises(ServerError, match="HTTP 400.*messages: missing") as info:
        _engine(url, model="m").generate([_request()])
    assert len(calls) == 1 and info.value.status == 400 and info.value.code == "invalid_request"


@pytest.mark.parametrize("reply, message", [
    (Response(b"<html>oops</html>", media_type="text/html"), "not JSON"),
    (Response(b"", status_code=200), "empty body"),
    (JSONResponse({"id": "x", "choices": []}), "without choices"),
    (JSONResponse({"choices": [{"message": {}}]}), "without choices"),
])
def test_garbage_answers_raise_server_error(reply, message):
    async def garbage(n, body):
        return reply

    app, _ = _app(garbage)
    with serve_in_thread(app) as url, pytest.raises(ServerError, match=message):
        _engine(url, model="m").generate([_request()])


def test_answer_without_logprobs_or_ids_gives_none():
    async def plain(n, body):
        return JSONResponse({"choices": [{"message": {"content": "done()"}, "finish_reason": "length"}],
                             "policy_version": 4})

    app, _ = _app(plain)
    with serve_in_thread(app) as url:
        engine = _engine(url, model="m", return_token_ids=False)
        [g] = engine.generate([_request()])
    assert g.text == "done()" and g.finish_reason == "length" and g.policy_version == engine.policy_version == 4
    assert g.response_token_ids is None and g.response_logprobs is None and g.prompt_token_ids is None
    assert g.logprobs_source == "none"


def test_nothing_listening_raises_after_retries():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    engine = _engine(f"http://127.0.0.1:{port}", model="m", max_retries=1)
    with pytest.raises(ServerError, match="after 2 attempts.*Connect"):
        engine.generate([_request()])
