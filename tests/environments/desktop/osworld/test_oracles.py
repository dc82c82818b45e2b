"""Oracle shell helpers: waiting for an app to be gone before editing the settings it writes on exit."""

import os
import shutil
import subprocess
import time

from mintgym.environments.desktop.osworld.oracles import _wait_gone


def _named_copy_of_sleep(tmp_path):
    exe = tmp_path / "mgsleeper"  # a name no other process has
    shutil.copy(shutil.which("sleep"), exe)
    return exe


def test_wait_gone_waits_for_a_live_process(tmp_path):
    exe = _named_copy_of_sleep(tmp_path)
    proc = subprocess.Popen([exe, "1"])
    try:
        t0 = time.monotonic()
        subprocess.run(["bash", "-c", _wait_gone("mgsleeper", seconds=10)], check=True)
        assert proc.poll() is not None, "returned while the process was still running"
        assert time.monotonic() - t0 < 9  # it noticed the exit, not the time limit
    finally:
        proc.kill()
        proc.wait()


def test_wait_gone_does_not_wait_for_a_zombie(tmp_path):
    exe = _named_copy_of_sleep(tmp_path)
    proc = subprocess.Popen([exe, "0"])
    try:
        while True:  # exited but not reaped: a zombie
            state = subprocess.run(["ps", "-o", "stat=", "-p", str(proc.pid)], capture_output=True, text=True)
            if state.stdout.strip().startswith("Z"):
                break
            time.sleep(0.05)
        t0 = time.monotonic()
        subprocess.run(["bash", "-c", _wait_gone("mgsleeper", seconds=5)], check=True)
        assert time.monotonic() - t0 < 4
    finally:
        os.waitpid(proc.pid, 0)
