"""Red team: the pytool sandbox, attacked through a real env server (LocalProvider, HTTP on 127.0.0.1).

Every attack is made as an agent would make it -- ``python(code=...)`` steps -- and asserts containment:
the attack fails (or is cut off), the reward stays 0, a bystander session is untouched, the server keeps
serving. Needs root and bubblewrap (the namespace sandbox) and control groups; skipped otherwise.
"""

from __future__ import annotations

import os
import time

import httpx
import psutil
import pytest

import mintgym
from mintgym.runtime.make import provider

SECRET = "pytool-redteam-token-5b1e0f"
TASK = "pytool/count-shapes-0"
LIMITS = {"cpu_seconds": 2, "wall_seconds": 20, "memory_mb": 384, "processes": 32, "output_chars": 4000}


def _namespace_sandbox() -> bool:
    from mintgym.environments.pytool.sandbox import probe_isolation

    return probe_isolation().level == "namespace"


pytestmark = pytest.mark.skipif(not _namespace_sandbox(), reason="needs root and bubblewrap namespaces")


def _isolation():
    from mintgym.environments.pytool.sandbox import probe_isolation

    return probe_isolation()


needs_cgroup = pytest.mark.skipif(_namespace_sandbox() and getattr(_isolation(), "resources", "cgroup") != "cgroup",
                                  reason="needs control groups (see the server's spec: host.sandbox.cgroup_reason)")
needs_quota = pytest.mark.skipif(_namespace_sandbox() and getattr(_isolation(), "disk", "tmpfs") != "tmpfs",
                                 reason="needs a tmpfs mount for the working directory")


@pytest.fixture(scope="module")
def server():
    prov = provider("local")
    handle = prov.start("pytool", token=SECRET, options={"host_options": LIMITS})
    prov.wait_ready(handle, 120)
    yield handle
    prov.stop(handle)


@pytest.fixture
def bystander(server):
    """Another session that must stay untouched by every attack."""
    env = _make(server)
    env.reset(seed=3)
    env.step('python(code="canary = 4242")')
    yield env
    env.close()


def _make(server, **env_options):
    return mintgym.make(TASK, base_url=server.base_url, token=server.token, encoding="raw",
                        side_channels=("text",), env_options=env_options or None)


def _run(env, code: str):
    obs, reward, _, _, info = env.step({"type": "python", "code": code})
    return obs["text"] or "", reward, info


def _contained(server, bystander) -> None:
    """The bystander keeps its state and the server keeps serving."""
    text, _, info = _run(bystander, "print(canary)")
    assert "4242" in text and "error" not in info, (text, info)
    health = httpx.get(f"{server.base_url}/v1/health", headers={"Authorization": f"Bearer {server.token}"}, timeout=10)
    assert health.status_code == 200


def _uid_of(server, env) -> int:
    listed = httpx.get(f"{server.base_url}/v1/sessions", headers={"Authorization": f"Bearer {server.token}"},
                       timeout=10).json()["sessions"]
    return int(next(s for s in listed if s["session_id"] == env.session_id)["env"]["sandbox"]["sandbox_uid"])


def _cpu_of_uid(uid: int) -> float:
    total = 0.0
    for proc in psutil.process_iter(["uids"]):
        try:
            if proc.info["uids"] and proc.info["uids"].real == uid:
                times = proc.cpu_times()
                total += times.user + times.system
        except psutil.Error:
            pass
    return total


def _finish(env) -> float:
    """End the episode with a wrong answer; the reward must be 0."""
    _, reward, terminated, _, _ = env.step('done(answer="-1")')
    assert terminated
    return reward


@pytest.fixture
def attacker(server):
    env = _make(server)
    env.reset(seed=7)
    yield env
    env.close()


# ---- measured attacks of issue 17 ----------------------------------------------------------------------

def test_no_new_user_namespaces(attacker, server, bystander):
    code = ("import ctypes, subprocess\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "print('unshare', libc.unshare(0x10000000), ctypes.get_errno())\n"
            "r = subprocess.run(['unshare', '-U', '-r', 'id', '-u'], capture_output=True, text=True)\n"
            "print('cli', r.returncode, r.stdout.strip())")
    text, _, _ = _run(attacker, code)
    assert "unshare -1 1" in text, text  # EPERM
    assert "cli 0" not in text, text
    assert _finish(attacker) == 0.0
    _contained(server, bystander)


