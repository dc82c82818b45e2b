"""A client engine for any OpenAI-compatible chat-completions server (``vllm serve``, ``mintgym serve-model``).

Images travel as base64 PNG/JPEG data URLs. It asks for ``logprobs`` and, by default, for vLLM's
``return_token_ids`` (prompt ids at the top level, response ids in ``choices[0].token_ids``); token ids are
also read from ``logprobs.content[i].token_id`` or from ``token_id:123`` tokens (vLLM's
``return_tokens_as_token_ids``). Whatever the server does not give is None in the :class:`Generation`.

A strict server (OpenAI's own, many proxies) refuses fields it does not know with an HTTP 400 naming the
field (``Unrecognized request argument supplied: return_token_ids``). With ``token_ids="auto"`` (the
default) the engine drops a refused ``return_token_ids``/``logprobs``/``top_logprobs``, says so once (a
warning on the ``mintgym.inference.openai`` logger) and goes on without them; ``"on"`` makes the refusal an
error, ``"off"`` never asks for token ids or logprobs.

Endpoints that refuse some sampling fields (OpenAI's reasoning models refuse ``temperature`` and ``top_p`` and
want ``max_completion_tokens`` for ``max_tokens``) are reached by reshaping every body: ``drop_fields`` leaves
fields out, ``rename_fields`` sends a field under another name, ``extra_body`` adds fields (it wins over a
sampling field of the same name). ``mintgym eval``/``rollout`` set them with ``--model-option``.

Connection errors, timeouts, 408, 429 and 5xx are retried with exponential backoff; other 4xx answers and
exhausted retries raise :class:`mintgym.errors.ServerError` naming the status and the server's message, but for
a 400 saying the prompt is over the model's context, which raises :class:`mintgym.errors.ContextOverflow`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from mintgym.errors import ContextOverflow, ServerError, first_line
from mintgym.inference.base import CONTEXT_OVERFLOW, InferenceEngine
from mintgym.inference.images import to_data_url
from mintgym.inference.types import Generation, GenerationRequest

_TOKEN_ID = re.compile(r"^token_id:(\d+)$")
_RETRY_STATUS = frozenset({408, 429})
log = logging.getLogger(__name__)
#: How the engine asks for token ids and logprobs (see the module docstring).
TOKEN_ID_MODES = ("auto", "on", "off")
#: Optional request fields a strict server may refuse, with how its error message names each.
_OPTIONAL_FIELDS = {
    "return_token_ids": re.compile(r"\breturn_token_ids\b"),
    "top_logprobs": re.compile(r"\btop_logprobs\b"),
    "logprobs": re.compile(r"(?<!top_)\blogprobs\b"),
}

#: The body fields the engine fills from a request: what ``drop_fields`` and ``rename_fields`` may name.
SAMPLING_FIELDS = ("max_tokens", "temperature", "top_p", "seed", "stop", "logprobs", "top_logprobs",
                   "return_token_ids")
#: Fields every request needs; no option drops, renames or sets them.
_REQUIRED_FIELDS = ("model", "messages")


def check_body_options(drop_fields: Sequence[str] = (), rename_fields: Mapping[str, str] | None = None,
                       extra_body: Mapping[str, Any] | None = None) -> tuple[frozenset[str], dict[str, str]]:
    """``drop_fields`` and ``rename_fields`` checked against each other and ``extra_body``; a ``ValueError`` of
    one line for a field the engine does not send, a required one, or two options that contradict each other
    (a ``TypeError`` for a string of names or a ``rename_fields`` that is no mapping).

        >>> check_body_options(["temperature"], {"max_tokens": "max_completion_tokens"})[1]
        {'max_tokens': 'max_completion_tokens'}
        >>> check_body_options(["messages"])
        Traceback (most recent call last):
        ...
        ValueError: cannot drop 'messages': every request needs model and messages
    """
    if isinstance(drop_fields, str):
        raise TypeError(f"drop_fields is a list of field names, got the string {drop_fields!r}")
    if rename_fields is not None and not isinstance(rename_fields, Mapping):
        raise TypeError(f"rename_fields maps old field names to new ones, got {rename_fields!r}")
    drop = frozenset(drop_fields)
    rename = dict(rename_fields or {})
    extra = dict(extra_body or {})
    sent = ", ".join(SAMPLING_FIELDS)
    for field in sorted(drop, key=str) + list(rename):
        verb = "drop" if field in drop else "rename"
        if field in _REQUIRED_FIELDS:
            raise ValueError(f"cannot {verb} {field!r}: every request needs model and messages")
        if field not in SAMPLING_FIELDS:
            raise ValueError(f"cannot {verb} {field!r}: not a field the engine sends ({sent})")
    for old, new in rename.items():
        if old in drop:
            raise ValueError(f"{old!r} is both dropped and renamed")
        if not isinstance(new, str) or not new or new == old:
            raise ValueError(f"rename {old!r} to a new field name, got {new!r}")
        if new in _REQUIRED_FIELDS or (new in SAMPLING_FIELDS and new not in drop and new not in rename):
            raise ValueError(f"cannot rename {old!r} onto {new!r}: the engine sends {new!r} itself (drop it first)")
        if list(rename.values()).count(new) > 1:
            raise ValueError(f"two fields are renamed onto {new!r}")
    for key in extra:
        if key in _REQUIRED_FIELDS:
            raise ValueError(f"extra body field {key!r} would replace the engine's own")
        if key in drop or key in rename or key in rename.values():
            raise ValueError(f"extra body field {key!r} is also dropped or renamed: give one of them")
    return drop, rename


class OpenAIEngine(InferenceEngine):
    """Generate through an OpenAI-compatible HTTP server.

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8001`` (``/v1`` is appended when missing).
        model: model name to request; None asks ``/v1/models`` once and takes the first.
        api_key: sent as a bearer token.
        timeout_s: per-request timeout (connect, read and write).
        max_retries: retries after the first attempt, for retryable failures.
        backoff_s, backoff_max_s: the first retry waits ``backoff_s``, doubling up to ``backoff_max_s``.
        token_ids: ``auto`` asks for token ids and logprobs and drops what the server refuses (saying so
            once), ``on`` fails when the server refuses them, ``off`` never asks.
        return_token_ids: the older switch; False never asks for ``return_token_ids`` (logprobs still are).
        image_format: ``PNG`` (lossless, default) or ``JPEG``.
        max_concurrency: requests in flight at once for one ``generate``/``agenerate`` call.
        drop_fields: sampling fields left out of every request (e.g. ``["temperature", "top_p"]``).
        rename_fields: sampling fields sent under another name (e.g. ``{"max_tokens": "max_completion_tokens"}``).
        extra_body: more fields merged into every request body (after dropping and renaming).
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.25,
        backoff_max_s: float = 8.0,
        token_ids: str = "auto",
        return_token_ids: bool | None = None,
        image_format: str = "PNG",
        max_concurrency: int = 16,
        drop_fields: Sequence[str] = (),
        rename_fields: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ):
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if token_ids not in TOKEN_ID_MODES:
            raise ValueError(f"token_ids must be one of {', '.join(TOKEN_ID_MODES)}, got {token_ids!r}")
        base = base_url.rstrip("/")
        self.base_url = base if base.endswith("/v1") else base + "/v1"
        self.model = model
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.token_ids = token_ids
        #: Optional fields left out of requests: refused by the server (auto), or never asked for.
        self.dropped: set[str] = set() if token_ids != "off" else set(_OPTIONAL_FIELDS)
        if return_token_ids is False:
            self.dropped.add("return_token_ids")
        self.image_format = image_format
        self.max_concurrency = max_concurrency
        self.drop_fields, self.rename_fields = check_body_options(drop_fields, rename_fields, extra_body)
        self.extra_body = dict(extra_body or {})
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout_s, headers=self._headers)
        self._model_lock = threading.Lock()
        self._last_version: int | None = None

    # -- public API ---------------------------------------------------------------------------------------

    @property
    def policy_version(self) -> int | None:
        """The version the server reported in its last answer (None before one, or if it never says)."""
        return self._last_version

    def ensure_model(self) -> str:
        """The model name, asked of ``/models`` once when none was given (a reachability check too)."""
        if self.model is None:
            with self._model_lock:
                if self.model is None:
                    self._set_model(self._request("GET", "/models"))
        return self.model

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        if not requests:
            return []
        self.ensure_model()
        # Encode every prompt first, so the requests reach the server together and batch there.
        payloads = [self._payload(r) for r in requests]
        if len(requests) == 1:
            return [self._post(requests[0], payloads[0])]
        with ThreadPoolExecutor(min(self.max_concurrency, len(requests))) as pool:
            return list(pool.map(self._post, requests, payloads))

    async def agenerate(self, requests: list[GenerationRequest]) -> list[Generation]:
        limit = asyncio.Semaphore(self.max_concurrency)
        async with httpx.AsyncClient(timeout=self.timeout_s, headers=self._headers) as client:
            if self.model is None:
                self._set_model(await self._arequest(client, "GET", "/models"))

            async def one(request: GenerationRequest, payload: dict[str, Any]) -> Generation:
                async with limit:
                    started = time.perf_counter()
                    while True:
                        try:
                            data = await self._arequest(client, "POST", "/chat/completions", payload)
                            break
                        except ServerError as err:
                            self._drop_refused(err, payload)
                    return self._parse(data, request, time.perf_counter() - started)

            payloads = [self._payload(r) for r in requests]
            return list(await asyncio.gather(*(one(r, p) for r, p in zip(requests, payloads, strict=True))))

    def close(self) -> None:
        self._client.close()

    # -- request / response -----------------------------------------------------------------------------

    def _post(self, request: GenerationRequest, payload: dict[str, Any]) -> Generation:
        started = time.perf_counter()
        while True:
            try:
                data = self._request("POST", "/chat/completions", payload)
                break
            except ServerError as err:
                self._drop_refused(err, payload)
        return self._parse(data, request, time.perf_counter() - started)

    def _drop_refused(self, err: ServerError, payload: dict[str, Any]) -> None:
        """Take the optional fields a 400/422 answer names out of ``payload`` (auto), else re-raise ``err``."""
        message = str(err)
        if err.status == 400 and CONTEXT_OVERFLOW.search(message):
            raise ContextOverflow(f"{self.base_url}: {first_line(message)}") from err
        refused = [f for f, named in _OPTIONAL_FIELDS.items()
                   if f in payload and err.status in (400, 422) and named.search(message)]
        if not refused:
            raise _with_hint(err, payload)
        if self.token_ids == "on":
            raise ServerError(f"the model server refuses {', '.join(refused)}: use --token-ids auto (token_ids="
                              f"'auto') to go on without them, or off -- {err}", status=err.status,
                              code=err.code) from None
        if "logprobs" in refused:
            refused.append("top_logprobs")  # top_logprobs means nothing without logprobs
        fresh = [f for f in refused if f not in self.dropped]
        self.dropped.update(refused)
        for field in refused:
            payload.pop(field, None)
        if fresh:
            log.warning("%s refuses %s; continuing without them (trajectories will lack token ids%s); "
                        "choose explicitly with --token-ids on|off", self.base_url, ", ".join(fresh),
                        " and logprobs" if "logprobs" in fresh else "")

    def _set_model(self, data: Any) -> None:
        try:
            self.model = data["data"][0]["id"]
        except (KeyError, IndexError, TypeError):
            raise ServerError(f"{self.base_url}/models listed no model: {str(data)[:200]!r}") from None

    def _payload(self, request: GenerationRequest) -> dict[str, Any]:
        p = request.sampling
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [self._message(m) for m in request.messages],
            "max_tokens": p.max_new_tokens,
            "temperature": p.temperature,
            "top_p": p.top_p,
            "logprobs": True,
        }
        if p.top_logprobs:
            body["top_logprobs"] = p.top_logprobs
        body["return_token_ids"] = True
        if p.seed is not None:
            body["seed"] = p.seed
        if p.stop:
            body["stop"] = list(p.stop)
        for field in self.dropped | self.drop_fields:
            body.pop(field, None)
        for old, new in self.rename_fields.items():
            if old in body:
                body[new] = body.pop(old)
        body.update(self.extra_body)
        return body

    def _message(self, message: dict[str, Any]) -> dict[str, Any]:
        content = message.get("content")
        if not isinstance(content, list):
            return dict(message)
        parts = []
        for part in content:
            if isinstance(part, dict) and (part.get("type") == "image" or "image" in part):
                url = to_data_url(part["image"], self.image_format)
                parts.append({"type": "image_url", "image_url": {"url": url}})
            else:
                parts.append(part)
        return {**message, "content": parts}

    def _parse(self, data: Any, request: GenerationRequest, elapsed: float) -> Generation:
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise ServerError(f"{self.base_url}/chat/completions answered without choices[0].message.content: "
                              f"{str(data)[:200]!r}") from None
        content = (choice.get("logprobs") or {}).get("content") or []
        logprobs = [float(c["logprob"]) for c in content] if content else None
        ids = choice.get("token_ids")
        if ids is None and content:
            ids = [_token_id(c) for c in content]
            ids = None if any(i is None for i in ids) else ids
        top = None
        if content and any(c.get("top_logprobs") for c in content):
            top = [[(tid, float(a["logprob"])) for a in c.get("top_logprobs") or []
                    if (tid := _token_id(a)) is not None] for c in content]
        version = data.get("policy_version")
        version = int(version) if isinstance(version, int) else None
        self._last_version = version if version is not None else self._last_version
        finish = choice.get("finish_reason")
        timings = {"total": elapsed}
        if isinstance(data.get("timings"), dict):  # our server reports its own
            timings.update({f"server_{k}": float(v) for k, v in data["timings"].items() if isinstance(v, (int, float))})
        return Generation(
            text=text,
            prompt_token_ids=data.get("prompt_token_ids") or choice.get("prompt_token_ids"),
            response_token_ids=list(ids) if ids is not None else None,
            response_logprobs=logprobs,
            policy_version=version,
            finish_reason="length" if finish == "length" else "stop",
            timings=timings,
            logprobs_source="server" if logprobs is not None else "none",
            top_logprobs=top,
            request_id=request.request_id,
        )

    # -- transport with retries -------------------------------------------------------------------------

    def _delay(self, attempt: int) -> float:
        return min(self.backoff_s * (2 ** attempt), self.backoff_max_s)

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        url = self.base_url + path
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self._delay(attempt - 1))
            try:
                response = self._client.request(method, url, json=body)
            except httpx.TransportError as err:
                last = f"{type(err).__name__}: {err or 'no detail'}"
                continue
            outcome = _outcome(response, url)
            if outcome is not None:
                return outcome
            last = f"HTTP {response.status_code}: {_server_message(response)}"
        raise ServerError(f"{method} {url} failed after {self.max_retries + 1} attempts; last: {last}",
                          status=_status_of(last))

    async def _arequest(self, client: httpx.AsyncClient, method: str, path: str,
                        body: dict[str, Any] | None = None) -> Any:
        url = self.base_url + path
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                await asyncio.sleep(self._delay(attempt - 1))
            try:
                response = await client.request(method, url, json=body)
            except httpx.TransportError as err:
                last = f"{type(err).__name__}: {err or 'no detail'}"
                continue
            outcome = _outcome(response, url)
            if outcome is not None:
                return outcome
            last = f"HTTP {response.status_code}: {_server_message(response)}"
        raise ServerError(f"{method} {url} failed after {self.max_retries + 1} attempts; last: {last}",
                          status=_status_of(last))


