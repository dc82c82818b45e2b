"""Layer 3: env servers of one domain as a supervised group: the one way every caller starts env servers.

``start_env_servers(provider, "web", 4)`` starts the servers (in parallel), waits until each answers
``/v1/health`` and returns the :class:`ServerGroup`; if any fails to come up, the ones already started are
stopped before the error propagates. ``per_server`` options go to one server each (a ray server's placement
group), and to its replacement too. ``mintgym.make``, the eval harness, the RL run and the fleet benchmark
all start servers through it. The group is a context manager (leaving it stops the servers); ``check()``
finds servers that died, stops what is left of them (their process group, container or actor) and starts
replacements, returning what changed so callers can move their sessions over.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
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
    #: Options of server i over ``options`` (empty: none), kept for its replacement.
    per_server: list[dict] = field(default_factory=list)
    ready_timeout: float = 180.0
    handles: list[ServerHandle] = field(default_factory=list)
    restarts: int = 0

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"a server group needs at least one server, got count={self.count}")
        if self.per_server and len(self.per_server) != self.count:
            raise ValueError(f"per_server gives options for {len(self.per_server)} servers, not count={self.count}")
        self._lock = threading.Lock()

    @property
    def urls(self) -> list[str]:
        return [h.base_url for h in self.handles]

    def _start_one(self, index: int) -> ServerHandle:
        options = {**self.options, **(self.per_server[index] if self.per_server else {})}
        handle = self.provider.start(self.domain, token=self.token, options=options)
        try:
            self.provider.wait_ready(handle, self.ready_timeout)
        except BaseException:
            self.provider.stop(handle)
            raise
        return handle

    def start(self) -> ServerGroup:
        """Start ``count`` servers and wait for them; on any failure (Ctrl-C included) stop every one started."""
        if self.count == 1:  # in the caller's thread, so that Ctrl-C reaches the start itself
            self.handles.append(self._start_one(0))
            return self
        futures: list[Future] = []
        try:
            with ThreadPoolExecutor(max_workers=min(8, self.count)) as pool:
                futures = [pool.submit(self._start_one, i) for i in range(self.count)]
                try:
                    wait(futures)
                finally:  # after Ctrl-C: start no more; leaving the pool waits for the starts under way
                    for f in futures:
                        f.cancel()
        except BaseException:
            self._collect(futures)
            self.stop()
            raise
        errors = self._collect(futures)
        if errors:
            self.stop()
            raise errors[0]
        return self

    def _collect(self, futures: list[Future]) -> list[BaseException]:
        """Keep the servers that started; return the errors of those that did not."""
        errors = []
        for f in futures:
            if not f.done() or f.cancelled():
                continue
            if f.exception() is None:
                self.handles.append(f.result())
            else:
                errors.append(f.exception())
        return errors

    def __enter__(self) -> ServerGroup:
        return self if self.handles else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def check(self) -> list[Replacement]:
        """Replace every server that is no longer alive; returns the replacements made."""
        changes = []
        with self._lock:
            for i, handle in enumerate(list(self.handles)):
                if self.provider.alive(handle):
                    continue
                self.provider.stop(handle)
                try:
                    new = self._start_one(i)
                    self.handles[i] = new
                    self.restarts += 1
                    changes.append(Replacement(handle, new))
                except Exception as err:
                    changes.append(Replacement(handle, None, f"{type(err).__name__}: {err}"))
        return changes

    def stop(self, grace: float | None = None) -> None:
        """Stop every server; safe to call twice. ``grace``: seconds a ``local`` server gets to exit cleanly
        (the provider's default when None; other providers stop at their own pace)."""
        with self._lock:
            for handle in self.handles:
                if grace is not None and self.provider.name == "local":
                    self.provider.stop(handle, grace=grace)
                else:
                    self.provider.stop(handle)
            self.handles.clear()


def start_env_servers(provider: Provider, domain: str, count: int = 1, *, token: str | None = None,
                      options: dict | None = None, per_server: list[dict] | None = None,
                      ready_timeout: float = 180.0) -> ServerGroup:
    """Start ``count`` env servers of ``domain`` with ``provider`` and wait until all are ready.

    ``options`` go to ``provider.start`` (``host_options`` for the env host), with ``per_server[i]`` over them
    for server i. Nothing is left running when it raises. Returns the group that stops them (``stop()``, or
    use it as a context manager).
    """
    return ServerGroup(provider, domain, count, token=token, options=dict(options or {}),
                       per_server=list(per_server or []), ready_timeout=ready_timeout).start()
