"""Layer 2: the env server -- one FastAPI app hosting many sessions of one environment kind under /v1.

Routes: ``GET /v1/health``, ``GET /v1/spec``, ``GET|POST /v1/sessions``, ``DELETE /v1/sessions/{id}``,
``POST /v1/sessions/{id}/reset|step|evaluate|oracle``, ``GET /v1/sessions/{id}/screenshot``, and
``POST /v1/batch``: resets and steps of several sessions run concurrently, every frame in one answer.
Reset and step answer with a binary frame envelope (see :mod:`mintgym.wire`); errors are JSON
``{"error": {"code", "message", "session_id"}}`` with a 4xx (the caller's fault) or 5xx (the
environment's) status.

Auth: with a token every route needs ``Authorization: Bearer <token>`` (compared in constant time) --
the OpenAPI schema and the docs included; ``GET /v1/health`` answers without it, but then only
``{"status": ...}`` (a liveness probe that tells nothing about the sessions). Session options are
validated by the host's options model and capped by the operator (:mod:`mintgym.server.options`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import json
import logging
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from mintgym import __version__
from mintgym.action_spaces import InvalidAction
from mintgym.env import declarations, registration
from mintgym.env.core import EnvironmentHost
from mintgym.errors import EpisodeStateError, RegistrationError, TaskUnavailable
from mintgym.server.options import (
    OptionError,
    check_defaults,
    check_options,
    describe_options,
    options_model_for,
    parse_caps,
)
from mintgym.server.sessions import Busy, SessionClosed, SessionFault, SessionManager, SessionMissing, resolve_task
from mintgym.types import Observation
from mintgym.wire import (
    API_VERSION,
    BATCH_CONTENT_TYPE,
    FRAME_CONTENT_TYPE,
    IMAGE_CONTENT_TYPES,
    BatchItem,
    BatchRequest,
    CreateSessionRequest,
    FrameOptions,
    ResetRequest,
    SessionCreated,
    StepRequest,
    batch_parts,
    encode_image,
    frame_parts,
)

log = logging.getLogger("mintgym.server")


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, session_id: str | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.session_id = status, code, message, session_id


def _error(status: int, code: str, message: str, session_id: str | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, "session_id": session_id}}, status_code=status)


class FrameResponse(Response):
    """A frame (or batch) envelope sent as its pieces, so raw pixels go from the array to the socket uncopied."""

    media_type = FRAME_CONTENT_TYPE

    def __init__(self, parts: tuple[bytes | memoryview, ...], media_type: str = FRAME_CONTENT_TYPE):
        self.parts = parts
        super().__init__(content=b"", media_type=media_type)
        self.headers["content-length"] = str(sum(len(p) for p in parts))

    async def __call__(self, scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        last = len(self.parts) - 1
        for i, part in enumerate(self.parts):
            await send({"type": "http.response.body", "body": part, "more_body": i < last})


async def encoded_frame(obs: Observation, options: FrameOptions, reward: float = 0.0, terminated: bool = False,
                        truncated: bool = False,
                        info: dict[str, Any] | None = None) -> tuple[bytes, bytes | memoryview]:
    """The frame envelope's pieces; a PNG or JPEG is encoded on a thread, so no other session waits for it."""
    if options.encoding == "raw":  # a view of the pixels: nothing to wait for
        return frame_parts(obs, options, reward, terminated, truncated, info)
    return await asyncio.to_thread(frame_parts, obs, options, reward, terminated, truncated, info)


async def frame_response(obs: Observation, options: FrameOptions, reward: float = 0.0, terminated: bool = False,
                         truncated: bool = False, info: dict[str, Any] | None = None) -> FrameResponse:
    return FrameResponse(await encoded_frame(obs, options, reward, terminated, truncated, info))


class BodyLimit:
    """ASGI middleware: read the request body before the app sees it, refusing bodies over ``max_bytes``
    with 413 (declared or counted as they stream in) and bodies that trickle in slower than one chunk per
    ``chunk_seconds`` with 408 (slowloris); the app then gets the body in one piece."""

    def __init__(self, app, max_bytes: int, chunk_seconds: float = 30.0):
        self.app = app
        self.max_bytes = max_bytes
        self.chunk_seconds = chunk_seconds

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            too_large = _error(413, "payload_too_large",
                               f"request body of {int(declared)} bytes exceeds the limit of {self.max_bytes}")
            return await too_large(scope, receive, send)
        chunks, seen = [], 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), self.chunk_seconds)
            except TimeoutError:
                return await _error(408, "request_timeout",
                                    f"the request body stalled for {self.chunk_seconds:.0f}s")(scope, receive, send)
            if message["type"] != "http.request":  # the client went away
                return None
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                return await _error(413, "payload_too_large",
                                    f"request body exceeds the limit of {self.max_bytes} bytes")(scope, receive, send)
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        delivered = False

        async def replay():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)


