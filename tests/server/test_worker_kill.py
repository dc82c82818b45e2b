"""End to end through a local pytool env server: killing one session's sandbox worker mid-episode fails
that episode (SessionFailed) and leaves the other sessions working."""

import os
import signal
import time

import psutil
import pytest

import mintgym
from mintgym.errors import SessionFailed


@pytest.fixture(scope="module")
def pytool_url(local_server):
    return local_server("pytool")


def session_uid(env) -> int:
    import httpx

    listed = httpx.get(f"{env.base_url}/v1/sessions", timeout=10).json()["sessions"]
    mine = next(s for s in listed if s["session_id"] == env.session_id)
    return int(mine["env"]["sandbox"]["sandbox_uid"])


def test_killing_a_worker_fails_only_its_episode(pytool_url):
    task = "pytool/count-shapes-0"
    a = mintgym.make(task, base_url=pytool_url, encoding="raw")
    b = mintgym.make(task, base_url=pytool_url, encoding="raw", side_channels=("text",))
    try:
        a.reset(seed=1)
        b.reset(seed=2)
        a.step('python(code="x = 41")')
        uid = session_uid(a)
        victims = [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid]
        assert victims, f"no process runs as the sandbox uid {uid}"
        for proc in victims:
            os.kill(proc.pid, signal.SIGKILL)
        time.sleep(0.2)
        with pytest.raises(SessionFailed, match="replaced"):
            a.step('python(code="print(x + 1)")')
        obs, _, _, _, info = b.step('python(code="print(6 * 7)")')
        assert "error" not in info and "42" in obs["text"]
        a.reset(seed=1)  # the replaced session works again
        _, _, _, _, info = a.step('python(code="print(2)")')
        assert "error" not in info
    finally:
        a.close()
        b.close()
