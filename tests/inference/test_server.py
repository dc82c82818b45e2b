"""serve-model over real HTTP on loopback, and the openai engine and the official ``openai`` SDK against it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest

from mintgym.errors import ServerError
from mintgym.inference import InferenceEngine, make_engine
from mintgym.inference.images import to_data_url
from mintgym.inference.server import _pieces, create_model_app
from mintgym.testing import serve_asgi as serve_in_thread


@pytest.fixture(scope="module")
def server(tiny_model_path):
    engine = make_engine("hf", model_path=tiny_model_path)
    app = create_model_app(engine, model_name="tiny-vlm")
    with serve_in_thread(app) as url:
        yield url, engine, app


@pytest.fixture(scope="module")
def client(server):
    engine = make_engine("openai", base_url=server[0], max_retries=0, timeout_s=60)
    yield engine
    engine.close()


def test_health_and_models(server):
    url = server[0]
    assert httpx.get(f"{url}/health").json()["status"] == "ok"
    models = httpx.get(f"{url}/v1/models").json()
    assert models["data"][0]["id"] == "tiny-vlm"


def test_openai_engine_matches_the_hf_engine_exactly(server, client, make_request):
    _, engine, _ = server
    requests = [make_request(i, seed=20 + i, image=i != 1, top_logprobs=2) for i in range(4)]
    remote = client.generate(requests)
    local = engine.generate(requests)
    assert client.model == "tiny-vlm"  # discovered from /v1/models
    for r, g in zip(remote, local, strict=True):
        assert r.text == g.text
        assert r.response_token_ids == g.response_token_ids
        assert r.prompt_token_ids == g.prompt_token_ids
        assert r.response_logprobs == g.response_logprobs  # floats survive JSON exactly
        assert r.policy_version == g.policy_version == 0
        assert r.logprobs_source == "server"
        assert len(r.top_logprobs) == len(r.response_token_ids) and len(r.top_logprobs[0]) == 2
        assert r.finish_reason == g.finish_reason


async def test_async_openai_engine(server, client, make_request):
    _, engine, _ = server
    requests = [make_request(i, seed=i) for i in range(3)]
    remote = await client.agenerate(requests)
    assert [g.response_token_ids for g in remote] == [g.response_token_ids for g in engine.generate(requests)]


def test_concurrent_requests_are_batched(server, client, make_request):
    _, _, app = server
    app.state.batcher.batch_sizes.clear()
    results = client.generate([make_request(i, seed=i, max_new_tokens=6) for i in range(8)])
    assert len(results) == 8
    assert sum(app.state.batcher.batch_sizes) == 8
    assert max(app.state.batcher.batch_sizes) > 1


def test_response_shape_is_openai_with_our_fields(server, screenshot):
    url = server[0]
    body = {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": to_data_url(screenshot, "JPEG")}},
        {"type": "text", "text": "click OK"}]}], "max_tokens": 5, "seed": 1, "logprobs": True}
    data = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60).json()
    choice = data["choices"][0]
    assert data["object"] == "chat.completion" and isinstance(choice["message"]["content"], str)
    assert len(choice["token_ids"]) == len(choice["logprobs"]["content"]) == data["usage"]["completion_tokens"]
    entry = choice["logprobs"]["content"][0]
    assert set(entry) >= {"token", "logprob", "bytes", "top_logprobs"}
    assert len(data["prompt_token_ids"]) == data["usage"]["prompt_tokens"]
    assert data["policy_version"] == 0
    no_logprobs = httpx.post(f"{url}/v1/chat/completions", json={**body, "logprobs": False}, timeout=60).json()
    assert no_logprobs["choices"][0]["logprobs"] is None


@pytest.mark.parametrize("body, status, text", [
    ({}, 400, "messages"),
    ({"messages": []}, 400, "non-empty"),
    ({"messages": [{"role": "robot", "content": "hi"}]}, 400, "role"),
    ({"messages": [{"role": "user", "content": "hi"}], "n": 2}, 400, "n=1"),
    ({"messages": [{"role": "user", "content": "hi"}], "model": "gpt-4o"}, 404,
     "The model `gpt-4o` does not exist; this server serves `tiny-vlm`"),
    ({"messages": [{"role": "user", "content": "hi"}], "temperature": -1}, 400, "temperature"),
    ({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]}, 400, "readable image"),
    ({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}]}]}, 400, "base64"),
])
def test_bad_requests_get_openai_style_4xx(server, body, status, text):
    for stream in (False, True):  # refused before anything streams
        response = httpx.post(f"{server[0]}/v1/chat/completions", json={**body, "stream": stream}, timeout=60)
        assert response.status_code == status
        error = response.json()["error"]
        assert text in error["message"] and error["type"] == "invalid_request_error"
    if status == 404:
        assert error["code"] == "model_not_found" and error["param"] == "model"


def _events(response: httpx.Response) -> list:
    """The ``data:`` payloads of a server-sent event stream, JSON decoded (``[DONE]`` kept as the string)."""
    lines = [line for line in response.text.split("\n\n") if line]
    assert all(line.startswith("data: ") and "\n" not in line for line in lines), lines
    return [line[6:] if line == "data: [DONE]" else json.loads(line[6:]) for line in lines]


def test_a_streamed_answer_is_openai_server_sent_events(server):
    url = server[0]
    body = {"model": "tiny-vlm", "messages": [{"role": "user", "content": "click OK"}], "max_tokens": 12,
            "temperature": 0, "logprobs": True}
    whole = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60).json()
    response = httpx.post(f"{url}/v1/chat/completions", timeout=60,
                          json={**body, "stream": True, "stream_options": {"include_usage": True}})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    *chunks, usage, done = _events(response)
    assert done == "[DONE]" and usage["choices"] == [] and usage["usage"] == whole["usage"]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "tiny-vlm" and c["id"] == chunks[0]["id"]
               for c in chunks)
    choices = [c["choices"][0] for c in chunks]
    assert choices[0]["delta"] == {"role": "assistant", "content": ""}
    assert choices[-1]["delta"] == {} and choices[-1]["finish_reason"] == whole["choices"][0]["finish_reason"]
    assert all(c["finish_reason"] is None for c in choices[:-1])
    middle = choices[1:-1]
    answer = whole["choices"][0]
    assert "".join(c["delta"]["content"] for c in middle) == answer["message"]["content"]
    assert [t for c in middle for t in c["token_ids"]] == answer["token_ids"]
    assert [e for c in middle for e in c["logprobs"]["content"]] == answer["logprobs"]["content"]
    plain = _events(httpx.post(f"{url}/v1/chat/completions", json={**body, "stream": True, "logprobs": False},
                               timeout=60))
    assert plain[-1] == "[DONE]" and "usage" not in plain[0] and plain[1]["choices"][0]["logprobs"] is None


def test_stream_pieces_join_to_the_text_at_token_boundaries(hf_engine):
    tokenizer = hf_engine.tokenizer
    text = "Klick é 世界 — ok"
    ids = tokenizer.encode(text, add_special_tokens=False)
    pieces = _pieces(text, ids, tokenizer)
    assert "".join(p for p, _, _ in pieces) == text
    assert [i for _, start, end in pieces for i in range(start, end)] == list(range(len(ids)))
    assert all(p for p, _, _ in pieces) and len(pieces) > 3
    cut = _pieces("Klick", ids, tokenizer)  # a stop string cut the text: the rest of the tokens end the stream
    assert "".join(p for p, _, _ in cut) == "Klick" and cut[-1][2] == len(ids)
    assert _pieces("abc", [1, 2], None) == [("abc", 0, 2)]


def test_the_default_name_is_the_folder_name(hf_engine, tiny_model_path):
    with serve_in_thread(create_model_app(hf_engine)) as url:
        assert httpx.get(f"{url}/v1/models").json()["data"][0]["id"] == Path(tiny_model_path).name


def test_too_large_image_is_refused_with_its_size(server, client):
    huge = np.zeros((5000, 4100, 3), dtype=np.uint8)  # 20.5 MP
    body = {"messages": [{"role": "user", "content": [{"type": "image_url",
                                                       "image_url": {"url": to_data_url(huge)}}]}]}
    response = httpx.post(f"{server[0]}/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "image_too_large"
    assert "4100x5000" in response.json()["error"]["message"]
    from mintgym.inference import GenerationRequest

    with pytest.raises(ServerError, match="20.5 MP") as info:
        client.generate([GenerationRequest([{"role": "user", "content": [{"type": "image", "image": huge}]}])])
    assert info.value.status == 413 and info.value.code == "image_too_large"


def test_policy_version_follows_weight_updates(tiny_model_path, make_request):
    engine = make_engine("hf", model_path=tiny_model_path)
    with serve_in_thread(create_model_app(engine)) as url:
        client = make_engine("openai", base_url=url)
        request = make_request(0, temperature=0.0)
        before = client.generate([request])[0]
        assert before.policy_version == client.policy_version == 0
        state = {k: v + 0.5 if v.is_floating_point() else v for k, v in engine.model.state_dict().items()}
        engine.update_weights(5, state)
        after = client.generate([request])[0]
        assert after.policy_version == client.policy_version == 5
        assert after.response_token_ids != before.response_token_ids
        client.close()


def test_api_key_is_required_when_set(hf_engine):
    with serve_in_thread(create_model_app(hf_engine, api_key="s3cret")) as url:
        assert httpx.get(f"{url}/v1/models").status_code == 401
        assert httpx.get(f"{url}/health").status_code == 200
        ok = make_engine("openai", base_url=url, api_key="s3cret")
        assert ok.generate([_hi()])[0].response_token_ids
        bad = make_engine("openai", base_url=url, api_key="wrong")
        with pytest.raises(ServerError, match="401|bearer"):
            bad.generate([_hi()])
        ok.close()
        bad.close()


def _hi():
    from mintgym.inference import GenerationRequest, SamplingParams

    return GenerationRequest([{"role": "user", "content": "hi"}], SamplingParams(max_new_tokens=3))


@contextmanager
def serve_model_command(path: str, *flags: str):
    """``mintgym serve-model PATH FLAGS`` in a subprocess on a free loopback port; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    proc = subprocess.Popen([sys.executable, "-m", "mintgym.cli", "serve-model", path, "--port", str(port), *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ})
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"serve-model did not come up: {proc.stdout.read().decode()[-2000:]}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(15)
        proc.stdout.close()


