"""Shared fixtures: a real uvicorn server on loopback in a thread, for apps built in the test; a local Ray
instance for a test module."""

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


@pytest.fixture(scope="module")
def local_ray():
    """A local one-CPU Ray instance for the module's tests, shut down after them."""
    import ray

    ray.init(address="local", num_cpus=1, include_dashboard=False, configure_logging=False, log_to_driver=False)
    yield
    ray.shutdown()
