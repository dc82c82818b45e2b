"""The pytool session around its sandbox: what a cell leaves as out.png is shown only when it is a PNG
(anything else is that cell's error, which the agent reads), and a session closed mid-cell or mid-start
ends at once, leaving no process and no control group."""

from __future__ import annotations

import asyncio
import os
import time

import psutil
import pytest

from mintgym.action_spaces import Python
from mintgym.environments.isolation import cgroups
from mintgym.environments.pytool.host import PytoolHost
from mintgym.environments.pytool.sandbox import Sandbox, probe_isolation
from mintgym.errors import EnvironmentCrashed
from tests.environments.pytool.conftest import run

NAMESPACE = probe_isolation().level == "namespace"
CGROUPS = NAMESPACE and probe_isolation().resources == "cgroup"
needs_cgroup = pytest.mark.skipif(not CGROUPS, reason="needs root, bubblewrap and control groups")


@pytest.fixture
async def host():
    h = PytoolHost(cpu_seconds=2, wall_seconds=40, memory_mb=512, processes=32, output_chars=2000)
    await h.start()
    yield h
    await h.stop()




EPS = "%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 32 32\n0 0 32 32 rectfill\nshowpage\n"
NOT_SHOWN = {
    "directory": ("import os\nos.mkdir('out.png')", "a directory, not a regular file"),
    "fifo": ("import os\nos.mkfifo('out.png')", "a FIFO, not a regular file"),
    "symlink": ("import os\nos.symlink('/etc/passwd', 'out.png')", "a symbolic link, not a regular file"),
    "dangling symlink": ("import os\nos.symlink('nowhere.png', 'out.png')", "a symbolic link, not a regular file"),
    "socket": ("import socket\nsocket.socket(socket.AF_UNIX).bind('out.png')", "a socket, not a regular file"),
    "eps": (f"open('out.png', 'w').write({EPS!r})", "not a PNG image"),
    "gif": ("from PIL import Image\nImage.new('RGB', (8, 8)).save('out.png', format='GIF')", "not a PNG image"),
    "empty": ("open('out.png', 'wb').close()", "not a PNG image"),
    "truncated": ("import io\nfrom PIL import Image\nbuf = io.BytesIO()\n"
                  "Image.effect_noise((64, 64), 50).save(buf, 'PNG')\n"
                  "open('out.png', 'wb').write(buf.getvalue()[:300])", "not a readable PNG (OSError"),
    "too many pixels": ("from PIL import Image\nImage.new('1', (5000, 5000)).save('out.png')",
                        "5000x5000 px, over the limit"),
}


@pytest.mark.parametrize("kind", sorted(NOT_SHOWN))
async def test_an_out_png_that_cannot_be_shown_is_the_cells_error(env, kind):
    code, why = NOT_SHOWN[kind]
    out = await run(env, code + "\nprint('left it')")
    assert "left it" in out and f"out.png was not shown: it is {why}" in out, out
    assert env.last_result.error and env._canvas.failed and env._canvas.shown_image is None
    assert "root:" not in out
    out = await run(env, "print(6 * 7)")  # the same out.png again: told once, when the cell left it
    assert out.strip() == "42" and env.last_result.ok
    out = await run(env, "import os, shutil\nshutil.rmtree('out.png') if os.path.isdir('out.png') and not "
                         "os.path.islink('out.png') else os.remove('out.png')\n"
                         "from PIL import Image\nshow(Image.new('RGB', (30, 20), 'red'))")
    assert env.last_result.ok, out
    assert env._canvas.shown_image is not None and env._canvas.shown_image.size == (30, 20)


async def test_a_missing_out_png_is_no_error(env):
    assert (await run(env, "print(1)")).strip() == "1" and env.last_result.ok
    await run(env, "from PIL import Image\nshow(Image.new('RGB', (4, 4)))")
    assert env._canvas.shown_image is not None
    out = await run(env, "import os\nos.remove('out.png')\nprint('gone')")
    assert out.strip() == "gone" and env.last_result.ok and env._canvas.shown_image is None


def _own_groups() -> set[str]:
    return {p.name for p in cgroups.probe()[1]["core"].glob(f"mintgym-pytool-{os.getpid()}-*")}


def _running_as(uid: int) -> list[int]:
    return [p.pid for p in psutil.process_iter(["uids", "status"])
            if p.info["uids"] and p.info["uids"].real == uid and p.info["status"] != psutil.STATUS_ZOMBIE]


@needs_cgroup
async def test_closing_mid_cell_ends_the_cell_and_reclaims_the_sandbox(env):
    await run(env, "x = 1")
    group = env.sandbox.cgroup.dirs["core"]
    cell = asyncio.ensure_future(env.execute(Python(code="import subprocess\nsubprocess.run(['sleep', '60'])")))
    while len(env.sandbox.cgroup.pids()) < 2:  # the worker and its sleep
        await asyncio.sleep(0.02)
    await env.close()
    with pytest.raises(EnvironmentCrashed, match="closed during the step"):
        await cell
    assert not group.exists() and _running_as(env.uid) == []
    with pytest.raises(EnvironmentCrashed, match="was closed"):
        await env.sandbox.start()  # nothing restarts a closed sandbox
    assert not group.exists() and _running_as(env.uid) == []


@needs_cgroup
async def test_closing_mid_start_leaves_no_worker_or_group(env):
    before = _own_groups()
    sandbox = Sandbox(env.workdir, env.taskdir, env.uid, env.sandbox.limits)
    starting = asyncio.ensure_future(sandbox.start())
    while sandbox._proc is None:  # bubblewrap is starting the worker
        await asyncio.sleep(0.001)
    await sandbox.close()
    with pytest.raises(EnvironmentCrashed):
        await starting
    assert _own_groups() == before and not sandbox.alive()


@needs_cgroup
async def test_a_start_cancelled_while_its_group_is_made_leaves_no_group(env):
    before = _own_groups()
    sandbox = Sandbox(env.workdir, env.taskdir, env.uid, env.sandbox.limits)
    starting = asyncio.ensure_future(sandbox.start())
    await asyncio.sleep(0)  # start() now waits for the thread that makes its group
    deadline = time.monotonic() + 30
    while _own_groups() == before:  # not awaiting: start() cannot take the group before the cancel
        assert time.monotonic() < deadline, "the group was never made"
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    for _ in range(200):  # the thread finishes, then the unclaimed group is removed
        if _own_groups() == before:
            break
        await asyncio.sleep(0.02)
    assert _own_groups() == before and sandbox.cgroup is None
