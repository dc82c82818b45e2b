"""Layer 2: the asyncio client for rollout workers: many sessions on one connection pool.

It runs on aiohttp: measured here, a 2.7 MB raw frame step takes about 1.1 ms through aiohttp and
15 ms through httpx's async client.

``AsyncEnvClient(base_url)`` talks to one env server; ``await client.session()`` opens an
:class:`AsyncSession` whose ``reset``/``step`` return typed :class:`Observation` plus the step fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import aiohttp

from mintgym.action_spaces import ActionModel
from mintgym.client import protocol
from mintgym.client.transport import HttpResponse
from mintgym.errors import ServerError
from mintgym.types import Observation


@dataclass
class StepResult:
    observation: Observation
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)


class AsyncEnvClient:
    def __init__(self, base_url: str, *, token: str | None = None, encoding: str = "png", timeout: float = 120.0,
                 max_connections: int = 512):
        self.base_url = base_url.rstrip("/")
        self.encoding = encoding
        self._headers = protocol.headers(token)
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._max_connections = max_connections
        self._http: aiohttp.ClientSession | None = None

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            connector = aiohttp.TCPConnector(limit=self._max_connections, keepalive_timeout=60)
            self._http = aiohttp.ClientSession(headers=self._headers, timeout=self._timeout, connector=connector,
                                               trust_env=False)
        return self._http

    async def session(self, side_channels: tuple[str, ...] = (), env_options: dict | None = None) -> AsyncSession:
        resp = await self.request("POST", "/v1/sessions", {"side_channels": list(side_channels),
                                                           "env_options": env_options or {}})
        protocol.raise_for_error(resp)
        created = resp.json()
        return AsyncSession(self, created["session_id"], tuple(created["screen_size"]), created["action_set"],
                            created.get("screen_hint", ""))

    async def health(self) -> dict:
        resp = await self.request("GET", "/v1/health")
        if resp.status_code != 503:  # 503 carries the degraded health body
            protocol.raise_for_error(resp)
        return resp.json()

    async def spec(self) -> dict:
        resp = await self.request("GET", "/v1/spec")
        protocol.raise_for_error(resp)
        return resp.json()

    async def request(self, method: str, path: str, body: dict | None = None) -> HttpResponse:
        try:
            async with self._session().request(method, self.base_url + path, json=body) as resp:
                content = await resp.read()
                return HttpResponse(resp.status, {k.lower(): v for k, v in resp.headers.items()}, content)
        except TimeoutError as err:
            raise ServerError(f"env server at {self.base_url} did not answer {method} {path} in time") from err
        except aiohttp.ClientError as err:
            raise ServerError(f"env server at {self.base_url} failed on {method} {path}: "
                              f"{type(err).__name__}: {err}") from err

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()

    async def __aenter__(self) -> AsyncEnvClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()


@dataclass
class AsyncSession:
    client: AsyncEnvClient
    session_id: str
    screen_size: tuple[int, int]
    action_set: str
    #: What agent prompts say about this domain's screenshots, as the server reports it.
    screen_hint: str = ""
    closed: bool = False

    async def reset(self, task_id: str | None = None, seed: int | None = None,
                    max_steps: int | None = None) -> tuple[Observation, dict]:
        resp = await self.client.request("POST", f"/v1/sessions/{self.session_id}/reset",
                                         protocol.reset_body(task_id, seed, self.client.encoding, max_steps))
        obs, meta = protocol.decode_frame(resp)
        return obs, dict(meta.info, frame_id=obs.frame_id)

    async def step(self, action: str | ActionModel | dict | None, *, agent_error: str | None = None) -> StepResult:
        """One step: a typed action, raw model text (parsed on the server), or ``action=None`` with the
        agent's ``agent_error`` (a counted step that executes nothing)."""
        if action is None:
            body = protocol.agent_error_body(agent_error or "", self.client.encoding)
        else:
            body = protocol.step_body(action, self.client.encoding)
        resp = await self.client.request("POST", f"/v1/sessions/{self.session_id}/step", body)
        obs, meta = protocol.decode_frame(resp)
        return StepResult(obs, meta.reward, meta.terminated, meta.truncated, dict(meta.info, frame_id=obs.frame_id))

    async def evaluate(self) -> float:
        resp = await self.client.request("POST", f"/v1/sessions/{self.session_id}/evaluate", {})
        protocol.raise_for_error(resp)
        return float(resp.json()["score"])

    async def oracle_action(self) -> dict | None:
        resp = await self.client.request("POST", f"/v1/sessions/{self.session_id}/oracle", {})
        protocol.raise_for_error(resp)
        return resp.json()["action"]

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            await self.client.request("DELETE", f"/v1/sessions/{self.session_id}")
        except ServerError:
            pass  # the server is gone already
