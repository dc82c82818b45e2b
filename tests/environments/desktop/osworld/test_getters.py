"""OSWorld's file getters copy a session's file on a thread: another session's step is answered while a
big copy runs (on the event loop, a 250 MiB copy stalled every session of the server for seconds)."""

import asyncio
import os

import pytest

from mintgym.action_spaces import Move
from mintgym.environments.desktop.osworld.getters import GETTERS

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]

BIG = 250 * 2**20


async def test_a_big_vm_file_copy_does_not_stall_another_session(host, env):
    other = await host.create({})
    try:
        await other.reset(None, 0)
        env.write_bytes("~/Desktop/big.bin", os.urandom(2**20) * (BIG // 2**20))
        copying = asyncio.ensure_future(GETTERS["vm_file"](env, {"path": "/home/user/Desktop/big.bin"}))
        await asyncio.sleep(0)  # the copy has begun
        await other.execute(Move(x=10, y=10))  # the other session's step, and its frame
        shot = await other.screenshot()
        assert not copying.done(), "the other session's step waited for the copy"
        copy = await copying
        assert shot.shape[2] == 3 and os.path.getsize(copy) == BIG
        os.remove(copy)
    finally:
        await other.close()
        await env.run("rm -f ~/Desktop/big.bin", shell=True, timeout=30)