@needs_cgroup
def test_memfd_pages_count_against_the_memory_limit(attacker, server, bystander):
    # many memfds of 32 MiB each: under the per-file limit, outside RLIMIT_AS (nothing is mapped)
    code = ("import os\nfds = []\nchunk = b'x' * (16 * 2**20)\nwritten = 0\n"
            "try:\n    while written < 1024 * 2**20:\n        fd = os.memfd_create('hog')\n        fds.append(fd)\n"
            "        for _ in range(2):\n            os.write(fd, chunk)\n            written += len(chunk)\n"
            "        print('MiB', written // 2**20, flush=True)\n"
            "except OSError as e:\n    print('stopped', e)\n")
    text, _, info = _run(attacker, code)
    reached = max([int(line.split()[1]) for line in text.splitlines() if line.startswith("MiB ")] or [0])
    assert reached < LIMITS["memory_mb"], f"memfd reached {reached} MiB under a {LIMITS['memory_mb']} MiB limit"
    assert "MiB 1024" not in text
    text, _, _ = _run(attacker, "print(6 * 7)")
    assert "42" in text
    assert _finish(attacker) == 0.0
    _contained(server, bystander)


@needs_quota
def test_working_directory_has_a_disk_quota(server, bystander):
    env = _make(server, disk_mb=32)
    try:
        env.reset(seed=1)
        code = ("import os\nblock = b'0' * (8 * 2**20)\nn = 0\ntry:\n    for i in range(12):\n"
                "        with open(f'f{i}.bin', 'wb') as f:\n            f.write(block)\n        n += 1\n"
                "except OSError as e:\n    print('stopped', e.errno)\n"
                "print('total MiB', sum(os.path.getsize(p) for p in os.listdir('.')) // 2**20)")
        text, _, _ = _run(env, code)
        assert "stopped 28" in text, text  # ENOSPC
        total = int(text.split("total MiB")[1].split()[0])
        assert total <= 32
        assert _finish(env) == 0.0
    finally:
        env.close()
    _contained(server, bystander)


FORGE = ("import os, signal, resource, struct, json\n"
         "signal.signal(signal.SIGXCPU, signal.SIG_IGN)\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
         "signal.setitimer(signal.ITIMER_REAL, 0)\n"
         "resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
         "for fd in range(3, 12):\n"
         "    for seq in range(0, 64):\n"
         "        body = json.dumps({'ok': True, 'output': 'FORGED', 'error': None, 'restart': False,\n"
         "                           'seq': seq}).encode()\n"
         "        try:\n            os.write(fd, struct.pack('>I', len(body)) + body)\n"
         "        except OSError:\n            pass\n"
         "while True:\n    pass\n")


@needs_cgroup
def test_forged_reply_and_disabled_timers_burn_nothing_after_the_step(attacker, server, bystander):
    uid = _uid_of(server, attacker)
    started = time.monotonic()
    _run(attacker, FORGE)
    assert time.monotonic() - started < 15, "the server did not stop a cell that switched off its timers"
    reward = _finish(attacker)
    before = _cpu_of_uid(uid)
    time.sleep(2.0)
    burned = _cpu_of_uid(uid) - before
    assert burned < 0.3, f"the sandbox burned {burned:.2f} CPU-seconds after the episode ended"
    assert reward == 0.0
    _contained(server, bystander)


@needs_cgroup
def test_cpu_limit_is_kept_by_the_server(attacker, server, bystander):
    code = ("import signal, resource, threading\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
            "signal.setitimer(signal.ITIMER_REAL, 0)\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
            "while True:\n    pass\n")
    started = time.monotonic()
    text, _, _ = _run(attacker, code)
    elapsed = time.monotonic() - started
    assert "CPU time limit" in text, text
    assert elapsed < LIMITS["wall_seconds"], f"a CPU hog ran {elapsed:.1f}s (the CPU limit is {LIMITS['cpu_seconds']}s)"
    assert _finish(attacker) == 0.0
    _contained(server, bystander)


