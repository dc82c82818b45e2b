"""Red team, desktop episodes: nothing survives a reset, nothing is shared between sessions, nothing is unbounded.

Each test is an attack an RL policy would find first, tried as the agent would: through the front door
(``mintgym.make`` on the default local server, shared actions only) where the attack is typed into the
session's terminal, or with ``env.run``, which starts a command exactly as the session's own processes are
started (the session user, its namespaces, its control group). Every assertion is the property (what the
next episode, another session or the host sees), not the mechanism.
"""

import asyncio
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mintgym
from mintgym.action_spaces import Wait
from mintgym.environments.desktop.host import DesktopHost
from mintgym.environments.isolation import cgroups
from tests.security.conftest import DESKTOP_MARKS, NOTES_TASK, SOLVE, sh, type_and_wait_for_the_end, type_in_terminal

pytestmark = DESKTOP_MARKS
needs_cgroups = pytest.mark.skipif(bool(cgroups.probe()[0]), reason=f"no control groups here: {cgroups.probe()[0]}")

#: Three loops that fork and exit on every turn, so each lives under a new PID (a scan of /proc misses
#: them), and write the task's answer file again and again, into whatever episode comes next.
FORGE = ("for i in 1 2 3; do python3 -c \"import os,time\nstart=time.time()\n"
         "p=os.path.expanduser('~/Desktop/notes.txt')\nwhile time.time()-start<40:\n"
         " if os.fork(): os._exit(0)\n"
         " t=p+str(os.getpid()); open(t,'w').write('hello desktop\\\\n'); os.replace(t,p)\" & done; exit")


# -- through the front door ----------------------------------------------------------------------------------
def test_fork_and_exit_loops_typed_into_the_terminal_do_not_survive_reset_to_forge_the_next_reward():
    env = mintgym.make(NOTES_TASK)
    try:
        env.reset(seed=0)
        type_in_terminal(env, FORGE, settle=2.0)
        assert env.evaluate() == 1.0  # the loops run and write the answer in this episode
        env.reset(seed=1)
        env.step(Wait(seconds=3.0))
        assert env.evaluate() == 0.0
    finally:
        env.close()


def test_a_fork_bomb_ends_its_episode_as_the_agents_failure_and_the_server_keeps_serving():
    bombed = mintgym.make(NOTES_TASK, env_options={"processes": 256, "cpus": 0.5})
    other = mintgym.make(NOTES_TASK, base_url=bombed.base_url)
    try:
        bombed.reset(seed=0)
        other.reset(seed=0)
        outcome = type_and_wait_for_the_end(bombed, "b(){ b|b& };b", seconds=10)
        assert outcome is not None, "the fork bomb did not end the episode"
        reward, info = outcome
        assert reward == 0.0 and info["agent_fault"] and "256 processes" in info["failure"]
        type_in_terminal(other, SOLVE)  # the other session serves meanwhile
        assert other.evaluate() == 1.0
        bombed.reset(seed=1)  # and the bombed session itself starts clean
        type_in_terminal(bombed, SOLVE)
        assert bombed.evaluate() == 1.0
    finally:
        other.close()
        bombed.close()


def test_a_process_flood_hits_the_default_process_limit():
    env = mintgym.make(NOTES_TASK)
    try:
        env.reset(seed=0)
        outcome = type_and_wait_for_the_end(env, "for i in $(seq 1500); do sleep 120 & done", seconds=15)
        assert outcome is not None and outcome[1]["agent_fault"] and "processes" in outcome[1]["failure"]
    finally:
        env.close()


# -- commands started the way the session starts its own -----------------------------------------------------
asyncio_module = pytest.mark.asyncio(loop_scope="module")

#: A SysV key and a file name of this run only (an earlier run on an unsealed server may have left its own).
SHM_KEY = random.randrange(0x10000, 0x7fffffff)
SHM_KEY_TEXT = f"0x{SHM_KEY:08x}"
PLANTED = f"mg-planted-{SHM_KEY}"
SHM_WRITER = ("import ctypes; libc = ctypes.CDLL(None); key = " + str(SHM_KEY) + "; "
              "shmid = libc.shmget(key, 64 * 2**20, 0o1666); "
              "libc.shmat.restype = ctypes.c_void_p; addr = libc.shmat(shmid, None, 0); "
              "ctypes.memmove(addr, b'secret-of-a', 11); print(shmid)")
SHM_READER = ("import ctypes; libc = ctypes.CDLL(None); shmid = libc.shmget(" + str(SHM_KEY) + ", 0, 0); "
              "libc.shmat.restype = ctypes.c_void_p; "
              "print('reached ' + ctypes.string_at(libc.shmat(shmid, None, 0), 11).decode() if shmid >= 0 "
              "else 'no segment')")


@asyncio_module
async def test_another_sessions_sysv_shared_memory_cannot_be_attached_or_listed(desktop_pair):
    a, b = desktop_pair
    assert int(await sh(a, f'python3 -c "{SHM_WRITER}"')) >= 0
    assert "reached secret-of-a" in await sh(a, f'python3 -c "{SHM_READER}"')  # a reaches its own
    assert await sh(b, f'python3 -c "{SHM_READER}"') == "no segment"
    assert SHM_KEY_TEXT not in await sh(b, "ipcs -m")
    host_segments = subprocess.run(["ipcs", "-m"], capture_output=True, text=True, check=True).stdout
    assert SHM_KEY_TEXT not in host_segments  # nor is it among the host's


