"""SIGKILL of a pytool env server leaves no sandbox process behind, even one frozen between cells."""

import os
import signal
import time

import psutil
import pytest

import mintgym
from mintgym.environments.isolation import cgroups


def _live(procs):
    alive = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.NoSuchProcess:
            pass
    return alive


def test_killing_the_server_ends_its_frozen_sandboxes():
    if cgroups.probe()[0]:
        pytest.skip(f"no cgroups here: {cgroups.probe()[0]}")
    env = mintgym.make("pytool/count-shapes-0")
    try:
        env.reset(seed=0)
        env.step('python(code="print(1)")')  # the sandbox now sits frozen until the next cell
        port = int(env.base_url.rsplit(":", 1)[1])
        server = next(c.pid for c in psutil.net_connections("tcp") if c.status == "LISTEN" and c.laddr.port == port)
        sandbox = [p for p in psutil.Process(server).children(recursive=True) if p.name() != "python" or
                   p.uids().real != os.getuid()]
        assert sandbox, "the server runs a sandbox"
        os.kill(server, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _live(sandbox) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _live(sandbox), [p.pid for p in _live(sandbox)]
    finally:
        try:
            env.close()
        except Exception:  # the server is gone: closing only tidies the client
            pass