def test_exit_137_is_the_agents_failure_not_an_error(attacker, server, bystander):
    text, reward, info = _run(attacker, "import os\nos._exit(137)")
    assert reward == 0.0 and "ended during the code" in text and "restarted" in text, (text, info)
    text, _, _ = _run(attacker, "print('alive again')")
    assert "alive again" in text
    assert _finish(attacker) == 0.0
    _contained(server, bystander)


@needs_cgroup
def test_background_processes_die_with_the_step(attacker, server, bystander):
    uid = _uid_of(server, attacker)
    code = ("import os\nfor _ in range(3):\n    if os.fork() == 0:\n        os.setsid()\n"
            "        while True:\n            pass\nprint('forked')")
    text, _, _ = _run(attacker, code)
    assert "forked" in text
    time.sleep(0.5)
    before = _cpu_of_uid(uid)
    time.sleep(1.5)
    assert _cpu_of_uid(uid) - before < 0.3
    assert _finish(attacker) == 0.0
    _contained(server, bystander)


# ---- more attacks --------------------------------------------------------------------------------------

def test_cannot_see_other_processes(attacker, server, bystander):
    text, _, _ = _run(attacker, "import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")
    assert text.strip() == "[1]", text
    _contained(server, bystander)


def test_ptrace_and_process_memory_are_refused(attacker, server, bystander):
    code = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "print('ptrace', libc.ptrace(0, 0, 0, 0), ctypes.get_errno())\n"
            "pid = os.fork()\nif pid == 0:\n    import time; time.sleep(5); os._exit(0)\n"
            "print('attach', libc.ptrace(16, pid, 0, 0), ctypes.get_errno())\nos.kill(pid, 9)")
    text, _, _ = _run(attacker, code)
    assert "ptrace -1 1" in text and "attach -1 1" in text, text
    _contained(server, bystander)


def test_signals_cannot_reach_the_server(attacker, server, bystander):
    text, _, _ = _run(attacker, "import os, signal\nfor pid in range(2, 40000, 97):\n"
                                "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\n"
                                "try:\n    os.kill(-1, signal.SIGTERM)\nexcept OSError:\n    pass\nprint('sent')")
    assert "sent" in text
    _contained(server, bystander)


def test_server_environment_and_token_stay_hidden(attacker, server, bystander):
    code = ("import os, glob\nseen = [repr(dict(os.environ))]\n"
            "for path in ['/proc/1/environ', '/proc/self/environ'] + glob.glob('/proc/*/environ') + "
            "glob.glob('/run/mintgym*/*') + glob.glob('/tmp/*') + glob.glob('/etc/*'):\n"
            "    try:\n        seen.append(open(path, 'rb').read(100000).decode('latin-1'))\n"
            "    except OSError as e:\n        seen.append(str(e))\n"
            f"print({SECRET!r} in ''.join(seen), 'MINTGYM_TOKEN' in ''.join(seen))")
    text, _, _ = _run(attacker, code)
    assert "False False" in text, text
    assert SECRET not in text
    _contained(server, bystander)


def test_no_inherited_file_descriptors(attacker, server, bystander):
    code = ("import os, socket\nfds = {}\nfor n in os.listdir('/proc/self/fd'):\n    try:\n"
            "        fds[int(n)] = os.readlink(f'/proc/self/fd/{n}')\n    except OSError:\n        continue\n"
            "    if fds[int(n)].startswith('socket:'):\n        s = socket.socket(fileno=os.dup(int(n)))\n"
            "        fds[int(n)] = f'socket family {int(s.family)} listening {s.getsockopt(socket.SOL_SOCKET, "
            "socket.SO_ACCEPTCONN)}'\n        s.close()\nprint(fds)")
    text, _, _ = _run(attacker, code)
    fds = eval(text.strip().splitlines()[-1])
    sockets = [t for t in fds.values() if t.startswith("socket")]
    # only the two protocol channels (unix socket pairs), nothing listening, nothing on the network
    assert all(t == "socket family 1 listening 0" for t in sockets) and len(sockets) <= 2, fds
    assert len(fds) <= 6, fds  # 0-2, the two protocol channels, the output memfd
    _contained(server, bystander)


