"""The openai engine against a strict OpenAI-compatible stand-in on loopback: it refuses every request field
it does not know with HTTP 400 (as OpenAI's API does), one mode refuses logprobs too, and one refuses the
sampling fields OpenAI's reasoning models refuse (reached with drop_fields/rename_fields, ``--model-option``)."""

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
from mintgym.inference.openai import OpenAIEngine
from mintgym.testing import serve_asgi

KNOWN = {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "seed", "stop", "n",
         "logprobs", "top_logprobs", "stream", "user", "frequency_penalty", "presence_penalty", "reasoning_effort"}
#: What a reasoning model refuses, in the words of OpenAI's 400 answers.
REASONING_REFUSES = {"temperature": "", "top_p": "", "max_tokens": " Use 'max_completion_tokens' instead."}


def _refusal(message: str, param: str | None = None, code: str | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error", "param": param,
                                   "code": code}}, 400)


def strict_app() -> tuple[FastAPI, list[dict]]:
    """``/strict/v1``: unknown fields are a 400; ``/nologprobs/v1``: logprobs are refused as well;
    ``/reasoning/v1``: ``temperature``, ``top_p`` and ``max_tokens`` are refused, ``max_completion_tokens``
    required."""
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
            return _refusal(f"Unrecognized request argument supplied: {unknown[0]}")
        if mode == "nologprobs" and body.get("logprobs"):
            return _refusal("This model does not support logprobs.", "logprobs")
        if mode == "reasoning":
            for field, advice in REASONING_REFUSES.items():
                if field in body:
                    return _refusal(f"Unsupported parameter: '{field}' is not supported with this model.{advice}",
                                    field, "unsupported_parameter")
            if not isinstance(body.get("max_completion_tokens"), int):
                return _refusal("max_completion_tokens is required", "max_completion_tokens")
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


# -- reshaping the body for endpoints that refuse sampling fields -------------------------------------------------


def _body(**options) -> dict:
    engine = OpenAIEngine("http://127.0.0.1:9", model="m", **options)  # nothing is sent: only the body is built
    request = GenerationRequest([{"role": "user", "content": "hi"}],
                                SamplingParams(max_new_tokens=7, temperature=0.5, top_p=0.9, seed=3))
    body = engine._payload(request)
    engine.close()
    return body


