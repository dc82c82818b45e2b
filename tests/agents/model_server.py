"""A real OpenAI-compatible chat server on loopback that misbehaves on purpose, for agent and harness tests.

The behaviour is chosen by the first path segment of the base URL, ``http://HOST:PORT/<mode>/v1``:

* ``script-<name>``: answers the texts queued with ``POST /control/<name>`` in order (the last repeats),
  with token ids, logprobs and a policy version, like ``mintgym serve-model``.
* ``error500``: always HTTP 500.  ``flaky-<n>``: HTTP 500 for the first n requests, then ``done()``.
* ``slow``: sleeps 3 s before answering (for client timeouts).
* ``limit-<pixels>``: HTTP 413 ``image_too_large`` when an image has more pixels, else ``done()``.
* ``badjson``: HTTP 200 with a body that is not JSON.

``GET /control/requests`` lists what each request carried (mode, image sizes, message roles, texts).
"""

from __future__ import annotations

import asyncio
import base64
import io
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from PIL import Image


def _images(body: dict[str, Any]) -> list[tuple[int, int]]:
    sizes = []
    for message in body.get("messages", []):
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "image_url":
                raw = base64.b64decode(part["image_url"]["url"].partition(",")[2])
                sizes.append(Image.open(io.BytesIO(raw)).size)
    return sizes


def _texts(body: dict[str, Any]) -> list[str]:
    texts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        else:
            texts.extend(p["text"] for p in content if p.get("type") == "text")
    return texts


def _answer(text: str, version: int = 7) -> dict[str, Any]:
    ids = [100 + (ord(c) % 50) for c in text] or [1]
    logprobs = [-0.25 - 0.01 * i for i in range(len(ids))]
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "misbehaving",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop",
                     "logprobs": {"content": [{"token": f"t{i}", "logprob": lp, "token_id": tid, "top_logprobs": []}
                                              for i, (tid, lp) in enumerate(zip(ids, logprobs, strict=True))]},
                     "token_ids": ids}],
        "prompt_token_ids": [1, 2, 3, 4],
        "policy_version": version,
    }


def create_app() -> FastAPI:
    app = FastAPI()
    scripts: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    seen: list[dict[str, Any]] = []

    @app.post("/control/{name}")
    async def set_script(name: str, request: Request) -> dict[str, Any]:
        scripts[name] = list(await request.json())
        return {"ok": True}

    @app.get("/control/requests")
    async def requests() -> list[dict[str, Any]]:
        return seen

    @app.get("/{mode}/v1/models")
    async def models(mode: str) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "misbehaving", "object": "model"}]}

    @app.post("/{mode}/v1/chat/completions")
    async def chat(mode: str, request: Request):
        body = await request.json()
        sizes = _images(body)
        seen.append({"mode": mode, "images": sizes, "roles": [m["role"] for m in body["messages"]],
                     "texts": _texts(body), "seed": body.get("seed")})
        counts[mode] = counts.get(mode, 0) + 1
        if mode == "error500":
            return JSONResponse({"error": {"message": "the model crashed", "type": "server_error"}}, status_code=500)
        if mode.startswith("flaky-"):
            if counts[mode] <= int(mode.split("-")[1]):
                return JSONResponse({"error": {"message": "warming up", "type": "server_error"}}, status_code=500)
            return _answer('done(answer="ok")')
        if mode == "slow":
            await asyncio.sleep(3)
            return _answer("done()")
        if mode == "badjson":
            return PlainTextResponse("<html>gateway error</html>")
        if mode.startswith("limit-"):
            limit = int(mode.split("-")[1])
            if any(w * h > limit for w, h in sizes):
                return JSONResponse({"error": {"message": f"image exceeds {limit} pixels",
                                               "type": "invalid_request_error",
                                               "code": "image_too_large"}}, status_code=413)
            return _answer('done(answer="ok")')
        if mode.startswith("script-"):
            queue = scripts.get(mode[len("script-"):], ["done()"])
            text = queue.pop(0) if len(queue) > 1 else queue[0]
            return _answer(text)
        return JSONResponse({"error": {"message": f"unknown mode {mode}"}}, status_code=404)

    return app
