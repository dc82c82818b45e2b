"""Fixtures the core's tests share."""

import pytest

from mintgym.runtime.make import provider


@pytest.fixture(scope="module")
def local_server():
    """``local_server(domain)``: the base URL of a local env server of ``domain``, started once per module."""
    prov = provider("local")
    started = {}

    def url(domain: str, ready_timeout: float = 120.0) -> str:
        if domain not in started:
            started[domain] = prov.start(domain)
            prov.wait_ready(started[domain], ready_timeout)
        return started[domain].base_url

    yield url
    for handle in started.values():
        prov.stop(handle)


@pytest.fixture(scope="module")
def null_server(local_server):
    return local_server("null")
