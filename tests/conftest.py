"""Shared fixtures: a real uvicorn server on loopback in a thread, for apps built in the test."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


@contextlib.contextmanager
def running_app(app, host: str = "127.0.0.1"):
    """Serve an ASGI app with uvicorn on a free loopback port; yields its base URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


@pytest.fixture
def serve_app():
    stack = contextlib.ExitStack()
    yield lambda app: stack.enter_context(running_app(app))
    stack.close()
