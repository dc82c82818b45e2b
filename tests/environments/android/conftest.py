"""Fixtures for the Android tests: a real adb server on a free loopback port, killed afterwards.

No emulator can run where these tests were written, so nothing here pretends to be a device: the adb
server is real and simply has no device attached. Tests that need a device read its serial from
MINTGYM_ANDROID_SERIAL and are skipped without one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mintgym.environments.android.adb import free_port

DATA = Path(__file__).parent / "data"
NO_DEVICE_REASON = ("needs an Android emulator or phone: set MINTGYM_ANDROID_SERIAL (and MINTGYM_ANDROID_ADB_PORT "
                    "for a server already running); no emulator can run on the machine these tests were written on")

needs_adb = pytest.mark.skipif(shutil.which("adb") is None, reason="the adb binary is not installed")


@pytest.fixture
def adb_port():
    """A real adb server of our own on a free port; killed after the test."""
    if shutil.which("adb") is None:
        pytest.skip("the adb binary is not installed")
    port = free_port()
    env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(port)}
    subprocess.run(["adb", "-P", str(port), "start-server"], check=True, timeout=30, env=env,
                   capture_output=True)
    try:
        yield port
    finally:
        subprocess.run(["adb", "-P", str(port), "kill-server"], timeout=30, env=env, capture_output=True, check=False)


@pytest.fixture
def device_serial():
    serial = os.environ.get("MINTGYM_ANDROID_SERIAL")
    if not serial:
        pytest.skip(NO_DEVICE_REASON)
    return serial


@pytest.fixture
def window_dump() -> str:
    return (DATA / "window_dump.xml").read_text(encoding="utf-8")


