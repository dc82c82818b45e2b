"""Playwright's handle on a session's browser through the DevTools bridge: a connection that hangs is made
again (CI once lost test_chrome.py's tests to one connect_over_cdp that hung for its whole 30 s)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import httpx
import pytest

from mintgym.environments.desktop.devtools import DevToolsBridge, browser

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is needed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def devtools_port(tmp_path):
    """A real headless Chromium serving DevTools on the host's loopback."""
    port = _free_port()
    proc = subprocess.Popen([CHROMIUM, "--headless=new", "--no-sandbox", f"--remote-debugging-port={port}",
                             f"--user-data-dir={tmp_path / 'profile'}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/json/version", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "Chromium served no DevTools port"
                time.sleep(0.2)
        yield port
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def silent():
    """A listener that never answers: a connection to it hangs, as one to a browser too busy to reply does."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield s.getsockname()[1]


def _bridge(first: int, then: int) -> tuple[DevToolsBridge, list[int]]:
    """A bridge whose first connection goes to ``first`` and every later one to ``then``."""
    ports: list[int] = []

    def connect(_port: int) -> socket.socket:
        ports.append(first if not ports else then)
        return socket.create_connection(("127.0.0.1", ports[-1]))

    return DevToolsBridge(connect), ports


async def test_a_connection_that_hangs_is_made_again(devtools_port, silent):
    bridge, ports = _bridge(silent, devtools_port)
    try:
        async with browser(bridge, timeout=3) as handle:
            assert handle.is_connected() and handle.contexts
        assert ports[0] == silent and devtools_port in ports
    finally:
        await bridge.close()


async def test_without_another_attempt_the_hanging_connection_fails(devtools_port, silent):
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    bridge, _ = _bridge(silent, devtools_port)
    try:
        with pytest.raises(PlaywrightTimeout):
            async with browser(bridge, timeout=3, attempts=1):
                pass
    finally:
        await bridge.close()