def test_fork_bomb_is_contained(attacker, server, bystander):
    text, _, _ = _run(attacker, "import os\nwhile True:\n    try:\n        os.fork()\n"
                                "    except OSError:\n        break\n"
                                "print('bomb done')")
    assert "bomb done" in text or "fork failed" in text or "limit" in text, text
    _contained(server, bystander)


def test_huge_output_is_truncated(attacker, server, bystander):
    started = time.monotonic()
    text, _, _ = _run(attacker, "import sys\nfor _ in range(200):\n    sys.stdout.write('z' * 1_000_000)")
    assert len(text) < 3 * LIMITS["output_chars"] and "truncated" in text
    assert time.monotonic() - started < 30
    _contained(server, bystander)


def test_huge_error_message_is_bounded(attacker, server, bystander):
    text, _, _ = _run(attacker, "raise ValueError('e' * 5_000_000)")
    assert len(text) < 3 * LIMITS["output_chars"] + 2000
    _contained(server, bystander)


def test_huge_and_bomb_images_are_not_shown(attacker, server, bystander):
    # 144 megapixels in a PNG of a few dozen KB (1 bit per pixel, all zero): decoding it as RGB takes 430 MB
    code = ("import os\nfrom PIL import Image\nImage.new('1', (12000, 12000)).save('out.png')\n"
            "print('bomb', os.path.getsize('out.png'))")
    started = time.monotonic()
    text, _, info = _run(attacker, code)
    assert "bomb" in text and "error" not in info, text
    obs, _, _, _, info = attacker.step({"type": "python", "code": "print(1)"})
    assert obs["screenshot"].shape == (768, 1024, 3) and time.monotonic() - started < 20
    _contained(server, bystander)


def test_symlinked_out_png_is_not_followed(attacker, server, bystander):
    text, _, info = _run(attacker, "import os\nos.symlink('/etc/shadow', 'out.png')\nprint('linked')")
    assert "linked" in text
    obs, _, _, _, _ = attacker.step({"type": "python", "code": "print(2)"})
    assert "root:" not in (obs["text"] or "")
    _contained(server, bystander)


def test_mount_bpf_keyctl_io_uring_refused(attacker, server, bystander):
    code = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "print('mount', libc.mount(b'none', b'/sandbox', b'tmpfs', 0, None), ctypes.get_errno())\n"
            "print('bpf', libc.syscall(321, 0, 0, 0), ctypes.get_errno())\n"
            "print('keyctl', libc.syscall(250, 0, 0, 0, 0, 0), ctypes.get_errno())\n"
            "print('uring', libc.syscall(425, 8, ctypes.create_string_buffer(120)), ctypes.get_errno())\n"
            "print('setns', libc.setns(0, 0), ctypes.get_errno())")
    text, _, _ = _run(attacker, code)
    for name in ("mount", "bpf", "keyctl", "uring", "setns"):
        assert f"{name} -1 1" in text, text
    _contained(server, bystander)


def test_network_stays_unreachable(attacker, server, bystander):
    port = int(server.base_url.rsplit(":", 1)[1])
    code = ("import ctypes, socket, struct\nlibc = ctypes.CDLL(None, use_errno=True)\nfd = libc.socket(2, 1, 0)\n"
            f"addr = struct.pack('=HH4s8x', 2, socket.htons({port}), bytes([127, 0, 0, 1]))\n"
            "print('rc', libc.connect(fd, addr, len(addr)))")
    text, _, _ = _run(attacker, code)
    assert "rc -1" in text, text
    _contained(server, bystander)


def test_cannot_write_the_task_or_outside(attacker, server, bystander):
    code = ("import os\nfor p in ['/task/image.png', '/usr/x', '/etc/x', '/opt/mintgym/worker.py', '/proc/1/mem']:\n"
            "    try:\n        open(p, 'ab').write(b'x')\n        print('WROTE', p)\n    except OSError as e:\n"
            "        print('refused', p)")
    text, _, _ = _run(attacker, code)
    assert "WROTE" not in text, text
    _contained(server, bystander)


def test_answer_claims_alone_do_not_score(attacker, server, bystander):
    _run(attacker, "open('answer.txt', 'w').write('1.0')\nprint('reward = 1.0')")
    _, reward, terminated, _, _ = attacker.step('done(answer="1.0", success=true)')
    assert terminated and reward == 0.0
    _contained(server, bystander)


