"""A browser's DevTools protocol inside a desktop session, reached from the env server.

The session's Chromium listens for DevTools on its own loopback (:data:`DEVTOOLS_PORT`, the port
OSWorld's tasks launch Chrome with), inside the session's network namespace: no other session and no
process on the host can reach it. :class:`DevToolsBridge` opens a listener on the server's loopback that
forwards each connection into the session (:meth:`SessionNamespace.connect`), so standard clients --
Playwright's ``connect_over_cdp``, plain HTTP to ``/json`` -- work unchanged. The bridge lives as long as
the session; the agent's processes cannot reach it (they have no route to the host's loopback).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

DEVTOOLS_PORT = 1337


class DevToolsBridge:
    """A loopback listener of the server that forwards to ``port`` in one session's network."""

    def __init__(self, connect, port: int = DEVTOOLS_PORT):
        self._connect = connect  # (port) -> socket in the session's network
        self.port = port
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the DevTools bridge is not started")
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def start(self) -> str:
        if self._server is None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self.url

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            sock = await asyncio.to_thread(self._connect, self.port)
            up_reader, up_writer = await asyncio.open_connection(sock=sock)
        except (OSError, ConnectionError):
            writer.close()
            return
        pumps = [asyncio.ensure_future(_pump(reader, up_writer)), asyncio.ensure_future(_pump(up_reader, writer))]
        self._tasks.update(pumps)
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for task in pumps:
            task.cancel()
            self._tasks.discard(task)
        for w in (writer, up_writer):
            w.close()

    def reachable(self) -> bool:
        """Whether something listens on the DevTools port inside the session."""
        try:
            self._connect(self.port).close()
            return True
        except (OSError, ConnectionError):
            return False

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None


async def _pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while chunk := await src.read(65536):
            dst.write(chunk)
            await dst.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            dst.write_eof()


@contextlib.asynccontextmanager
async def browser(bridge: DevToolsBridge, timeout: float = 30.0, attempts: int = 3) -> AsyncIterator[object]:
    """Playwright's handle on the session's browser over the bridge (the browser is left running). A connection
    that fails or does not complete within ``timeout`` s is made again, ``attempts`` times in all: a browser
    busy starting on a loaded machine can leave one hanging (OSWorld's own Chrome steps retry as well)."""
    from playwright.async_api import Error as PlaywrightError
    from playwright.async_api import async_playwright

    url = await bridge.start()
    async with async_playwright() as pw:
        for attempt in range(1, attempts + 1):
            try:
                handle = await pw.chromium.connect_over_cdp(url, timeout=timeout * 1000)
                break
            except PlaywrightError:
                if attempt == attempts:
                    raise
        yield handle  # leaving the block stops this driver: the connection drops, the browser runs on
