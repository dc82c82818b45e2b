"""The local provider leaves no orphans: stop() ends the server, and a killed parent takes it along."""

import signal
import subprocess
import sys
import time

import psutil
import pytest

from mintgym.errors import BackendError
from mintgym.runtime.local import LocalProvider


def wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.1)
    return False


def test_stop_ends_the_server():
    prov = LocalProvider()
    handle = prov.start("null")
    prov.wait_ready(handle, 60)
    pid = int(handle.ident)
    assert psutil.pid_exists(pid)
    prov.stop(handle)
    assert wait_gone(pid, 10)
    prov.stop(handle)  # twice is fine


def test_killed_parent_leaves_no_orphan(tmp_path):
    script = (
        "import sys; from mintgym.runtime.local import LocalProvider\n"
        "p = LocalProvider(); h = p.start('null'); p.wait_ready(h, 60)\n"
        "print(h.ident, flush=True)\n"
        "import time; time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(parent.stdout.readline())
        assert psutil.pid_exists(server_pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        assert wait_gone(server_pid, 15), "the env server outlived its killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_server_that_cannot_start_reports_its_log():
    prov = LocalProvider()
    handle = prov.start("no-such-domain")
    with pytest.raises(BackendError, match="no environment registered for domain 'no-such-domain'"):
        prov.wait_ready(handle, 60)
    prov.stop(handle)
