"""Fixtures for the tests of the scripts under benchmarks/ (plain scripts, not a package)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def load_benchmark() -> Callable[[str], ModuleType]:
    """``load_benchmark("name")``: benchmarks/name.py imported as a module (its ``main`` not run)."""

    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
