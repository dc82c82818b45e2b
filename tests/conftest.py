"""Shared fixtures: a real uvicorn server on loopback in a thread, for apps built in the test."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from mintgym.testing import serve_asgi

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


running_app = serve_asgi  # a real uvicorn server on loopback in a thread


@pytest.fixture
def serve_app():
    stack = contextlib.ExitStack()
    yield lambda app: stack.enter_context(running_app(app))
    stack.close()
