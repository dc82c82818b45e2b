"""An OpenAI-compatible chat-completions server over an inference engine (by default the hf one).

Routes: ``GET /health``, ``GET /v1/models``, ``POST /v1/chat/completions``. Besides the OpenAI fields,
a response carries ``prompt_token_ids`` (top level), ``choices[0].token_ids`` (as vLLM's
``return_token_ids`` does) and ``policy_version``. Errors are OpenAI-style
``{"error": {"message", "type", "param", "code"}}`` with 4xx for bad requests; a request naming another
model than the one served is a 404 ``model_not_found`` (a request without ``model`` is answered). Requests
from concurrent callers are batched by :class:`~mintgym.inference.batching.RequestBatcher`.

``stream: true`` answers server-sent events as OpenAI does: ``data: {chunk}`` lines of
``chat.completion.chunk`` objects (the role first, then the text cut at token boundaries, each chunk with
its ``token_ids`` and, when asked, its logprobs), a last chunk with ``finish_reason``, a usage chunk when
``stream_options.include_usage`` is set, then ``data: [DONE]``. The engine generates whole answers, so the
chunks are sent once the answer is done: the stream has OpenAI's shape, not a shorter time to first token.

Launch: ``mintgym serve-model PATH --port 8001`` or :func:`serve_model`.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from mintgym.inference.base import InferenceEngine
from mintgym.inference.batching import RequestBatcher
from mintgym.inference.images import DEFAULT_MAX_IMAGE_PIXELS, ImageError, ImageTooLarge
from mintgym.inference.messages import split_messages
from mintgym.inference.types import Generation, GenerationRequest, SamplingParams


class StreamOptions(BaseModel):
    """OpenAI's ``stream_options``: ``include_usage`` adds a last chunk with the token counts."""

    model_config = ConfigDict(extra="ignore")

    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """The subset of OpenAI's chat-completions request this server honours (other fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    messages: list[dict[str, Any]]
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(1.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=20)
    n: int = 1
    stream: bool = False
    stream_options: StreamOptions | None = None


class _BadRequest(Exception):
    def __init__(self, message: str, status: int = 400, code: str = "invalid_request", param: str | None = None):
        super().__init__(message)
        self.status, self.code, self.param = status, code, param


def _error(status: int, message: str, code: str, param: str | None = None, kind: str | None = None) -> JSONResponse:
    kind = kind or ("invalid_request_error" if status < 500 else "server_error")
    return JSONResponse(status_code=status,
                        content={"error": {"message": message, "type": kind, "param": param, "code": code}})


def create_model_app(
    engine: InferenceEngine,
    *,
    model_name: str | None = None,
    max_batch_size: int = 16,
    batch_window_s: float = 0.010,
    max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
    default_max_tokens: int = 256,
    api_key: str | None = None,
) -> FastAPI:
    """The FastAPI app serving ``engine`` as ``model_name`` (default: the last part of the engine's ``name``, for
    the hf engine its model folder's name), which ``/v1/models`` lists and requests may name.

    With ``api_key`` set, every route but ``/health`` needs ``Authorization: Bearer <api_key>``.
    """
    name = model_name or Path(str(getattr(engine, "name", None) or "mintgym-model")).name
    batcher = RequestBatcher(engine, max_batch_size=max_batch_size, window_s=batch_window_s)
    tokenizer = getattr(engine, "tokenizer", None)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await batcher.start()
        try:
            yield
        finally:
            await batcher.stop()

    app = FastAPI(title="MintGym model server", lifespan=lifespan)
    app.state.engine = engine
    app.state.batcher = batcher

    if api_key is not None:
        @app.middleware("http")
        async def _auth(request: Request, call_next):
            if request.url.path != "/health" and request.headers.get("authorization") != f"Bearer {api_key}":
                return _error(401, "missing or wrong bearer token", "invalid_api_key", kind="authentication_error")
            return await call_next(request)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0] if err.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or None
        return _error(400, f"{where or 'request'}: {first.get('msg', 'invalid request')}", "invalid_request", where)

    @app.exception_handler(_BadRequest)
    async def _bad(request: Request, err: _BadRequest) -> JSONResponse:
        return _error(err.status, str(err), err.code, err.param)

    @app.exception_handler(Exception)
    async def _crashed(request: Request, err: Exception) -> JSONResponse:
        return _error(500, f"the inference engine failed: {type(err).__name__}: {err}", "engine_error")

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "model": name, "policy_version": engine.policy_version,
                "batches": batcher.batches, "requests": batcher.requests, "largest_batch": batcher.largest_batch}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": "mintgym",
                                            "policy_version": engine.policy_version}]}

    @app.post("/v1/chat/completions")
    async def chat_completions(body: ChatCompletionRequest) -> Response:
        if body.model is not None and body.model != name:
            raise _BadRequest(f"The model `{body.model}` does not exist; this server serves `{name}`", status=404,
                              code="model_not_found", param="model")
        # Decoding images is CPU work: off the event loop, so other callers are still accepted meanwhile.
        request = await asyncio.to_thread(_to_request, body, max_image_pixels, default_max_tokens)
        try:
            result = await batcher.submit(request)
        except ValueError as err:  # the engine refused this request's content
            raise _BadRequest(str(err)) from None
        if body.stream:
            return StreamingResponse(_events(result, body, name, tokenizer), media_type="text/event-stream")
        return JSONResponse(_to_response(result, body, name, tokenizer))

    return app


def _to_request(body: ChatCompletionRequest, max_image_pixels: int, default_max_tokens: int) -> GenerationRequest:
    if body.n != 1:
        raise _BadRequest(f"only n=1 is supported, got n={body.n}", param="n")
    try:
        messages, images = split_messages(body.messages, max_image_pixels)
    except ImageTooLarge as err:
        raise _BadRequest(str(err), status=413, code="image_too_large", param="messages") from None
    except ImageError as err:
        raise _BadRequest(str(err), code="invalid_image", param="messages") from None
    except ValueError as err:
        raise _BadRequest(str(err), param="messages") from None
    # Images go to the engine decoded, so they are read once.
    images_iter = iter(images)
    for message in messages:
        for part in message["content"]:
            if part["type"] == "image":
                part["image"] = next(images_iter)
    stop = (body.stop,) if isinstance(body.stop, str) else tuple(body.stop or ())
    try:
        sampling = SamplingParams(
            max_new_tokens=body.max_completion_tokens or body.max_tokens or default_max_tokens,
            temperature=body.temperature, top_p=body.top_p, seed=body.seed, stop=stop,
            top_logprobs=(body.top_logprobs or 0) if body.logprobs else 0,
        )
    except ValueError as err:
        raise _BadRequest(str(err)) from None
    return GenerationRequest(messages=messages, sampling=sampling, request_id=f"chatcmpl-{uuid.uuid4().hex}")


def _decode(tokenizer: Any, token_id: int) -> str:
    return tokenizer.decode([token_id]) if tokenizer is not None else f"token_id:{token_id}"


def _logprobs(g: Generation, body: ChatCompletionRequest, tokenizer: Any, start: int = 0,
              end: int | None = None) -> dict[str, Any] | None:
    """OpenAI's ``logprobs`` of the response tokens ``start:end``, when asked for and known."""
    if not body.logprobs or g.response_token_ids is None or g.response_logprobs is None:
        return None
    known = min(len(g.response_token_ids), len(g.response_logprobs))
    content = []
    for i in range(start, known if end is None else min(end, known)):
        tok = g.response_token_ids[i]
        text = _decode(tokenizer, tok)
        entry: dict[str, Any] = {"token": text, "logprob": g.response_logprobs[i],
                                 "bytes": list(text.encode("utf-8")), "token_id": tok, "top_logprobs": []}
        if g.top_logprobs:
            entry["top_logprobs"] = [
                {"token": (t := _decode(tokenizer, alt)), "logprob": alt_lp, "bytes": list(t.encode("utf-8")),
                 "token_id": alt} for alt, alt_lp in g.top_logprobs[i]]
        content.append(entry)
    return {"content": content}


def _usage(g: Generation) -> dict[str, int]:
    n_prompt = len(g.prompt_token_ids or [])
    n_response = len(g.response_token_ids or [])
    return {"prompt_tokens": n_prompt, "completion_tokens": n_response, "total_tokens": n_prompt + n_response}


def _to_response(g: Generation, body: ChatCompletionRequest, name: str, tokenizer: Any) -> dict[str, Any]:
    return {
        "id": g.request_id or f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": name,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": g.text},
            "finish_reason": g.finish_reason,
            "logprobs": _logprobs(g, body, tokenizer),
            "token_ids": g.response_token_ids,
        }],
        "usage": _usage(g),
        "prompt_token_ids": g.prompt_token_ids,
        "policy_version": g.policy_version,
        "logprobs_source": g.logprobs_source,
        "timings": g.timings,
    }


