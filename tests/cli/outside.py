"""Helpers for CLI tests of a researcher's own code: a package written outside the repository, and the
`mintgym` command run as a subprocess with that folder on PYTHONPATH (and no packs forwarded from here)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def write_package(root: Path, modules: dict[str, str]) -> Path:
    """Write ``{"pkg.mod": source}`` under ``root`` (packages get an empty __init__.py); returns ``root``."""
    for dotted, source in modules.items():
        *packages, name = dotted.split(".")
        folder = root.joinpath(*packages)
        folder.mkdir(parents=True, exist_ok=True)
        for depth in range(1, len(packages) + 1):
            init = root.joinpath(*packages[:depth], "__init__.py")
            if not init.exists():
                init.write_text("")
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
    return root


def mintgym(*args: str, path: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m mintgym.cli ARGS`` with ``path`` on PYTHONPATH (and as the working folder)."""
    full = {**os.environ, **(env or {})}
    full.pop("MINTGYM_PACKS", None)
    if path is not None:
        full["PYTHONPATH"] = os.pathsep.join(p for p in (str(path), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", "mintgym.cli", *args], capture_output=True, text=True, env=full,
                          timeout=300, cwd=path)