def test_the_body_as_sent_by_default():
    body = _body()
    assert {k: body[k] for k in ("max_tokens", "temperature", "top_p", "seed")} == {
        "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "seed": 3}
    assert body["model"] == "m" and body["logprobs"] is True and body["return_token_ids"] is True


def test_drop_fields_leaves_them_out():
    body = _body(drop_fields=["temperature", "top_p"])
    assert "temperature" not in body and "top_p" not in body and body["max_tokens"] == 7 and body["seed"] == 3


def test_rename_fields_sends_the_value_under_the_new_name():
    body = _body(rename_fields={"max_tokens": "max_completion_tokens", "seed": "random_seed"})
    assert "max_tokens" not in body and body["max_completion_tokens"] == 7
    assert "seed" not in body and body["random_seed"] == 3 and body["temperature"] == 0.5


def test_extra_body_adds_fields_and_wins_over_a_sampling_field():
    body = _body(extra_body={"reasoning_effort": "low", "temperature": 1.0, "metadata": {"run": "a"}})
    assert body["reasoning_effort"] == "low" and body["temperature"] == 1.0 and body["metadata"] == {"run": "a"}


def test_the_options_together_with_token_ids_off():
    body = _body(token_ids="off", drop_fields=["temperature"], rename_fields={"max_tokens": "max_completion_tokens"},
                 extra_body={"reasoning_effort": "high"})
    assert set(body) == {"model", "messages", "max_completion_tokens", "top_p", "seed", "reasoning_effort"}


@pytest.mark.parametrize("options, message", [
    ({"drop_fields": ["messages"]}, "cannot drop 'messages': every request needs model and messages"),
    ({"drop_fields": ["model"]}, "cannot drop 'model'"),
    ({"drop_fields": ["temprature"]}, "cannot drop 'temprature': not a field the engine sends (max_tokens, "),
    ({"drop_fields": "temperature"}, "a list of field names, got the string 'temperature'"),
    ({"rename_fields": {"max_tokens": "temperature"}},
     "cannot rename 'max_tokens' onto 'temperature': the engine sends 'temperature' itself"),
    ({"rename_fields": {"max_tokens": "messages"}}, "onto 'messages'"),
    ({"rename_fields": {"messages": "input"}}, "cannot rename 'messages'"),
    ({"rename_fields": {"max_tokens": ""}}, "rename 'max_tokens' to a new field name, got ''"),
    ({"rename_fields": {"max_tokens": "n", "seed": "n"}}, "two fields are renamed onto 'n'"),
    ({"rename_fields": ["max_tokens"]}, "rename_fields maps old field names to new ones"),
    ({"drop_fields": ["seed"], "rename_fields": {"seed": "s"}}, "'seed' is both dropped and renamed"),
    ({"drop_fields": ["seed"], "extra_body": {"seed": 1}}, "extra body field 'seed' is also dropped or renamed"),
    ({"rename_fields": {"max_tokens": "max_completion_tokens"}, "extra_body": {"max_completion_tokens": 5}},
     "'max_completion_tokens' is also dropped or renamed"),
    ({"extra_body": {"messages": []}}, "extra body field 'messages' would replace the engine's own"),
])
def test_bad_body_options_are_one_line_errors(options, message):
    with pytest.raises((ValueError, TypeError)) as info:
        OpenAIEngine("http://127.0.0.1:9", model="m", **options)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_refused_sampling_field_says_which_option_reaches_the_endpoint(strict):
    url, _ = strict
    engine = make_engine("openai", base_url=f"{url}/reasoning", max_retries=0)
    with pytest.raises(ServerError, match="--model-option drop=temperature or rename=temperature:NEW .* -- .*"
                                          "'temperature' is not supported") as info:
        engine.generate([_request()])
    assert info.value.status == 400 and info.value.code == "unsupported_parameter"
    engine.close()


def test_the_reshaped_body_reaches_a_reasoning_endpoint(strict):
    url, bodies = strict
    bodies.clear()
    engine = make_engine("openai", base_url=f"{url}/reasoning", max_retries=0, drop_fields=["temperature", "top_p"],
                         rename_fields={"max_tokens": "max_completion_tokens"}, extra_body={"reasoning_effort": "low"})
    [g] = engine.generate([_request()])
    engine.close()
    assert g.text == 'done(answer="ok")'
    assert bodies[-1]["max_completion_tokens"] == 4 and bodies[-1]["reasoning_effort"] == "low"
    assert not {"temperature", "top_p", "max_tokens"} & set(bodies[-1])


REASONING_OPTIONS = ("--model-option", "drop=temperature,top_p", "--model-option",
                     "rename=max_tokens:max_completion_tokens", "--model-option", "body.reasoning_effort=low")


def test_eval_against_a_reasoning_endpoint_fails_every_episode_without_model_options(strict, tmp_path):
    url, _ = strict
    proc = _eval(tmp_path, f"{url}/reasoning/v1")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: every episode errored (2)") and "--model-option drop=temperature" in last
    assert "0/2 succeeded" in proc.stdout


def test_eval_against_a_reasoning_endpoint_succeeds_with_model_options(strict, tmp_path):
    url, bodies = strict
    bodies.clear()
    proc = _eval(tmp_path, f"{url}/reasoning/v1", *REASONING_OPTIONS)
    assert proc.returncode == 0, proc.stderr
    assert "2/2 succeeded" in proc.stdout and "0 of 2 episodes errored" in proc.stdout
    answered = [b for b in bodies if "return_token_ids" not in b]
    assert len(answered) == 2 and all(b["reasoning_effort"] == "low" and b["max_completion_tokens"] == 256
                                      and not {"temperature", "top_p", "max_tokens"} & set(b) for b in answered)
    config = json.loads((tmp_path / "out" / "results.json").read_text())["config"]
    assert config["model_options"] == {"drop_fields": ["temperature", "top_p"], "extra_body": {
        "reasoning_effort": "low"}, "rename_fields": {"max_tokens": "max_completion_tokens"}}


def test_rollout_takes_model_options_too(strict, tmp_path):
    url, _ = strict
    cmd = [sys.executable, "-m", "mintgym.cli", "rollout", "--task", "null/echo", "--agent", "vlm", "--model-url",
           f"{url}/reasoning/v1", "--token-ids", "off", *REASONING_OPTIONS, "--out", str(tmp_path / "r")]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "1/1 succeeded, 0 errored" in proc.stdout