@pytest.mark.parametrize("options", [{"width": -5}, {"width": 0}, {"processes": 1_000_000},
                                     {"memory_mb": 10_000_000}, {"output_chars": 10**12}, {"cpu_seconds": "1"},
                                     {"disk_mb": -1}, {"height": True}])
def test_out_of_range_options_are_refused_with_the_range(server, options):
    resp = httpx.post(f"{server.base_url}/v1/sessions", headers={"Authorization": f"Bearer {server.token}"},
                      json={"env_options": options}, timeout=60)
    assert resp.status_code == 422, (resp.status_code, resp.text)
    name = next(iter(options))
    message = resp.json()["error"]["message"]
    assert name in message and ("in [" in message or "in (" in message), message
    assert httpx.get(f"{server.base_url}/v1/health", timeout=10).status_code == 200


def test_killed_sandbox_between_steps_is_an_error_not_the_agents(server):
    """The converse: a fault outside the agent's reach still fails the session (SessionFailed)."""
    from mintgym.errors import SessionFailed

    env = _make(server)
    try:
        env.reset(seed=2)
        _run(env, "x = 1")
        uid = _uid_of(server, env)
        for proc in psutil.process_iter(["uids"]):
            if proc.info["uids"] and proc.info["uids"].real == uid:
                os.kill(proc.pid, 9)
        time.sleep(0.3)
        with pytest.raises(SessionFailed):
            env.step({"type": "python", "code": "print(x)"})
    finally:
        env.close()



# ---- issue 34: agent-made faults are the agent's failures; no races ----------------------------------

EPS = "%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 32 32\n0 0 32 32 rectfill\nshowpage\n"
#: A DDS header with a pixel format PIL does not implement (its decoder raises NotImplementedError).
DDS = ("import struct\nhead = struct.pack('<7I44s', 124, 0x1007, 4, 4, 0, 0, 0, bytes(44))\n"
       "fmt = struct.pack('<8I', 32, 4, int.from_bytes(b'ZZZZ', 'little'), 0, 0, 0, 0, 0)\n"
       "open('out.png', 'wb').write(b'DDS ' + head + fmt + struct.pack('<5I', 0x1000, 0, 0, 0, 0) + bytes(64))")
NOT_SHOWABLE = {
    "directory": ("import os\nos.mkdir('out.png')", "a directory, not a regular file"),
    "fifo": ("import os\nos.mkfifo('out.png')", "a FIFO, not a regular file"),
    "eps": (f"open('out.png', 'w').write({EPS!r})", "not a PNG image"),
    "dds": (DDS, "not a PNG image"),
    "truncated-png": ("import io\nfrom PIL import Image\nbuf = io.BytesIO()\n"
                      "Image.effect_noise((64, 64), 50).save(buf, 'PNG')\n"
                      "open('out.png', 'wb').write(buf.getvalue()[:300])", "not a readable PNG"),
}


@pytest.mark.parametrize("kind", sorted(NOT_SHOWABLE))
def test_an_out_png_that_cannot_be_shown_is_the_cells_failure(attacker, server, bystander, kind):
    """Only the PNG decoder reads what the cell left (no Ghostscript for EPS, no DDS decoder), and what
    it cannot show is an error the agent reads, never a 500."""
    code, why = NOT_SHOWABLE[kind]
    text, reward, _ = _run(attacker, code + "\nprint('written')")
    assert "written" in text and f"out.png was not shown: it is {why}" in text, text
    assert reward == 0.0
    text, _, _ = _run(attacker, "print(6 * 7)")
    assert "42" in text and "out.png" not in text  # told once, when the cell left it
    assert _finish(attacker) == 0.0
    _contained(server, bystander)


NESTED_FRAME = ("import gc, os, struct\n"
                "worker = next(o for o in gc.get_objects() if type(o).__name__ == 'Worker')\n"
                "body = b'[' * 400_000\ndata = struct.pack('>I', len(body)) + body\n"
                "while data:\n    data = data[os.write(worker.proto_out, data):]\n")


def test_a_deeply_nested_frame_from_the_sandbox_is_the_cells_failure(attacker, server, bystander):
    text, reward, _ = _run(attacker, NESTED_FRAME)
    assert "unreadable" in text and "nested too deeply" in text and "restarted" in text, text
    assert reward == 0.0
    text, _, _ = _run(attacker, "print('alive again')")
    assert "alive again" in text
    assert _finish(attacker) == 0.0
    _contained(server, bystander)


