"""The pytool sandbox: limits, escape attempts contained with a clear error, crashes, isolation, cleanup."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from mintgym.action_spaces import Python, Wait
from mintgym.env.episode import Episode
from mintgym.environments.pytool.host import PytoolHost
from mintgym.environments.pytool.sandbox import probe_isolation
from mintgym.environments.pytool.tasks import all_tasks
from mintgym.errors import EnvironmentCrashed
from tests.environments.pytool.conftest import run

NAMESPACE = probe_isolation().level == "namespace"
needs_namespace = pytest.mark.skipif(not NAMESPACE, reason="needs root and bubblewrap namespaces")
SECRET = "mintgym-secret-7f3a9c"


@pytest.fixture
async def host():
    os.environ["MINTGYM_TOKEN"] = SECRET  # the server's secret: the sandbox must never see it
    # wall >> cpu: the machine may be shared, and a CPU-bound cell must reach its CPU limit first
    h = PytoolHost(cpu_seconds=2, wall_seconds=40, memory_mb=512, processes=32, output_chars=2000)
    await h.start()
    yield h
    await h.stop()
    os.environ.pop("MINTGYM_TOKEN", None)




async def assert_still_works(env):
    assert (await run(env, "print(6 * 7)")).strip() == "42"


async def test_state_persists_like_a_notebook(env):
    assert (await run(env, "x = 20\nx + 1")).strip() == "21"
    assert (await run(env, "x * 2")).strip() == "40"
    out = await run(env, "1/0")
    assert "ZeroDivisionError" in out and "<cell" in out and env.last_result.error
    assert (await run(env, "x")).strip() == "20"


async def test_infinite_loop_stopped_by_cpu_limit(env):
    await run(env, "kept = 'yes'")
    out = await run(env, "while True:\n    pass")
    assert "CPU time limit (2 s) exceeded" in out
    assert (await run(env, "kept")).strip() == "'yes'"


async def test_sleep_stopped_by_wall_clock_limit(host):
    env = await host.create({"wall_seconds": 3})
    try:
        await run(env, "kept = 1")
        out = await run(env, "import time\ntime.sleep(120)")
        assert "wall-clock time limit (3 s) exceeded" in out
        assert (await run(env, "kept")).strip() == "1"
    finally:
        await env.close()


async def test_memory_bomb_becomes_memory_error(env):
    out = await run(env, "big = bytearray(4 * 1024**3)")
    assert "MemoryError" in out and "memory limit (512 MiB)" in out
    out = await run(env, "hog = []\nwhile True:\n    hog.append(bytearray(50 * 1024**2))")
    assert "MemoryError" in out
    await assert_still_works(env)


@needs_namespace
async def test_fork_bomb_contained_and_strays_killed(env):
    out = await run(env, "import os\nwhile True:\n    os.fork()")
    assert "fork failed: resource limit" in out
    uid = env.sandbox.uid
    strays = [p for p in psutil.process_iter(["uids", "status"])
              if p.info["uids"] and p.info["uids"].real == uid and p.info["status"] != psutil.STATUS_ZOMBIE]
    assert [p.pid for p in strays] == [env.sandbox.worker_pid]
    out = await run(env, "import subprocess\nsubprocess.Popen(['sleep', '300'])\nprint('started')")
    assert "started" in out
    assert (await run(env, "import os\nprint(len([p for p in os.listdir('/proc') if p.isdigit()]))")).strip() == "1"
    await assert_still_works(env)


async def test_writing_outside_the_directory_fails(env, tmp_path):
    target = tmp_path / "escaped.txt"
    os.chmod(tmp_path, 0o777)
    for path in (str(target), "/etc/passwd", "/usr/evil.txt", "/tmp/evil.txt"):
        out = await run(env, f"open({path!r}, 'a').write('x')")
        assert "outside the sandbox" in out, out
    assert not target.exists()
    out = await run(env, "open('inside.txt', 'w').write('hello')\nimport os\nprint(os.listdir('.'))")
    assert "inside.txt" in out
    assert env.read_file("inside.txt") == b"hello" and "inside.txt" in env.files()


async def test_file_size_limit(host):
    env = await host.create({"file_mb": 1})
    try:
        out = await run(env, "open('big.bin', 'wb').write(b'0' * (2 * 1024**2))")
        assert "file size limit (1 MiB) exceeded" in out
        await assert_still_works(env)
    finally:
        await env.close()


async def test_server_environment_is_not_readable(env):
    assert os.environ["MINTGYM_TOKEN"] == SECRET
    code = (
        "import os\n"
        "print(dict(os.environ))\n"
        f"for pid in [os.getppid(), {os.getpid()}] + [p for p in os.listdir('/proc') if p.isdigit()]:\n"
        "    try:\n"
        "        print(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "    except OSError as e:\n"
        "        print('denied', pid, e)\n"
    )
    out = await run(env, code)
    assert "denied" in out
    assert SECRET not in out and "MINTGYM_TOKEN" not in out


async def test_network_is_unavailable(env):
    connected = []

    async def on_connect(reader, writer):
        connected.append(True)
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        out = await run(env, f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)")
        assert "network is unavailable in the sandbox" in out
        if NAMESPACE:  # the namespace holds even when the code goes around Python's socket module
            code = ("import ctypes, socket, struct\n"
                    "libc = ctypes.CDLL(None, use_errno=True)\n"
                    "fd = libc.socket(2, 1, 0)\n"
                    f"addr = struct.pack('=HH4s8x', 2, socket.htons({port}), bytes([127, 0, 0, 1]))\n"
                    "rc = libc.connect(fd, addr, len(addr))\n"
                    "print('connect rc', rc, 'errno', ctypes.get_errno())")
            out = await run(env, code)
            assert "connect rc -1" in out, out
        await asyncio.sleep(0.2)
        assert connected == []
    finally:
        server.close()
        await server.wait_closed()
    await assert_still_works(env)


async def test_output_is_truncated_with_a_note(env):
    out = await run(env, "print('y' * 10000)")
    assert "output truncated" in out and len(out) < 3000


async def test_exit_from_code_restarts_transparently(env):
    out = await run(env, "import sys\nsys.exit(3)")
    assert "SystemExit" in out
    out = await run(env, "import os\nos._exit(5)")
    assert "restarted" in out and env.last_result.restarted
    await assert_still_works(env)


async def test_worker_killed_while_idle_is_a_crash(env):
    await assert_still_works(env)
    os.kill(env.sandbox.worker_pid, signal.SIGKILL)
    for _ in range(100):
        if not await env.alive():
            break
        await asyncio.sleep(0.05)
    assert not await env.alive()
    with pytest.raises(EnvironmentCrashed):
        await env.execute(Python(code="print(1)"))


async def test_sandbox_killed_from_outside_mid_step_is_a_crash(env):
    """Killing bubblewrap (outside the sandbox, out of the code's reach) mid-cell is the environment's fault;
    the worker dying mid-cell by itself is the code's (see tests/security/test_pytool_*.py)."""
    pid = env.sandbox._proc.pid if NAMESPACE else env.sandbox.worker_pid
    step = asyncio.create_task(env.execute(Python(code="import time\ntime.sleep(5)")))
    await asyncio.sleep(0.5)
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(EnvironmentCrashed):
        await step
    assert not await env.alive()


async def test_crash_propagates_through_the_episode(env):
    episode = Episode(env)
    await episode.reset(all_tasks()[0], 0)
    os.kill(env.sandbox.worker_pid, signal.SIGKILL)
    with pytest.raises(EnvironmentCrashed):
        await episode.step(Python(code="print(1)"))


@needs_namespace
async def test_sessions_are_isolated(host):
    a, b = await host.create({}), await host.create({})
    try:
        assert a.sandbox.uid != b.sandbox.uid
        await run(a, "open('secret.txt', 'w').write('only for a')")
        host_path = a.workdir / "secret.txt"
        assert host_path.exists()
        out = await run(b, f"print(open({str(host_path)!r}).read())")
        assert "only for a" not in out and "Error" in out
        out = await run(b, "import os\nprint(os.listdir('.'))")
        assert "secret.txt" not in out
    finally:
        await a.close()
        await b.close()


async def test_reset_gives_a_fresh_worker_and_empty_directory(env):
    episode = Episode(env)
    task = all_tasks()[0]
    await episode.reset(task, 0)
    await episode.step(Python(code="leftover = 1\nopen('note.txt', 'w').write('x')"))
    assert "note.txt" in env.files()
    await episode.reset(task, 0)
    assert env.files() == []
    outcome = await episode.step(Python(code="print(leftover)"))
    assert "NameError" in env.last_output and outcome.reward == 0.0


async def test_screenshot_shows_code_output_and_shown_image(env):
    episode = Episode(env)
    obs, _ = await episode.reset(all_tasks()[0], 0)
    assert obs.screenshot.shape == (768, 1024, 3) and obs.screenshot.dtype == np.uint8
    before = obs.screenshot
    outcome = await episode.step(Python(code="import numpy as np\nshow(np.zeros((300, 400, 3), np.uint8))"))
    shot = outcome.observation.screenshot
    assert shot.shape == before.shape and not np.array_equal(shot, before)
    assert (shot[40:300, 20:400] == 0).all()  # the black image the code showed, drawn 1:1 at the left
    outcome = await episode.step(Wait(seconds=0))
    assert outcome.info.get("error") is None
    assert env.describe()["sandbox"]["level"] in ("namespace", "rlimits")


async def test_host_stop_leaves_no_processes_or_folders():
    h = PytoolHost(cpu_seconds=2, wall_seconds=6)
    await h.start()
    envs = [await h.create({}) for _ in range(2)]
    for e in envs:
        await run(e, "import subprocess\nprint('ok')")
    pids = [e.sandbox.worker_pid for e in envs] + [e.sandbox._proc.pid for e in envs]
    base = h.base_dir
    uids = [e.sandbox.uid for e in envs]
    assert base is not None and base.exists()
    await h.stop()
    assert not Path(base).exists()
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    if NAMESPACE:
        left = [p.pid for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real in uids]
        assert left == []
    assert h.sessions == []


@needs_namespace
async def test_code_cannot_kill_its_own_worker(env):
    out = await run(env, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\nprint('still here', os.getpid())")
    assert "still here 1" in out
    await assert_still_works(env)


async def test_code_ignoring_the_limits_is_killed_and_restarted(host):
    env = await host.create({"cpu_seconds": 1, "wall_seconds": 2, "grace_seconds": 1})
    try:
        await run(env, "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                       "signal.signal(signal.SIGXCPU, signal.SIG_IGN)")
        out = await run(env, "import time\nwhile True:\n    time.sleep(1)")
        assert "wall-clock time limit (2 s) exceeded" in out and env.last_result.restarted
        await assert_still_works(env)
    finally:
        await env.close()


async def test_rlimits_only_fallback(tmp_path):
    """Without root or namespaces the sandbox still applies its limits and a clean environment."""
    from mintgym.environments.pytool.sandbox import Isolation, Sandbox, SandboxLimits

    os.environ["MINTGYM_TOKEN"] = SECRET
    work, task = tmp_path / "work", tmp_path / "task"
    work.mkdir()
    task.mkdir()
    box = Sandbox(work, task, uid=None, limits=SandboxLimits(cpu_seconds=1, wall_seconds=40, memory_mb=512),
                  isolation=Isolation("rlimits", "none", "none", "shared", "forced by the test"))
    try:
        await box.start()
        assert box.describe()["level"] == "rlimits" and box.describe()["network"] == "none"
        assert box.task_image_path == f"{task}/image.png"
        result = await box.execute("import os\nprint(sorted(os.environ))\nprint(os.getcwd())")
        assert SECRET not in result.output and "MINTGYM_TOKEN" not in result.output
        assert str(work) in result.output
        result = await box.execute("while True:\n    pass")
        assert "CPU time limit (1 s) exceeded" in result.text()
        result = await box.execute("x = bytearray(4 * 1024**3)")
        assert "MemoryError" in result.text()
        result = await box.execute("import subprocess\nsubprocess.Popen(['sleep', '300'])")
        assert result.ok
        # killed strays may linger a moment as zombies until the worker reaps them: they are not running.
        # SIGKILL lands asynchronously, so allow the kernel a moment (CI once saw one still 'sleeping').
        assert _running_children(box.worker_pid, settle_seconds=5.0) == []
        assert (await box.execute("print(1 + 1)")).output.strip() == "2"
    finally:
        await box.stop()
        os.environ.pop("MINTGYM_TOKEN", None)
    assert not box.alive()


@needs_namespace
async def test_task_image_path_matches_the_action_set_description(env):
    from mintgym.action_spaces import PYTOOL

    assert env.task_image_path == "/task/image.png" and env.task_image_path in PYTOOL.description
    out = await run(env, "open('/task/image.png', 'wb')")
    assert "outside the sandbox" in out


async def test_host_start_sweeps_folders_of_dead_hosts():
    import tempfile

    stale = Path(tempfile.gettempdir()) / "mintgym-pytool-4194305-stale"  # above any pid_max: never alive
    (stale / "session-1" / "work").mkdir(parents=True, exist_ok=True)
    h = PytoolHost()
    await h.start()
    try:
        assert not stale.exists()
        assert h.base_dir is not None and h.base_dir.name.startswith(f"mintgym-pytool-{os.getpid()}-")
    finally:
        await h.stop()


def _running_children(pid: int, settle_seconds: float) -> list:
    """Descendants of ``pid`` that are not zombies, once they stop changing or ``settle_seconds`` pass."""
    deadline = time.monotonic() + settle_seconds
    while True:
        running = []
        for child in psutil.Process(pid).children(recursive=True):
            try:
                if child.status() != psutil.STATUS_ZOMBIE:
                    running.append(child)
            except psutil.NoSuchProcess:
                pass
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.05)