def _outcome(response: httpx.Response, url: str) -> Any:
    """The decoded JSON of a success; None for a retryable failure; raises for a final one."""
    status = response.status_code
    if status >= 500 or status in _RETRY_STATUS:
        return None
    if status >= 400:
        code = None
        try:
            code = response.json()["error"].get("code")
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        raise ServerError(f"{url} refused the request (HTTP {status}): {_server_message(response)}",
                          status=status, code=code)
    if not response.content:
        raise ServerError(f"{url} answered HTTP {status} with an empty body", status=status)
    try:
        return response.json()
    except (json.JSONDecodeError, ValueError):
        raise ServerError(f"{url} answered HTTP {status} with a body that is not JSON: "
                          f"{response.text[:200]!r}", status=status) from None


def _with_hint(err: ServerError, payload: dict[str, Any]) -> ServerError:
    """``err``, saying how to leave out or rename a sampling field its 400 names (a reasoning model's refusal)."""
    named = [f for f in SAMPLING_FIELDS if f in payload and re.search(rf"\b{f}\b", str(err))]
    if err.status != 400 or not named:
        return err
    field = named[0]
    return ServerError(f"the model server refuses {field}? leave it out or rename it with --model-option "
                       f"drop={field} or rename={field}:NEW (drop_fields, rename_fields) -- {err}",
                       status=err.status, code=err.code)


def _server_message(response: httpx.Response) -> str:
    try:
        data = response.json()
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            return str(data["error"].get("message"))
        if isinstance(data, dict) and "detail" in data:
            return str(data["detail"])
    except ValueError:
        pass
    return response.text[:200] or "(empty body)"


def _status_of(last: str) -> int | None:
    match = re.match(r"HTTP (\d+)", last)
    return int(match.group(1)) if match else None


def _token_id(entry: dict[str, Any]) -> int | None:
    if isinstance(entry.get("token_id"), int):
        return entry["token_id"]
    match = _TOKEN_ID.match(str(entry.get("token", "")))
    return int(match.group(1)) if match else None
