"""The host's loopback HTTP server: MiniWoB++'s HTML straight from the installed package, and the web apps.

It runs on the host's event loop (uvicorn's ``Server.serve`` as a task) and binds 127.0.0.1 on a free port.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

log = logging.getLogger("mintgym.web.server")


def miniwob_html_dir() -> Path:
    """The ``html`` folder of the installed ``miniwob`` package (tasks, core.js, flight sites)."""
    from mintgym.environments.web.miniwob.catalog import miniwob_html_dir as find

    return find()


class LocalServer:
    """A Starlette app served on 127.0.0.1:<free port> for as long as the host runs."""

    def __init__(self, routes: list[BaseRoute]):
        self.app = Starlette(routes=routes)
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task | None = None

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add_route(self, route: BaseRoute) -> None:
        """Serve ``route`` too (once per name: a route whose name is already served is not added again)."""
        name = getattr(route, "name", None)
        if name is None or not any(getattr(r, "name", None) == name for r in self.app.router.routes):
            self.app.router.routes.append(route)

    async def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off", access_log=False,
                                timeout_keep_alive=30)
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name="mintgym-web-server")
        for _ in range(200):
            if self._server.started or self._task.done():
                break
            await asyncio.sleep(0.01)
        if self._task.done():
            self._task.result()  # raises the start-up error
        if not self._server.started:
            raise RuntimeError("the web host's loopback server did not start within 2 s")

    async def stop(self) -> None:
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        try:
            await asyncio.wait_for(self._task, 5.0)
        except TimeoutError:
            self._server.force_exit = True
            self._task.cancel()
        self._server = self._task = None


def miniwob_mount() -> Mount:
    return Mount("/miniwob", app=StaticFiles(directory=miniwob_html_dir()), name="miniwob")