def _sandbox_processes(server) -> set[int]:
    """The server's sandbox processes (those of a sandbox uid)."""
    from mintgym.environments.pytool.host import UID_BASE, UID_COUNT

    found = set()
    for proc in psutil.Process(int(server.ident)).children(recursive=True):
        try:
            if UID_BASE <= proc.uids().real < UID_BASE + UID_COUNT and proc.status() != psutil.STATUS_ZOMBIE:
                found.add(proc.pid)
        except psutil.Error:
            pass
    return found


def _sandbox_cgroups(server) -> set[str]:
    from mintgym.environments.isolation import cgroups

    return {p.name for p in cgroups.probe()[1]["core"].glob(f"mintgym-pytool-{server.ident}-*")}


def _eventually(check, what: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@needs_cgroup
def test_deleting_a_session_mid_step_answers_the_step_and_reclaims_its_sandbox(server, bystander):
    import threading

    from mintgym.errors import SessionNotFound

    before = (_sandbox_processes(server), _sandbox_cgroups(server))
    for _ in range(3):
        env = _make(server)
        env.reset(seed=5)
        uid = _uid_of(server, env)
        answered: dict = {}

        def step(env=env, answered=answered):
            try:
                answered["result"] = env.step({"type": "python",
                                               "code": "import subprocess\nsubprocess.run(['sleep', '60'])"})
            except Exception as err:  # noqa: BLE001 -- what the step answered is the point of the test
                answered["error"] = err

        stepping = threading.Thread(target=step)
        stepping.start()
        _eventually(lambda uid=uid: any(p.info["name"] == "sleep" and p.info["uids"].real == uid
                                        for p in psutil.process_iter(["name", "uids"])), "the cell never ran")
        deleted = httpx.delete(f"{server.base_url}/v1/sessions/{env.session_id}",
                               headers={"Authorization": f"Bearer {server.token}"}, timeout=30)
        assert deleted.status_code == 200, deleted.text
        stepping.join(30)
        error = answered.get("error")
        assert isinstance(error, SessionNotFound) and "409 (session_closed)" in str(error), answered
        env.session_id = None  # deleted already: closing the client only tidies it
        env.close()
    # nothing of the deleted sessions outlives them: no worker, no control group (the bystander's stay)
    _eventually(lambda: (_sandbox_processes(server), _sandbox_cgroups(server)) == before,
                f"sandboxes left behind: {_sandbox_processes(server) - before[0]}, "
                f"{_sandbox_cgroups(server) - before[1]}")
    _contained(server, bystander)


@needs_cgroup
def test_reset_ends_every_process_the_episode_started(server, bystander):
    """A cell leaves a thread and a detached grandchild writing a file in a loop; after reset nothing of
    them runs, and the next episode neither sees their work nor scores it."""
    env = _make(server)
    try:
        env.reset(seed=1)
        uid = _uid_of(server, env)
        code = ("import os, threading, time\n"
                "def loop():\n    n = 0\n    while True:\n        n += 1\n"
                "        with open('bg.txt', 'w') as f:\n            f.write(str(n))\n        time.sleep(0.01)\n"
                "threading.Thread(target=loop, daemon=True).start()\n"
                "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        loop()\n    os._exit(0)\n"
                "time.sleep(0.3)\nprint('looping', os.path.exists('bg.txt'))")
        text, _, _ = _run(env, code)
        assert "looping True" in text, text
        env.reset(seed=1)
        running = [p for p in psutil.process_iter(["uids", "status"])
                   if p.info["uids"] and p.info["uids"].real == uid and p.info["status"] != psutil.STATUS_ZOMBIE]
        assert len(running) == 1, [(p.pid, p.name()) for p in running]  # the new episode's worker alone
        text, _, _ = _run(env, "import os, time\ntime.sleep(0.5)\nprint(sorted(os.listdir('.')))")
        assert text.strip() == "[]", text
        assert env.evaluate() == 0.0
        assert _finish(env) == 0.0
    finally:
        env.close()
    _contained(server, bystander)
