"""Layer 3: a supervised group of env servers of one domain, kept at a fixed count by any provider.

``ServerGroup(provider, "web", count=4).start()`` starts the servers (in parallel) and waits for them;
``check()`` finds servers that died, stops what is left of them (their process group, container or
actor) and starts replacements, returning what changed so callers can move their sessions over.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from mintgym.runtime.providers import Provider, ServerHandle


@dataclass
class Replacement:
    old: ServerHandle
    new: ServerHandle | None
    error: str | None = None


@dataclass
class ServerGroup:
    provider: Provider
    domain: str
    count: int
    token: str | None = None
    options: dict = field(default_factory=dict)
    ready_timeout: float = 180.0
    handles: list[ServerHandle] = field(default_factory=list)
    restarts: int = 0

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"a server group needs at least one server, got count={self.count}")
        self._lock = threading.Lock()

    def _start_one(self) -> ServerHandle:
        handle = self.provider.start(self.domain, token=self.token, options=dict(self.options))
        try:
            self.provider.wait_ready(handle, self.ready_timeout)
        except BaseException:
            self.provider.stop(handle)
            raise
        return handle

    def start(self) -> "ServerGroup":
        with ThreadPoolExecutor(max_workers=min(8, self.count)) as pool:
            futures = [pool.submit(self._start_one) for _ in range(self.count)]
            errors = []
            for f in futures:
                try:
                    self.handles.append(f.result())
                except Exception as err:
                    errors.append(err)
        if errors:
            self.stop()
            raise errors[0]
        return self

    def check(self) -> list[Replacement]:
        """Replace every server that is no longer alive; returns the replacements made."""
        changes = []
        with self._lock:
            for i, handle in enumerate(list(self.handles)):
                if self.provider.alive(handle):
                    continue
                self.provider.stop(handle)
                try:
                    new = self._start_one()
                    self.handles[i] = new
                    self.restarts += 1
                    changes.append(Replacement(handle, new))
                except Exception as err:
                    changes.append(Replacement(handle, None, f"{type(err).__name__}: {err}"))
        return changes

    def stop(self) -> None:
        with self._lock:
            for handle in self.handles:
                self.provider.stop(handle)
            self.handles.clear()
