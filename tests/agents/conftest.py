"""Fixtures: the misbehaving OpenAI-compatible model server (tests/agents/model_server.py) on loopback."""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import threading
import time
from pathlib import Path

import pytest


def load_model_server():
    """The model_server module, loaded by path (test folders are not packages)."""
    path = Path(__file__).with_name("model_server.py")
    spec = importlib.util.spec_from_file_location("mintgym_tests_model_server", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def serve(app):
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("model test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


@pytest.fixture(scope="module")
def model_server():
    """Base URL of a fresh misbehaving model server (modes are path prefixes, see model_server.py)."""
    with serve(load_model_server().create_app()) as url:
        yield url
