"""Fixtures: the misbehaving OpenAI-compatible model server (tests/agents/model_server.py) on loopback."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from mintgym.testing import serve_asgi


def load_model_server():
    """The model_server module, loaded by path (test folders are not packages)."""
    path = Path(__file__).with_name("model_server.py")
    spec = importlib.util.spec_from_file_location("mintgym_tests_model_server", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module




@pytest.fixture(scope="module")
def model_server():
    """Base URL of a fresh misbehaving model server (modes are path prefixes, see model_server.py)."""
    with serve_asgi(load_model_server().create_app()) as url:
        yield url
