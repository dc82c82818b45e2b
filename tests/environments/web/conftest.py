"""One real Chromium (a WebHost) per test module; everything it started is stopped at the end."""

from __future__ import annotations

import pytest
import pytest_asyncio


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def host():
    from mintgym.environments.web.host import WebHost

    web_host = WebHost()
    await web_host.start()
    yield web_host
    await web_host.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def env(host):
    environment = await host.create({})
    yield environment
    await environment.close()


@pytest.fixture
def anyio_backend():
    return "asyncio"