@asyncio_module
async def test_dev_shm_var_tmp_and_tmp_are_private_to_the_session(desktop_pair):
    a, b = desktop_pair
    await sh(a, f"for d in /dev/shm /var/tmp /tmp; do echo a-secret > $d/{PLANTED}; done")
    out = await sh(b, f"cat /dev/shm/{PLANTED} /var/tmp/{PLANTED} /tmp/{PLANTED} 2>&1")
    assert "a-secret" not in out and out.count("No such file") == 3
    for host_dir in ("/dev/shm", "/var/tmp", "/tmp"):
        assert not Path(host_dir, PLANTED).exists()


@asyncio_module
async def test_shared_memory_and_scratch_files_do_not_outlive_the_session(desktop_host):
    env = await desktop_host.create({})
    await env.reset(None, 0)
    await sh(env, f'python3 -c "{SHM_WRITER}"; head -c 8M /dev/zero > /dev/shm/blob; echo x > /var/tmp/left')
    rw = env.sandbox.rw
    await env.close()
    assert SHM_KEY_TEXT not in subprocess.run(["ipcs", "-m"], capture_output=True, text=True, check=True).stdout
    assert not any(rw.rglob("blob")) and not any(rw.rglob("left"))
    assert str(rw) not in Path("/proc/self/mounts").read_text()  # its tmpfs (and the memory in it) is gone


@asyncio_module
async def test_reset_restores_the_x_servers_keymap_properties_and_access_control(desktop_pair):
    a, _ = desktop_pair
    before = await sh(a, "xmodmap -pke | grep -w 'keycode  38'; xhost")
    await sh(a, "xmodmap -e 'keycode 38 = z Z' && xprop -root -f _MG_PLANTED 8s -set _MG_PLANTED forged "
                "&& xhost +si:localuser:nobody && echo left > /tmp/planted && echo x > /dev/shm/planted")
    assert "_MG_PLANTED" in await sh(a, "xprop -root _MG_PLANTED")
    await a.reset(None, 0)
    after = await sh(a, "xmodmap -pke | grep -w 'keycode  38'; xhost")
    assert after == before and "nobody" not in after
    assert "forged" not in await sh(a, "xprop -root _MG_PLANTED")
    assert "No such file" in await sh(a, "cat /tmp/planted /dev/shm/planted 2>&1")


@asyncio_module
async def test_a_window_left_by_a_killed_client_does_not_cover_the_next_episode(desktop_pair):
    """A client whose close-down mode is RetainPermanent leaves its windows in the X server after it is gone:
    an override-redirect window painted red over the whole screen would be the next episode's screen."""
    a, _ = desktop_pair
    paint = ("python3 -c \"from Xlib import display, X; d = display.Display(); "
             "d.set_close_down_mode(X.RetainPermanent); "
             "s = d.screen(); w = s.root.create_window(0, 0, s.width_in_pixels, s.height_in_pixels, 0, s.root_depth, "
             "background_pixel=0xff0000, override_redirect=1); w.map(); "
             "w.set_selection_owner(d.intern_atom('CLIPBOARD'), X.CurrentTime); d.sync()\"")
    await sh(a, paint)
    await asyncio.sleep(0.3)
    assert tuple((await a.screenshot())[360, 640]) == (255, 0, 0)  # the window outlives its client
    await a.reset(None, 0)
    assert tuple((await a.screenshot())[360, 640]) != (255, 0, 0)
    owner = ("python3 -c \"from Xlib import display; d = display.Display(); "
             "print([d.get_selection_owner(d.intern_atom(s)) for s in ('CLIPBOARD', 'PRIMARY')])\"")
    assert await sh(a, owner) == "[0, 0]"


@pytest.fixture(scope="module")
def host_secrets():
    """Folders on the host that no session may read: a second checkout, a data folder, a home, /srv, /opt."""
    planted = [Path(p) for p in ("/srv/mg-osworld-copy", "/opt/mg-second-checkout", "/home/mg-someone/data",
                                 "/mnt/mg-data", "/var/mg-data")]
    for folder in planted:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "expected.json").write_text('{"expected": "the answer"}')
        os.chmod(folder, 0o755)
        os.chmod(folder / "expected.json", 0o644)
    yield planted
    for folder in planted:
        shutil.rmtree(folder if folder.parent != Path("/home") else folder.parent, ignore_errors=True)
    shutil.rmtree("/home/mg-someone", ignore_errors=True)


