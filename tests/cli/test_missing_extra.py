"""A command that needs a domain whose extra is not installed names the extra to install, in one line, exit 2,
whichever command meets it first: `tasks DOMAIN`, `serve DOMAIN`, or a task id of that domain."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("mintgym_tests_outside", Path(__file__).with_name("outside.py"))
outside = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(outside)

INSTALL = "needs 'Xlib', from the desktop extra: pip install 'mintgym[desktop]'"


@pytest.fixture
def without_xlib(tmp_path) -> Path:
    """A folder whose Xlib package fails to import as a missing one does (an install without the desktop extra)."""
    blocker = tmp_path / "Xlib"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'Xlib'\", name='Xlib')\n")
    return tmp_path


@pytest.mark.parametrize("args", [("tasks", "desktop"), ("serve", "desktop", "--port", "1"),
                                  ("rollout", "--task", "desktop/terminal-file-v0", "--out", "runs/r")])
def test_a_missing_extra_is_one_line_naming_it(without_xlib, args):
    proc = outside.mintgym(*args, path=without_xlib)
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and INSTALL in lines[0], lines
    assert "ModuleNotFoundError" not in lines[0]
    assert not (without_xlib / "runs").exists()