def test_serve_model_command_in_a_subprocess(tiny_model_path):
    with serve_model_command(tiny_model_path) as url:
        client = make_engine("openai", base_url=url)
        assert client.generate([_hi()])[0].prompt_token_ids
        assert client.model == Path(tiny_model_path).name  # the folder's name, not its path
        client.close()


def test_the_openai_sdk_streams_from_serve_model_under_the_name_set(tiny_model_path):
    """The official client against `mintgym serve-model --served-model-name`: the name is listed and answered,
    another is its NotFoundError, and the streamed deltas join to the answer given whole (greedy)."""
    import openai

    with serve_model_command(tiny_model_path, "--served-model-name", "tiny") as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        assert [m.id for m in client.models.list().data] == ["tiny"]
        ask = {"model": "tiny", "messages": [{"role": "user", "content": "click OK"}], "max_tokens": 16,
               "temperature": 0}
        whole = client.chat.completions.create(**ask)
        chunks = list(client.chat.completions.create(**ask, stream=True, stream_options={"include_usage": True}))
        deltas = [c.choices[0].delta.content or "" for c in chunks if c.choices]
        assert "".join(deltas) == whole.choices[0].message.content and len(deltas) > 2
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == whole.choices[0].finish_reason
        assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
        with pytest.raises(openai.NotFoundError) as info:
            client.chat.completions.create(**{**ask, "model": "gpt-4o"}, stream=True)
        assert info.value.code == "model_not_found" and "gpt-4o" in info.value.message
        client.close()


def test_serve_model_refuses_a_public_host_without_a_key(tiny_model_path):
    from mintgym.inference.server import serve_model

    with pytest.raises(ValueError, match="api_key"):
        serve_model(tiny_model_path, host="0.0.0.0")


class _BrokenEngine(InferenceEngine):
    """An engine whose device is gone: every generate fails."""

    policy_version = 3

    def generate(self, requests):
        raise RuntimeError("CUDA error: device lost")


def test_engine_failures_are_openai_style_500s_and_retried():
    with serve_in_thread(create_model_app(_BrokenEngine())) as url:
        response = httpx.post(f"{url}/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
        assert response.status_code == 500
        assert "device lost" in response.json()["error"]["message"]
        client = make_engine("openai", base_url=url, max_retries=1, backoff_s=0.01)
        with pytest.raises(ServerError, match="after 2 attempts.*HTTP 500.*device lost"):
            client.generate([_hi()])
        client.close()
