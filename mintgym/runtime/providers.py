"""Layer 3: where an env server runs. One small ABC; nothing else knows which provider started a server.

A provider starts the env server for one domain and returns its base URL (``http://127.0.0.1:PORT``),
waits until ``/v1/health`` answers, and stops it. ``local`` (a subprocess) is the default; ``docker``
and ``ray`` implement the same three methods.
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass, field

import httpx

from mintgym.errors import BackendError


@dataclass
class ServerHandle:
    """A running env server: where to reach it and how to authenticate."""

    base_url: str
    domain: str
    token: str | None = None
    #: Provider-specific identity (a pid, a container id, an actor name).
    ident: str = ""
    extra: dict = field(default_factory=dict)


class Provider(abc.ABC):
    """Starts and stops env servers."""

    name: str = ""

    @abc.abstractmethod
    def start(self, domain: str, *, token: str | None = None, options: dict | None = None) -> ServerHandle:
        """Start an env server for ``domain`` and return its handle (not yet necessarily ready)."""

    def wait_ready(self, handle: ServerHandle, timeout: float = 120.0) -> None:
        """Block until ``/v1/health`` answers 200, or raise BackendError with the last failure."""
        wait_for_health(handle, timeout, alive=lambda: self.alive(handle))

    @abc.abstractmethod
    def stop(self, handle: ServerHandle) -> None:
        """Stop the server and free what it held; safe to call twice."""

    def alive(self, handle: ServerHandle) -> bool:
        """False once the server process/container/actor is known to be gone."""
        return True


def wait_for_health(handle: ServerHandle, timeout: float, alive=lambda: True) -> None:
    deadline = time.monotonic() + timeout
    headers = {"Authorization": f"Bearer {handle.token}"} if handle.token else {}
    last = "no answer yet"
    delay = 0.02
    with httpx.Client(timeout=2.0, headers=headers, trust_env=False) as client:
        while time.monotonic() < deadline:
            if not alive():
                raise BackendError(f"env server for {handle.domain!r} ({handle.ident}) exited before it was ready: "
                                   f"{last}")
            try:
                resp = client.get(f"{handle.base_url}/v1/health")
                if resp.status_code == 200:
                    return
                last = f"HTTP {resp.status_code}: {resp.text[:200]}"
            except httpx.HTTPError as err:
                last = f"{type(err).__name__}: {err}"
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)
    raise BackendError(f"env server for {handle.domain!r} at {handle.base_url} not ready after {timeout:.0f}s: {last}")