LOOPBACK_HOST_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


class LoopbackHostOnly:
    """ASGI middleware for servers without a token: answer only requests addressed to a loopback name, so a
    web page elsewhere cannot reach the server through a name it rebinds to 127.0.0.1 (DNS rebinding)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1").strip().lower()
            name = host.rsplit(":", 1)[0] if host.count(":") == 1 or host.startswith("[") else host
            if name not in LOOPBACK_HOST_NAMES:
                return await _error(421, "misdirected_request", "this server has no token, so it answers only "
                                    "requests addressed to 127.0.0.1, localhost or [::1]")(scope, receive, send)
        return await self.app(scope, receive, send)


def create_app(host: EnvironmentHost, *, token: str | None = None, request_timeout: float = 60.0,
               max_sessions: int = 1024, max_body_bytes: int = 1 << 20, sweep_seconds: float = 5.0,
               option_caps: dict[str, Any] | list[str] | None = None, body_chunk_seconds: float = 30.0) -> FastAPI:
    """Build the env server for ``host``. ``token``: required bearer token (None: no auth).
    ``option_caps``: the operator's upper bounds on numeric session options (``{"memory_mb": 2048}``)."""
    if token is not None and not token.strip():
        raise ValueError("the bearer token is empty")
    options_model = options_model_for(host)
    caps = parse_caps(option_caps, options_model)
    check_defaults(options_model, dict(getattr(host, "defaults", {}) or {}), caps)
    manager = SessionManager(host, request_timeout=request_timeout, max_sessions=max_sessions)
    domain = host.domain

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        await host.start()
        sweeper = asyncio.create_task(_sweep_forever(manager, sweep_seconds))
        try:
            yield
        finally:
            sweeper.cancel()
            await manager.close_all()
            await host.stop()

    app = FastAPI(title=f"MintGym env server ({domain})", version=__version__, lifespan=lifespan,
                  openapi_url=None, docs_url=None, redoc_url=None)
    app.state.manager = manager
    app.state.option_caps = caps
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes, chunk_seconds=body_chunk_seconds)
    if token is None:
        app.add_middleware(LoopbackHostOnly)
    expected = f"Bearer {token}".encode() if token is not None else b""

    def authorized(request: Request) -> bool:
        if token is None:
            return True
        given = request.headers.get("authorization", "").encode("utf-8", "surrogateescape")
        return hmac.compare_digest(given, expected)

    def authorize(request: Request) -> None:
        if not authorized(request):
            raise ApiError(401, "unauthorized",
                           "missing or wrong bearer token (header 'Authorization: Bearer <token>')")

    auth = [Depends(authorize)]

    @app.get("/openapi.json", dependencies=auth, include_in_schema=False)
    async def openapi_schema():
        return JSONResponse(app.openapi())

    @app.get("/docs", dependencies=auth, include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=app.title)

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, err: ApiError):
        return _error(err.status, err.code, err.message, err.session_id)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(_: Request, err: RequestValidationError):
        parts = []
        for e in err.errors():
            where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
            parts.append(f"{where}: {e.get('msg')}")
        return _error(422, "bad_request", "invalid request: " + "; ".join(parts))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, err: StarletteHTTPException):
        return _error(err.status_code, "http_error", str(err.detail))

    @app.exception_handler(Exception)
    async def _internal(_: Request, err: Exception):
        log.exception("internal error")
        return _error(500, "internal_error", f"{type(err).__name__}: {err}")

    @app.exception_handler(SessionFault)
    async def _fault(_: Request, err: SessionFault):
        return _error(504 if err.code == "timeout" else 500, err.code, err.message, err.session_id)

    @app.exception_handler(SessionClosed)
    async def _closed(_: Request, err: SessionClosed):
        return _error(409, "session_closed", str(err), err.session_id)

    def session_of(session_id: str):
        try:
            return manager.get(session_id)
        except SessionMissing:
            raise ApiError(404, "unknown_session", f"no session {session_id!r} on this server (closed, replaced "
                           "or never created); create one with POST /v1/sessions", session_id) from None

    # ---- service -------------------------------------------------------------------------------
    @app.get(f"/{API_VERSION}/health")
    async def health(request: Request):
        """Liveness; the details (domain, session counts, version) only with the token."""
        healthy = await host.healthy()
        body: dict[str, Any] = {"status": "ok" if healthy else "degraded"}
        if authorized(request):
            body.update(domain=domain, sessions=len(manager.sessions), replaced=manager.replaced,
                        failed_requests=manager.failed_requests, version=__version__)
        return JSONResponse(body, status_code=200 if healthy else 503)

    @app.get(f"/{API_VERSION}/spec", dependencies=auth)
    async def spec():
        from mintgym.action_spaces import action_set_for

        tasks = registration.tasks(domain=domain)
        try:
            action_set = action_set_for(domain)
            actions = {"name": action_set.name, "types": list(action_set.type_names), "prompt": action_set.describe()}
        except (ValueError, ImportError):
            actions = None
        return {
            "api_version": API_VERSION, "version": __version__, "domain": domain, "action_set": actions,
            "screen_hint": declarations.declaration(domain).screen_hint,
            "encodings": list(IMAGE_CONTENT_TYPES), "host": host.describe(),
            "env_options": describe_options(options_model, caps), "option_caps": caps,
            "tasks": [{"id": t.id, "instruction": t.instruction, "max_steps": t.max_steps, "family": t.family,
                       "tags": list(t.tags), "unavailable": t.unavailable()} for t in tasks],
        }

    # ---- sessions ------------------------------------------------------------------------------
    @app.post(f"/{API_VERSION}/sessions", dependencies=auth, status_code=201)
    async def create_session(req: CreateSessionRequest | None = None):
        req = req or CreateSessionRequest()
        try:  # the task first: an unknown one is refused before an environment starts
            task = resolve_task(req.task_id, domain, None)
        except (RegistrationError, LookupError) as err:
            if req.task_id is not None:
                raise ApiError(404, "unknown_task", str(err)) from None
            task = None  # a domain without tasks: the session's own screen
        if problem := declarations.unsupported_channels(domain, req.side_channels):
            raise ApiError(422, "unsupported_channel", problem)
        try:
            env_options = check_options(options_model, req.env_options, caps)
        except OptionError as err:
            raise ApiError(422, "bad_env_options", str(err)) from None
        try:
            session = await manager.create(frozenset(req.side_channels), env_options)
        except Busy as err:
            raise ApiError(503, "busy", str(err)) from None
        except TimeoutError:
            raise ApiError(504, "timeout", f"creating an environment took longer than {request_timeout:.0f}s") from None
        except (TypeError, ValueError) as err:
            raise ApiError(422, "bad_env_options", f"the environment refused these options: {err}") from None
        # The frames of the task (given, or the one a reset without task_id starts): a client fixes its
        # observation space to them before any reset.
        screen = declarations.task_screen_size(domain, task, session.env.screen_size)
        created = SessionCreated(session_id=session.id, screen_size=screen, action_set=session.env.action_set.name,
                                 screen_hint=declarations.declaration(domain).screen_hint)
        return created.model_dump()

    @app.get(f"/{API_VERSION}/sessions", dependencies=auth)
    async def list_sessions():
        return {"sessions": [{"session_id": s.id, "status": s.status,
                              "task_id": s.episode.task.id if s.episode.task else None,
                              "step": s.episode.step_count, "failures": s.failures, "last_failure": s.last_failure,
                              "env": s.env.describe()}
                             for s in manager.sessions.values()]}

    @app.delete(f"/{API_VERSION}/sessions/{{session_id}}", dependencies=auth)
    async def close_session(session_id: str):
        session_of(session_id)
        try:
            await manager.close(session_id)
        except SessionMissing:  # closed by a concurrent request meanwhile
            session_of(session_id)
        return {"closed": session_id}

    async def reset_session(session_id: str, req: ResetRequest) -> tuple[Observation, dict[str, Any]]:
        session = session_of(session_id)
        try:
            task = resolve_task(req.task_id, domain, session.episode.task)
            obs, info = await manager.reset(session, task, req.seed, req.max_steps)
        except (RegistrationError, LookupError) as err:
            raise ApiError(404, "unknown_task", str(err), session_id) from None
        except TaskUnavailable as err:
            raise ApiError(409, "task_unavailable", str(err), session_id) from None
        info["screen_size"] = list(obs.screen_size)
        return obs, info

    @app.post(f"/{API_VERSION}/sessions/{{session_id}}/reset", dependencies=auth)
    async def reset(session_id: str, req: ResetRequest | None = None):
        req = req or ResetRequest()
        obs, info = await reset_session(session_id, req)
        return await frame_response(obs, req.frame, info=info)

    async def step_session(session_id: str, req: StepRequest):
        session = session_of(session_id)
        if sum(x is not None for x in (req.action, req.action_text, req.agent_error)) != 1:
            raise ApiError(422, "bad_request", "give exactly one of 'action' (a JSON action), 'action_text' or "
                           "'agent_error'", session_id)
        env = session.episode.env
        action: Any = None
        parse_error = None
        if req.agent_error is not None:
            parse_error = req.agent_error
        elif req.action_text is not None:
            try:
                action = env.action_set.parse(req.action_text, screen_size=env.screen_size)
            except InvalidAction as err:
                parse_error = str(err)
        else:
            try:
                action = env.action_set.validate(req.action, env.screen_size)
            except InvalidAction as err:
                if req.invalid == "reject":
                    raise ApiError(422, "invalid_action", str(err), session_id) from None
                parse_error = str(err)
        try:
            return await manager.step(session, action, parse_error)
        except EpisodeStateError as err:
            raise ApiError(409, "episode_state", str(err), session_id) from None

    @app.post(f"/{API_VERSION}/sessions/{{session_id}}/step", dependencies=auth)
    async def step(session_id: str, req: StepRequest):
        outcome = await step_session(session_id, req)
        return await frame_response(outcome.observation, req.frame, outcome.reward, outcome.terminated,
                                    outcome.truncated, outcome.info)

    async def batch_item(item: BatchItem) -> tuple[bytes, ...]:
        """One item's envelope pieces: its frame, or its error answer (the other items go on)."""
        try:
            if (item.reset is None) == (item.step is None):
                raise ApiError(422, "bad_request", "a batch item has exactly one of 'reset' and 'step'",
                               item.session_id)
            if item.reset is not None:
                obs, info = await reset_session(item.session_id, item.reset)
                return await encoded_frame(obs, item.reset.frame, info=info)
            outcome = await step_session(item.session_id, item.step)
            return await encoded_frame(outcome.observation, item.step.frame, outcome.reward, outcome.terminated,
                                       outcome.truncated, outcome.info)
        except ApiError as err:
            status, code, message = err.status, err.code, err.message
        except SessionFault as err:
            status, code, message = (504 if err.code == "timeout" else 500), err.code, err.message
        except SessionClosed as err:
            status, code, message = 409, "session_closed", str(err)
        body = {"status": status, "error": {"code": code, "message": message, "session_id": item.session_id}}
        return (json.dumps(body).encode(),)

    @app.post(f"/{API_VERSION}/batch", dependencies=auth)
    async def batch(req: BatchRequest):
        """Reset or step several sessions at once (a vector env's step): one answer with every frame."""
        ids = [item.session_id for item in req.items]
        if len(set(ids)) != len(ids):
            raise ApiError(422, "bad_request", "a batch names each session at most once")
        results = await asyncio.gather(*(batch_item(item) for item in req.items))
        return FrameResponse(tuple(batch_parts(list(results))), BATCH_CONTENT_TYPE)

    @app.get(f"/{API_VERSION}/sessions/{{session_id}}/screenshot", dependencies=auth)
    async def screenshot(session_id: str, encoding: str = "png", jpeg_quality: int = 85, as_json: bool = False):
        session = session_of(session_id)
        if encoding not in IMAGE_CONTENT_TYPES:
            raise ApiError(422, "bad_request",
                           f"unknown encoding {encoding!r}; use one of {', '.join(IMAGE_CONTENT_TYPES)}")
        shot = await manager.run(session, lambda: session.episode.env.screenshot(), "screenshot")
        data = await asyncio.to_thread(encode_image, shot, FrameOptions(encoding=encoding,
                                                                         jpeg_quality=max(1, min(100, jpeg_quality))))
        headers = {"X-MintGym-Shape": ",".join(str(d) for d in shot.shape)}
        if as_json:  # slow path for debugging and non-binary clients
            return {"encoding": encoding, "shape": list(shot.shape), "data": base64.b64encode(data).decode()}
        return Response(data, media_type=IMAGE_CONTENT_TYPES[encoding], headers=headers)

    @app.post(f"/{API_VERSION}/sessions/{{session_id}}/evaluate", dependencies=auth)
    async def evaluate(session_id: str):
        session = session_of(session_id)
        try:
            score = await manager.evaluate(session)
        except EpisodeStateError as err:
            raise ApiError(409, "episode_state", str(err), session_id) from None
        return {"score": score, "task_id": session.episode.task.id if session.episode.task else None}

    @app.post(f"/{API_VERSION}/sessions/{{session_id}}/oracle", dependencies=auth)
    async def oracle(session_id: str):
        """The task oracle's next action for the current state (for scripted test agents)."""
        session = session_of(session_id)
        try:
            action = await manager.oracle(session)
        except EpisodeStateError as err:
            raise ApiError(409, "episode_state", str(err), session_id) from None
        except NotImplementedError as err:
            raise ApiError(404, "no_oracle", str(err), session_id) from None
        return {"action": action.to_json() if action is not None else None}

    return app


async def _sweep_forever(manager: SessionManager, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        try:
            replaced = await manager.health_sweep()
            if replaced:
                log.warning("health sweep replaced %d dead session(s)", replaced)
        except Exception:
            log.exception("health sweep failed")