@asyncio_module
async def test_the_host_is_seen_through_an_allow_list_wherever_its_data_lies(desktop_pair, host_secrets):
    a, _ = desktop_pair
    project = Path(mintgym.__file__).resolve().parent.parent
    shared = project.parent / "shared"
    for folder in (*host_secrets, project, Path(sys.prefix).resolve(), shared):
        out = await sh(a, f"cat {folder}/expected.json {folder}/README.md {folder}/pyvenv.cfg 2>&1; "
                          f"ls -A {folder} 2>/dev/null | wc -l")
        assert "the answer" not in out and "MintGym" not in out and out.splitlines()[-1] == "0", (folder, out)
    top = set((await sh(a, "ls -A /")).split())
    assert top <= {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "var", "proc", "sys", "dev",
                   "run", "tmp", "home", "root", "mnt", "media", "srv", "opt"}, top
    assert await sh(a, "ls -A /srv /opt /mnt /run | grep -v ':$' | grep -c .") == "0"
    assert (await sh(a, "ls -A /home")).split() == ["user"]  # OSWorld's home, a link to the session's
    assert "Read-only file system" in await sh(a, "touch /usr/mg 2>&1; touch /etc/mg 2>&1; touch /var/lib/mg 2>&1")


@asyncio_module
@needs_cgroups
async def test_a_memory_hog_is_killed_within_the_sessions_limit_and_ends_its_episode(desktop_host):
    from mintgym.env.episode import AgentFault

    env = await desktop_host.create({"memory_mb": 512})
    try:
        await env.reset(None, 0)
        result = await env.run("python3 -c \"b = b'x' * (3 * 2**30); print(len(b))\"", shell=True, timeout=60)
        assert result.returncode != 0 and str(3 * 2**30) not in result.stdout
        assert env.sandbox.cgroup.memory_peak() <= 512 * 2**20
        with pytest.raises(AgentFault, match="memory limit of 512 MiB"):
            await env.execute(Wait(seconds=0.01))
        await env.reset(None, 0)  # the next episode runs normally
        await env.execute(Wait(seconds=0.01))
        assert "ok" in await sh(env, "echo ok")
    finally:
        await env.close()


@asyncio_module
async def test_everything_the_session_writes_counts_against_its_disk_quota(desktop_host):
    env = await desktop_host.create({"disk_mb": 64})
    try:
        await env.reset(None, 0)
        before = shutil.disk_usage("/tmp").used
        out = await sh(env, "for d in ~ /tmp /var/tmp /dev/shm; do dd if=/dev/zero of=$d/big bs=1M count=100 2>&1; "
                            "done; du -cm ~/big /tmp/big /var/tmp/big /dev/shm/big | tail -1")
        assert "No space left on device" in out
        assert int(out.splitlines()[-1].split()[0]) <= 64
        assert shutil.disk_usage("/tmp").used - before < 32 * 2**20  # nothing landed on the host's disk
    finally:
        await env.close()


@asyncio_module
@needs_cgroups
async def test_the_limits_and_caps_are_typed_options_reported_by_the_server():
    from fastapi.testclient import TestClient

    from mintgym.server.app import create_app

    app = create_app(DesktopHost(), option_caps={"memory_mb": 2048, "processes": 512})
    with TestClient(app, base_url="http://127.0.0.1") as client:
        spec = client.get("/v1/spec").json()
        assert spec["option_caps"] == {"memory_mb": 2048, "processes": 512}
        assert spec["env_options"]["memory_mb"]["default"] == 4096
        assert spec["env_options"]["memory_mb"]["cap"] == 2048
        refused = client.post("/v1/sessions", json={"env_options": {"memory_mb": 4096}})
        assert refused.status_code == 422 and "cap of 2048" in refused.json()["error"]["message"]
        bad = client.post("/v1/sessions", json={"env_options": {"cpus": 0}})
        assert bad.status_code == 422 and "cpus" in bad.json()["error"]["message"]
        made = client.post("/v1/sessions", json={"env_options": {"memory_mb": 1024, "processes": 128}})
        assert made.status_code == 201, made.text
        sid = made.json()["session_id"]
        described = client.get("/v1/sessions").json()
        limits = next(s for s in described["sessions"] if s["session_id"] == sid)["env"]["containment"]["limits"]
        assert limits["memory_mb"] == 1024 and limits["processes"] == 128 and limits["disk_mb"] == 1024
        client.delete(f"/v1/sessions/{sid}")


@asyncio_module
@needs_cgroups
async def test_an_x_server_flood_counts_against_the_session_not_the_host(desktop_host):
    """An X client can make the X server allocate for it (a huge pixmap); the X server is in the session's group."""
    env = await desktop_host.create({"memory_mb": 256})
    try:
        await env.reset(None, 0)
        hog = ("python3 -c \"from Xlib import display; d = display.Display(); r = d.screen().root; "
               "ps = [r.create_pixmap(8000, 8000, 24) for _ in range(12)]; "
               "[p.fill_rectangle(r.create_gc(foreground=1), 0, 0, 8000, 8000) for p in ps]; d.sync()\"")
        await env.run(hog, shell=True, timeout=60)
        assert env.sandbox.cgroup.memory_peak() <= 256 * 2**20
        from mintgym.env.episode import AgentFault

        with pytest.raises(AgentFault, match="memory limit of 256 MiB"):  # the session's memory, never the host's
            await env.execute(Wait(seconds=0.01))
    finally:
        await env.close()
