"""The openai engine against a strict OpenAI-compatible stand-in on loopback: it refuses every request field
it does not know with HTTP 400 (as OpenAI's API does), and one mode refuses logprobs too."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from mintgym.errors import ServerError
from mintgym.inference import GenerationRequest, SamplingParams, make_engine
from mintgym.testing import serve_asgi

KNOWN = {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "seed", "stop", "n",
         "logprobs", "top_logprobs", "stream", "user", "frequency_penalty", "presence_penalty"}


def strict_app() -> tuple[FastAPI, list[dict]]:
    """``/strict/v1``: unknown fields are a 400; ``/nologprobs/v1``: logprobs are refused as well."""
    app = FastAPI()
    bodies: list[dict] = []

    @app.get("/{mode}/v1/models")
    async def models(mode: str):
        return {"object": "list", "data": [{"id": "strict-model", "object": "model"}]}

    @app.post("/{mode}/v1/chat/completions")
    async def complete(mode: str, request: Request):
        body = await request.json()
        bodies.append(body)
        unknown = sorted(set(body) - KNOWN)
        if unknown:
            return JSONResponse({"error": {"message": f"Unrecognized request argument supplied: {unknown[0]}",
                                           "type": "invalid_request_error", "param": None, "code": None}}, 400)
        if mode == "nologprobs" and body.get("logprobs"):
            return JSONResponse({"error": {"message": "This model does not support logprobs.",
                                           "type": "invalid_request_error", "param": "logprobs", "code": None}}, 400)
        choice = {"index": 0, "message": {"role": "assistant", "content": 'done(answer="ok")'},
                  "finish_reason": "stop"}
        if body.get("logprobs"):
            choice["logprobs"] = {"content": [{"token": "done", "logprob": -0.5, "bytes": None, "top_logprobs": []}]}
        return {"id": "x", "object": "chat.completion", "created": 0, "model": "strict-model", "choices": [choice]}

    return app, bodies


@pytest.fixture(scope="module")
def strict():
    app, bodies = strict_app()
    with serve_asgi(app) as url:
        yield url, bodies


def _request() -> GenerationRequest:
    return GenerationRequest([{"role": "user", "content": "hi"}], SamplingParams(max_new_tokens=4, seed=0))


def test_auto_drops_return_token_ids_once_and_says_so_once(strict, caplog):
    url, bodies = strict
    bodies.clear()
    engine = make_engine("openai", base_url=f"{url}/strict", max_retries=0)
    with caplog.at_level(logging.WARNING, logger="mintgym.inference.openai"):
        first = engine.generate([_request()])[0]
        second = engine.generate([_request(), _request()])
    engine.close()
    assert first.text == 'done(answer="ok")' and [g.text for g in second] == [first.text] * 2
    assert first.response_logprobs == [-0.5] and first.response_token_ids is None  # logprobs kept
    assert ["return_token_ids" in b for b in bodies] == [True, False, False, False]  # asked once, then never
    warnings = [r.getMessage() for r in caplog.records if "refuses" in r.getMessage()]
    assert len(warnings) == 1 and "return_token_ids" in warnings[0] and "--token-ids" in warnings[0]


async def test_auto_drops_logprobs_too_when_refused_async(strict, caplog):
    url, bodies = strict
    bodies.clear()
    engine = make_engine("openai", base_url=f"{url}/nologprobs", max_retries=0)
    with caplog.at_level(logging.WARNING, logger="mintgym.inference.openai"):
        [g] = await engine.agenerate([_request()])
        [again] = await engine.agenerate([_request()])
    assert g.text == again.text == 'done(answer="ok")' and g.response_logprobs is None
    assert not any(k in bodies[-1] for k in ("logprobs", "return_token_ids", "top_logprobs"))
    assert len(bodies) == 4  # refused ids, refused logprobs, the answer; then one request
    said = [r.getMessage() for r in caplog.records if "refuses" in r.getMessage()]
    assert len(said) == 2 and "logprobs" in said[1]


def test_on_makes_the_refusal_an_error_that_says_what_to_do(strict):
    url, _ = strict
    engine = make_engine("openai", base_url=f"{url}/strict", max_retries=0, token_ids="on")
    with pytest.raises(ServerError, match="refuses return_token_ids.*--token-ids auto") as info:
        engine.generate([_request()])
    assert info.value.status == 400


def test_off_never_asks(strict):
    url, bodies = strict
    bodies.clear()
    engine = make_engine("openai", base_url=f"{url}/nologprobs", max_retries=0, token_ids="off")
    [g] = engine.generate([_request()])
    assert g.text == 'done(answer="ok")' and len(bodies) == 1
    assert not {"logprobs", "return_token_ids"} & set(bodies[0])
    with pytest.raises(ValueError, match="token_ids must be one of auto, on, off"):
        make_engine("openai", base_url=url, token_ids="maybe")


def _eval(tmp_path, url: str, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "mintgym.cli", "eval", "--tasks", "null/echo", "--agent", "vlm",
           "--model-url", url, "--model-retries", "0", "--episodes", "2", "--no-progress", "--out",
           str(tmp_path / "out"), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_eval_against_the_strict_server(strict, tmp_path):
    url, _ = strict
    proc = _eval(tmp_path, f"{url}/strict/v1")
    assert proc.returncode == 0, proc.stderr
    assert "2/2 succeeded" in proc.stdout and "0 of 2 episodes errored" in proc.stdout
    assert proc.stderr.count("refuses return_token_ids") == 1
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["config"]["agent"] == "vlm" and results["config"]["engine"] == "openai"


def test_eval_exits_nonzero_when_every_episode_errored(strict, tmp_path):
    url, _ = strict
    proc = _eval(tmp_path, f"{url}/strict/v1", "--token-ids", "on")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: every episode errored (2)") and "--token-ids auto" in last
    assert "0/2 succeeded" in proc.stdout and "2 of 2 episodes errored" in proc.stdout


def test_rollout_takes_the_same_engine_options(strict, tmp_path):
    url, _ = strict
    cmd = [sys.executable, "-m", "mintgym.cli", "rollout", "--task", "null/echo", "--agent", "vlm", "--model-url",
           f"{url}/nologprobs/v1", "--token-ids", "off", "--out", str(tmp_path / "r")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "1/1 succeeded, 0 errored" in proc.stdout and "refuses" not in proc.stderr  # off: never asked
