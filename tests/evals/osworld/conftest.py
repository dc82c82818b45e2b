import shutil

import pytest
import pytest_asyncio

from mintgym.environments.desktop.host import DesktopHost

needs_x = pytest.mark.skipif(shutil.which("Xvfb") is None or shutil.which("openbox") is None,
                             reason="Xvfb and openbox are needed")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def host():
    h = DesktopHost()
    await h.start()
    yield h
    await h.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(host):
    e = await host.create({})
    await e.reset(None, 0)
    yield e
    await e.close()
