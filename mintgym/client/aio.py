"""Layer 2: the asyncio client for rollout workers: many sessions on one connection pool.

``AsyncEnvClient(base_url)`` talks to one env server; ``await client.session()`` opens an
:class:`AsyncSession` whose ``reset``/``step`` return typed :class:`Observation` plus the step fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from mintgym.action_spaces import ActionModel
from mintgym.client import protocol
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
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=protocol.headers(token), timeout=timeout,
                                       limits=limits, trust_env=False)

    async def session(self, side_channels: tuple[str, ...] = (), env_options: dict | None = None) -> "AsyncSession":
        resp = await self.request("POST", "/v1/sessions", {"side_channels": list(side_channels),
                                                           "env_options": env_options or {}})
        protocol.raise_for_error(resp)
        created = resp.json()
        return AsyncSession(self, created["session_id"], tuple(created["screen_size"]), created["action_set"])

    async def health(self) -> dict:
        resp = await self.request("GET", "/v1/health")
        return resp.json()

    async def spec(self) -> dict:
        resp = await self.request("GET", "/v1/spec")
        protocol.raise_for_error(resp)
        return resp.json()

    async def request(self, method: str, path: str, body: dict | None = None) -> httpx.Response:
        try:
            return await self._http.request(method, path, json=body)
        except httpx.TimeoutException as err:
            raise ServerError(f"env server at {self.base_url} did not answer {path} in time: {err}") from err
        except httpx.HTTPError as err:
            raise ServerError(f"env server at {self.base_url} failed on {path}: {type(err).__name__}: {err}") from err

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncEnvClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()


@dataclass
class AsyncSession:
    client: AsyncEnvClient
    session_id: str
    screen_size: tuple[int, int]
    action_set: str
    closed: bool = False

    async def reset(self, task_id: str | None = None, seed: int | None = None) -> tuple[Observation, dict]:
        resp = await self.client.request("POST", f"/v1/sessions/{self.session_id}/reset",
                                         protocol.reset_body(task_id, seed, self.client.encoding))
        obs, meta = protocol.decode_frame(resp)
        return obs, dict(meta.info, frame_id=obs.frame_id)

    async def step(self, action: str | ActionModel | dict) -> StepResult:
        resp = await self.client.request("POST", f"/v1/sessions/{self.session_id}/step",
                                         protocol.step_body(action, self.client.encoding))
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