def _pieces(text: str, ids: list[int] | None, tokenizer: Any) -> list[tuple[str, int, int]]:
    """``text`` cut at token boundaries for streaming: ``(piece, first token, end token)``, the pieces joining to
    ``text``. Tokens whose text is not whole yet (part of a character, a skipped special token) join the next
    piece; what does not decode to the text as it goes (a stop string cut off) ends up in the last one."""
    if tokenizer is None or not ids:
        return [(text, 0, len(ids or ()))]
    pieces, sent, start = [], 0, 0
    for end in range(1, len(ids) + 1):
        piece = tokenizer.decode(ids[start:end], skip_special_tokens=True)
        if piece and "\ufffd" not in piece and text.startswith(piece, sent):
            pieces.append((piece, start, end))
            sent, start = sent + len(piece), end
    if sent < len(text) or start < len(ids):
        pieces.append((text[sent:], start, len(ids)))
    return pieces


def _events(g: Generation, body: ChatCompletionRequest, name: str, tokenizer: Any) -> Iterator[str]:
    """The server-sent events of a streamed answer (see the module docstring)."""
    usage = body.stream_options is not None and body.stream_options.include_usage
    head = {"id": g.request_id or f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": name, **({"usage": None} if usage else {})}

    def chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish, **more}
        return f"data: {json.dumps({**head, 'choices': [choice]})}\n\n"

    ids = g.response_token_ids
    yield chunk({"role": "assistant", "content": ""})
    for piece, start, end in _pieces(g.text, ids, tokenizer):
        token_ids = ids[start:end] if ids is not None else None
        yield chunk({"content": piece}, logprobs=_logprobs(g, body, tokenizer, start, end), token_ids=token_ids)
    yield chunk({}, g.finish_reason)
    if usage:
        yield f"data: {json.dumps({**head, 'choices': [], 'usage': _usage(g)})}\n\n"
    yield "data: [DONE]\n\n"


def serve_model(path: str, host: str = "127.0.0.1", port: int = 8001, *, model_name: str | None = None,
                max_batch_size: int = 16, batch_window_s: float = 0.010, aligned_logprobs: bool = True,
                api_key: str | None = None, log_level: str = "info") -> None:
    """Load the checkpoint at ``path`` into an hf engine and serve it as ``model_name`` (default: the folder's
    name) until interrupted.

    Bound to loopback by default; any other ``host`` requires ``api_key``.
    """
    import uvicorn

    if host not in ("127.0.0.1", "localhost", "::1") and not api_key:
        raise ValueError(f"serving on {host} (not loopback) requires an api_key")

    from mintgym.inference.hf import HFEngine

    engine = HFEngine(path, aligned_logprobs=aligned_logprobs, max_batch_size=max_batch_size)
    app = create_model_app(engine, model_name=model_name or Path(path).resolve().name,
                           max_batch_size=max_batch_size, batch_window_s=batch_window_s, api_key=api_key)
    uvicorn.run(app, host=host, port=port, log_level=log_level)
