"""The desktop sandbox's user pool: one machine holds more than 128 desktop sessions."""

from __future__ import annotations

import fcntl
import os
import shutil

import pytest

from mintgym.environments.desktop import sandbox
from mintgym.environments.desktop.sandbox import Sandbox


@pytest.mark.desktop
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None,
                    reason="the session user pool is used as root only (useradd needed)")
def test_a_machine_holding_128_desktop_sessions_still_opens_another():
    assert sandbox.MAX_USERS >= 200  # an even 500-session fleet holds 167 desktops
    locks = sandbox.base_dir() / "locks"
    held = []
    try:
        for i in range(128):  # the first 128 users busy (here or in another server)
            fd = os.open(locks / f"{sandbox.USER_PREFIX}{i}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held.append(fd)
            except BlockingIOError:
                os.close(fd)
        box = Sandbox.acquire()
        try:
            assert int(box.name.removeprefix(sandbox.USER_PREFIX)) >= 128
            assert box.home.parent == box.rw
        finally:
            box.release()
    finally:
        for fd in held:
            os.close(fd)
