"""``start_env_servers``: the one way env servers are started (make, eval, train, the fleet), with real
local servers: all ready on return, all stopped on leaving the group, none left behind when one fails."""

from __future__ import annotations

import itertools

import httpx
import pytest

from mintgym.errors import BackendError
from mintgym.runtime.fleet import start_env_servers
from mintgym.runtime.local import LocalProvider


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/v1/health", timeout=2.0, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def test_servers_are_ready_on_return_and_stopped_on_leaving():
    provider = LocalProvider()
    with start_env_servers(provider, "null", 2, options={"host_options": {}}) as group:
        assert len(set(group.urls)) == 2 and all(_healthy(u) for u in group.urls)
        urls, handles = group.urls, list(group.handles)
    assert group.handles == [] and not any(_healthy(u) for u in urls)
    assert not any(provider.alive(h) for h in handles)


class _ThirdStartBreaks(LocalProvider):
    """A real local provider whose third server is asked for a domain no host serves, so it dies at start."""

    def __init__(self) -> None:
        super().__init__()
        self.started: list = []
        self.calls = itertools.count()  # the servers start on parallel threads

    def start(self, domain, *, token=None, options=None):
        third = next(self.calls) == 2
        handle = super().start("no-such-domain" if third else domain, token=token, options=options)
        self.started.append(handle)
        return handle


def test_a_server_that_fails_stops_the_ones_already_up():
    provider = _ThirdStartBreaks()
    with pytest.raises(BackendError, match="exited before it was ready"):
        start_env_servers(provider, "null", 3, ready_timeout=60)
    assert len(provider.started) == 3
    assert not any(provider.alive(h) for h in provider.started)
    assert not any(_healthy(h.base_url) for h in provider.started)


def test_a_group_needs_a_server():
    with pytest.raises(ValueError, match="at least one server, got count=0"):
        start_env_servers(LocalProvider(), "null", 0)
