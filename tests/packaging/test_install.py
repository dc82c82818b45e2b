"""Packaging: the metadata a user's pip reads, a wheel built without warnings, and (slow) ``pip install
".[extra]"`` by a non-root user into a fresh virtual environment, for every extra.

The slow test installs from a copy of this checkout owned by the installing user (as a user's own clone
would be), with the package index pip is configured with. As root it installs as ``nobody``; otherwise as
the current user. Interpreters: ``/usr/bin/python3.11`` where it exists, plus any listed in
``$MINTGYM_TEST_PYTHONS`` (``:``-separated, e.g. a Python 3.12 or 3.13 the installing user can run).
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: What a checkout holds that is not part of the source (virtual environments, runs, build output, caches).
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", ".venvs", "runs", "build", "dist", "*.egg-info", "__pycache__",
                                    ".ruff_cache", ".hypothesis", ".pytest_cache", "node_modules", "*.pyc")
#: Lines of a verbose build that are warnings about the project's own packaging.
WARNING = re.compile(r"warning|deprecat|would be ignored", re.IGNORECASE)
#: Build noise that is not about the project: byte-compiling is off when PYTHONDONTWRITEBYTECODE is set.
NOT_OURS = re.compile(r"byte-compiling is disabled|Location '.*' is ignored")
EXTRAS = ("web", "desktop", "osworld", "scale", "dev", "android")


def copy_source(dest: Path) -> Path:
    src = dest / "src"
    shutil.copytree(ROOT, src, ignore=NOT_SOURCE, symlinks=True)
    return src


def test_metadata_allows_newer_pythons_and_a_torch_range():
    project = PYPROJECT["project"]
    assert project["requires-python"] == ">=3.11"
    assert isinstance(project["license"], str)  # an SPDX expression, not the deprecated table
    torch = [spec for spec in project["optional-dependencies"]["rl"] if re.match(r"torch\b", spec)]
    assert len(torch) == 1 and "==" not in torch[0] and ">=" in torch[0] and "<" in torch[0].replace("<=", ""), torch
    assert all(not re.match(r"wheel\b", req) for req in PYPROJECT["build-system"]["requires"])
    # the setup script may still pin the CPU wheel, and its pin must lie inside the declared range
    pin = re.search(r'"torch==([0-9.]+)"', (ROOT / "scripts" / "setup.sh").read_text())
    if pin:
        low, high = re.search(r"torch>=([0-9.]+),<([0-9.]+)", torch[0]).groups()
        version = tuple(int(p) for p in pin.group(1).split("."))
        assert tuple(int(p) for p in low.split(".")) <= version < tuple(int(p) for p in high.split("."))


def test_wheel_builds_without_packaging_warnings(tmp_path):
    src = copy_source(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
                           "-w", str(tmp_path / "wheels"), str(src)], capture_output=True, text=True, env=env,
                          timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    warnings = [line.strip() for line in (proc.stdout + proc.stderr).splitlines()
                if WARNING.search(line) and not NOT_OURS.search(line)]
    assert warnings == [], "\n".join(warnings)
    (wheel,) = (tmp_path / "wheels").glob("mintgym-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        meta = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Requires-Python: >=3.11" in meta and "License-Expression: Apache-2.0" in meta
    # every top-level folder lands under mintgym, the desktop shim (a folder of scripts) included
    for path in ("mintgym/cli/__init__.py", "mintgym/action_spaces/parser.py", "mintgym/agents/vlm.py",
                 "mintgym/evals/suites.yaml", "mintgym/environments/desktop/shim/pyautogui.py"):
        assert path in names, path
    assert not any(n.startswith(("agents/", "evals/", "environments/", "action_spaces/")) for n in names)


def _interpreters() -> list[str]:
    found = [p for p in ("/usr/bin/python3.11",) if os.access(p, os.X_OK)]
    found += [p for p in os.environ.get("MINTGYM_TEST_PYTHONS", "").split(":") if p]
    return found


def _as_user(home: Path) -> list[str]:
    """The command prefix that runs as the installing user (``nobody`` when we are root)."""
    if os.geteuid() != 0:
        return ["env", f"HOME={home}"]
    if shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: cannot install as a non-root user")
    nobody = pwd.getpwnam("nobody")
    for path in [home, *home.rglob("*")]:
        os.lchown(path, nobody.pw_uid, nobody.pw_gid)
    return ["runuser", "-u", "nobody", "--", "env", f"HOME={home}"]


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("python", _interpreters() or ["none"])
def test_non_root_install_of_every_extra(python):
    if python == "none":
        pytest.skip("no Python 3.11+ interpreter a non-root user can run (set MINTGYM_TEST_PYTHONS)")
    home = Path(tempfile.mkdtemp(prefix="mintgym-install-", dir="/tmp"))
    try:
        home.chmod(0o755)
        src = copy_source(home)
        user = _as_user(home)
        version = subprocess.run([*user, python, "-c", "import sys; print(sys.version_info >= (3, 11))"],
                                 capture_output=True, text=True)
        if version.stdout.strip() != "True":
            pytest.skip(f"{python} does not run as the installing user or is older than 3.11: {version.stderr}")
        failures = []
        for extra in EXTRAS:
            venv = home / f"venv-{extra}"
            steps = [[python, "-m", "venv", str(venv)],
                     [str(venv / "bin" / "pip"), "install", "-q", "--upgrade", "pip"],
                     [str(venv / "bin" / "pip"), "install", "-q", f"{src}[{extra}]"],
                     [str(venv / "bin" / "mintgym"), "envs"]]
            episode = extra == "web" and os.access("/usr/bin/chromium", os.X_OK)  # a real episode in Chromium
            if episode:
                steps.append([str(venv / "bin" / "mintgym"), "rollout", "--task", "miniwob/click-button",
                              "--agent", "scripted", "--out", str(home / "runs")])
            for step in steps:
                proc = subprocess.run([*user, *step], capture_output=True, text=True, cwd=home, timeout=1500)
                if proc.returncode != 0:
                    failures.append(f"[{extra}] {' '.join(step[-3:])}: {proc.stderr.strip()[-800:]}")
                    break
            else:
                if episode and "1/1 succeeded" not in proc.stdout:
                    failures.append(f"[{extra}] the scripted episode did not succeed: {proc.stdout[-800:]}")
            shutil.rmtree(venv, ignore_errors=True)
        assert failures == [], "\n".join(failures)
    finally:
        shutil.rmtree(home, ignore_errors=True)
