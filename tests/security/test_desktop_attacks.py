"""Red team, desktop: what an agent's shell in a desktop session can reach, tried as the agent would.

The first tests go through the front door (``mintgym.make``, a local env server) and act only through
the shared actions; the rest run commands with ``env.run`` on an in-process host, which starts them
exactly as the session's own processes are started (the session user, inside its namespaces): what
such a command reaches, a shell the agent typed into reaches too. Each asserts containment: the reward
stays 0, the other session is untouched, the server keeps serving.
"""

import asyncio
import os
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

import mintgym
from mintgym.action_spaces import Key, Type, Wait
from mintgym.environments.desktop.tasks import TerminalFileTask
from tests.security.conftest import DESKTOP_MARKS, NOTES_TASK, SOLVE, sh, type_in_terminal

pytestmark = DESKTOP_MARKS


class Listener:
    """A TCP listener on the host's loopback that counts who connects."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
                self.connections += 1
                conn.close()
            except OSError:
                continue

    def close(self):
        self._stop = True
        self._thread.join(2)
        self.sock.close()


def _port(env) -> int:
    return int(env.base_url.rsplit(":", 1)[1])


# -- through the front door ------------------------------------------------------------------------
def test_a_shell_in_the_session_cannot_reach_the_env_server_or_host_loopback():
    env = mintgym.make(NOTES_TASK)
    listener = Listener()
    try:
        env.reset(seed=0)
        own = f"http://127.0.0.1:{_port(env)}/v1/sessions/{env.session_id}"
        type_in_terminal(env, f"curl -s -m 3 -X DELETE {own}; curl -s -m 3 http://127.0.0.1:{listener.port}/; "
                              f"curl -s -m 3 http://localhost:{_port(env)}/v1/sessions; {SOLVE}")
        # The command ran (the control line wrote the file) and its curls reached nothing:
        # the session was not deleted and the host's loopback listener saw no connection.
        assert env.evaluate() == 1.0
        env.step(Wait(seconds=0.1))
        assert listener.connections == 0
    finally:
        listener.close()
        env.close()


def test_a_link_to_another_sessions_file_scores_zero():
    victim = mintgym.make(NOTES_TASK)
    attacker = mintgym.make(NOTES_TASK, base_url=victim.base_url)
    try:
        victim.reset(seed=0)
        attacker.reset(seed=0)
        type_in_terminal(victim, SOLVE)
        assert victim.evaluate() == 1.0
        planted = [p for p in Path("/tmp/mintgym-desktop").glob("mgdesk*/rw/home/Desktop/notes.txt")]
        assert planted, "the victim's file is where sessions live"
        links = "; ".join(f"ln -sf {p} ~/Desktop/notes.txt; ln -f {p} ~/Desktop/hard.txt" for p in planted)
        type_in_terminal(attacker, links + "; ln -sfn /tmp/mintgym-desktop ~/Desktop/others")
        assert attacker.evaluate() == 0.0
        assert victim.evaluate() == 1.0  # the other session is untouched
    finally:
        attacker.close()
        victim.close()


def test_text_longer_than_the_step_can_type_is_an_invalid_action_and_long_text_is_typed_in_chunks():
    """Issue 34: ``type`` of 70,000 characters is refused before a key is sent (an error the agent reads,
    the session goes on), not a 500 after the X call timed out; a text within the step's budget is typed,
    in chunks, however long (60,000 characters in a session whose X calls may take 60 s)."""
    env = mintgym.make(NOTES_TASK)
    patient = None
    try:
        env.reset(seed=0)
        _, reward, terminated, _, info = env.step(Type(text="a" * 70_000))
        assert "the text has 70000 characters; at most 10000 can be typed in one action" in info.get("error", ""), info
        assert reward == 0.0 and not terminated
        _, _, _, _, info = env.step(Type(text="still here"))
        assert "error" not in info, info
        patient = mintgym.make(NOTES_TASK, base_url=env.base_url, env_options={"x_timeout": 60})
        patient.reset(seed=0)
        _, _, _, _, info = patient.step(Type(text="b" * 60_000))
        assert "error" not in info, info
        _, _, _, _, info = patient.step(Wait(seconds=0.1))
        assert "error" not in info, info
    finally:
        if patient is not None:
            patient.close()
        env.close()


def _session_processes() -> dict[int, str]:
    found = {}
    for proc in psutil.process_iter(["name", "username", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        ours = (proc.info["username"] or "").startswith("mgdesk")
        if ours or "session_init.py" in cmd or proc.info["name"] == "Xvfb":
            found[proc.pid] = cmd or proc.info["name"]
    return found


def test_killing_the_env_server_leaves_no_display_window_manager_app_or_namespace():
    before = set(_session_processes())
    env = mintgym.make(NOTES_TASK)
    env.reset(seed=0)
    env.step(Key(keys=("ctrl", "alt", "t")))
    env.step(Wait(seconds=2.0))
    port = _port(env)
    server_pid = next(c.pid for c in psutil.net_connections("tcp") if c.status == "LISTEN" and c.laddr.port == port)
    started = set(_session_processes()) - before
    assert any("Xvfb" in _session_processes()[p] for p in started)
    assert any("xterm" in _session_processes()[p] for p in started)
    os.kill(server_pid, signal.SIGKILL)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and set(_session_processes()) & started:
        time.sleep(0.2)
    left = {p: c for p, c in _session_processes().items() if p in started}
    assert not left, f"orphans after SIGKILL of the server: {left}"
    try:
        env.close()
    except Exception:
        pass
    # The display numbers it held are usable again (stale lock and socket files are reclaimed).
    again = mintgym.make(NOTES_TASK)
    try:
        again.reset(seed=0)
        type_in_terminal(again, SOLVE)
        assert again.evaluate() == 1.0
    finally:
        again.close()


# -- commands started the way the session starts its own -------------------------------------------
PROJECT = Path(mintgym.__file__).resolve().parent.parent

pytestmark_async = pytest.mark.asyncio(loop_scope="module")


@pytestmark_async
async def test_only_the_sessions_own_processes_are_visible(desktop_pair):
    a, _ = desktop_pair
    out = await sh(a, "ps -eo user= | sort -u; ls /proc | grep -c '^[0-9]'")
    users = set(out.splitlines()[:-1])
    assert users <= {a.sandbox.name, "root"}, users
    assert int(out.splitlines()[-1]) < 20  # init, openbox, this shell: not the host's hundreds
    assert "pytest" not in await sh(a, "ps -eo args; cat /proc/*/cmdline 2>/dev/null | tr '\\0' ' '")


@pytestmark_async
async def test_project_code_python_environment_and_task_data_are_hidden(desktop_pair):
    """What the session can list and read, wherever the checkout lies (under /tmp, /work, a 0700 folder)."""
    a, _ = desktop_pair
    for path in (PROJECT, Path(sys.prefix), PROJECT.parent / "shared"):
        if path.is_dir():
            assert await sh(a, f"ls -A {path} 2>/dev/null | wc -l") == "0", path
    out = await sh(a, f"cat {PROJECT}/environments/desktop/tasks.py")
    assert "No such file" in out or "Permission denied" in out, out
    assert "class TerminalFileTask" not in out
    found = await a.run("grep -rls 'class TerminalFileTask' / --include=tasks.py --exclude-dir=proc --exclude-dir=sys",
                        shell=True, timeout=240)
    assert found.stdout == "", found.stdout  # no copy of the project's code anywhere the session can read


@pytestmark_async
async def test_the_docker_socket_is_masked(desktop_pair):
    a, _ = desktop_pair
    for sock in ("/run/docker.sock", "/var/run/docker.sock", "/run/mintgym-docker.sock"):
        if os.path.exists(sock):
            out = await sh(a, f"test -S {sock} && echo socket || echo masked")
            assert out == "masked", sock


@pytestmark_async
async def test_another_sessions_directory_and_tmp_are_out_of_sight(desktop_pair):
    a, b = desktop_pair
    b.write_bytes("~/secret.txt", b"b's secret")
    await sh(b, "echo from-b > /tmp/b-was-here")
    assert "No such file" in await sh(a, f"cat {b.home}/secret.txt")
    assert "No such file" in await sh(a, "cat /tmp/b-was-here")
    assert await sh(a, f"ls {b.sandbox.root.parent}") == a.sandbox.name


@pytestmark_async
async def test_another_display_cannot_be_reached(desktop_pair):
    a, b = desktop_pair
    out = await sh(a, f"xdpyinfo -display {b.display_name} >/dev/null 2>&1 && echo reached || echo refused")
    assert out == "refused"
    assert await sh(a, f"xdpyinfo -display {a.display_name} >/dev/null 2>&1 && echo ok") == "ok"


@pytestmark_async
async def test_the_host_loopback_is_unreachable_and_the_sessions_own_is_private(desktop_pair):
    a, b = desktop_pair
    listener = Listener()
    try:
        out = await sh(a, f"curl -s -m 2 http://127.0.0.1:{listener.port}/ ; echo rc=$?")
        assert "rc=7" in out or "rc=28" in out
        assert listener.connections == 0
        # a server the agent starts on its loopback is not reachable from another session
        await a.launch("python3 -m http.server 8765 --bind 127.0.0.1", shell=True)
        await asyncio.sleep(1.5)
        assert "rc=7" in await sh(b, "curl -s -m 2 http://127.0.0.1:8765/ ; echo rc=$?")
        assert "rc=0" in await sh(a, "curl -s -m 2 -o /dev/null http://127.0.0.1:8765/ ; echo rc=$?")
    finally:
        listener.close()


@pytestmark_async
async def test_the_namespace_init_and_the_server_cannot_be_signalled(desktop_pair):
    a, _ = desktop_pair
    out = await sh(a, "kill -9 1; echo rc=$?")
    assert "rc=1" in out
    assert await a.alive() and a.sandbox.namespace.alive()


@pytestmark_async
async def test_the_scorer_follows_no_link_and_reads_no_foreign_hard_link(desktop_pair):
    a, b = desktop_pair
    b.write_bytes("~/Desktop/notes.txt", b"hello desktop\n")
    task = TerminalFileTask(id="t", instruction="x")
    await sh(a, "ln -sf /etc/hostname ~/Desktop/notes.txt")
    assert await task.evaluate(a) == 0.0
    await sh(a, "rm -f ~/Desktop/notes.txt; mkdir -p ~/real && ln -sfn ~/real ~/Desktop2")
    foreign = a.sandbox.rw / "foreign.txt"  # another user's file on the session's own filesystem
    foreign.write_text("hello desktop\n")
    os.chown(foreign, b.sandbox.uid, b.sandbox.gid)
    os.link(foreign, a.home / "Desktop/notes.txt")  # as root: the session could not
    assert await task.evaluate(a) == 0.0
    os.unlink(a.home / "Desktop/notes.txt")
    foreign.unlink()
    # a link in a folder on the way
    await sh(a, "mv ~/Desktop ~/Desktop.orig && mkdir -p ~/fake && echo 'hello desktop' > ~/fake/notes.txt "
                "&& ln -s ~/fake ~/Desktop")
    assert await task.evaluate(a) == 0.0
    await sh(a, "rm ~/Desktop && mv ~/Desktop.orig ~/Desktop")


@pytestmark_async
async def test_a_huge_sparse_file_or_a_fifo_costs_the_scorer_nothing(desktop_pair):
    a, _ = desktop_pair
    task = TerminalFileTask(id="t", instruction="x")
    await sh(a, "truncate -s 2G ~/Desktop/notes.txt")
    started = time.perf_counter()
    assert await task.evaluate(a) == 0.0
    assert time.perf_counter() - started < 1.0
    await sh(a, "rm ~/Desktop/notes.txt; mkfifo ~/Desktop/notes.txt")
    started = time.perf_counter()
    assert await task.evaluate(a) == 0.0  # a FIFO would block a plain open()
    assert time.perf_counter() - started < 1.0
    await sh(a, "rm ~/Desktop/notes.txt")


@pytestmark_async
async def test_a_command_that_floods_its_output_is_capped(desktop_pair):
    a, _ = desktop_pair
    result = await a.run("head -c 50000000 /dev/zero", shell=True, timeout=30)
    assert len(result.stdout) <= 8 * 2**20


@pytestmark_async
async def test_session_processes_hold_no_capability_or_extra_group(desktop_pair):
    a, _ = desktop_pair
    out = await sh(a, "grep -E '^(CapEff|CapPrm|Groups|NoNewPrivs)' /proc/self/status")
    fields = dict(line.split(":\t") for line in out.splitlines())
    assert int(fields["CapEff"], 16) == 0 and int(fields["CapPrm"], 16) == 0
    assert fields["Groups"].strip() == ""


@pytestmark_async
async def test_the_session_cannot_write_outside_its_home_and_tmp(desktop_pair):
    a, _ = desktop_pair
    out = await sh(a, f"touch {a.sandbox.root}/bin/evil 2>&1; touch {a.sandbox.log_dir}/x 2>&1; "
                      f"ls {a.sandbox.log_dir} 2>&1; echo done")
    assert out.count("Permission denied") >= 3
    assert not (a.sandbox.root / "bin/evil").exists()


@pytestmark_async
async def test_raw_sockets_and_new_network_interfaces_are_refused(desktop_pair):
    a, _ = desktop_pair
    out = await sh(a, "ip link add dummy0 type dummy 2>&1; echo rc=$?; ip -br link | wc -l")
    assert "rc=2" in out or "Operation not permitted" in out
    assert out.strip().endswith("1")  # only lo



@pytestmark_async
async def test_text_the_keyboard_cannot_type_is_an_invalid_action_not_a_crash(desktop_pair):
    from mintgym.action_spaces import InvalidAction

    a, _ = desktop_pair
    with pytest.raises(InvalidAction, match="300 distinct characters"):
        await a.execute(Type(text="".join(chr(0x4E00 + i) for i in range(300))))
    assert await a.alive()
    started = time.perf_counter()
    await a.execute(Type(text="".join(chr(0x4F00 + i) for i in range(40))))  # within the budget: typed
    assert time.perf_counter() - started < a.x_timeout
    assert await a.alive()


@pytestmark_async
@pytest.mark.skipif(shutil.which("slirp4netns") is None, reason="slirp4netns is needed for egress")
async def test_egress_reaches_out_but_never_the_hosts_loopback(desktop_host):
    env = await desktop_host.create({"egress": True})
    listener = Listener()
    try:
        await env.reset(None, 0)
        out = await sh(env, "ip -br addr; ip route; cat /etc/resolv.conf")
        assert "tap0" in out and "10.0.2.100" in out and "default via 10.0.2.2" in out and "10.0.2.3" in out
        # slirp's gateway stands for the host: with --disable-host-loopback it does not lead to 127.0.0.1
        out = await sh(env, f"curl -s -m 3 http://10.0.2.2:{listener.port}/ ; echo rc=$?")
        assert "rc=0" not in out and listener.connections == 0
        assert "rc=7" in await sh(env, f"curl -s -m 2 http://127.0.0.1:{listener.port}/ ; echo rc=$?")
    finally:
        listener.close()
        await env.close()
    assert not [p for p in psutil.process_iter(["name"]) if p.info["name"] == "slirp4netns"
                and p.status() != psutil.STATUS_ZOMBIE]


@pytestmark_async
async def test_a_user_namespace_cannot_uncover_what_the_session_must_not_see(desktop_pair):
    """The session user may make user namespaces (Chromium's sandbox needs them); the covers the server
    mounted are locked in them, so root-in-a-namespace cannot lift them."""
    a, b = desktop_pair
    project = str(PROJECT)
    lift = ("import ctypes,os; libc=ctypes.CDLL(None,use_errno=True); "
            f"print([libc.umount2(p.encode(), 2) or 'lifted' for p in ('{project}', '/tmp')], "
            "os.strerror(ctypes.get_errno()))")
    out = await sh(a, f"unshare -Urm sh -c \"python3 -c \\\"{lift}\\\"; ls -A {project} | wc -l; "
                      f"ls {b.sandbox.root.parent}\" 2>&1; echo done")
    assert "lifted" not in out and ("Invalid argument" in out or "not permitted" in out), out
    lines = out.splitlines()
    assert "done" in lines[-1]
    assert "0" in lines or "No such file" in out
    assert b.sandbox.name not in out.replace(f"{b.sandbox.root.parent}", "")


#: More things a shell in the session tries; each command must print "contained" (the attack failed).
SHELL_ATTACKS = {
    "read init's environment": "cat /proc/1/environ >/dev/null 2>&1 && echo leaked || echo contained",
    "read the kernel log": "cat /dev/kmsg >/dev/null 2>&1 & sleep 0.3; kill %1 2>/dev/null; "
                           "dmesg >/dev/null 2>&1 && echo leaked || echo contained",
    "raw memory": "head -c1 /dev/mem >/dev/null 2>&1 && echo leaked || echo contained",
    "write to /etc": "touch /etc/mintgym-pwned 2>/dev/null && echo leaked || echo contained",
    "bind a privileged port": "python3 -c 'import socket; socket.socket().bind((\"127.0.0.1\", 80))' 2>/dev/null "
                              "&& echo leaked || echo contained",
    "become root with su": "su -c id root </dev/null >/dev/null 2>&1 && echo leaked || echo contained",
    "signal the X server": "pkill -9 Xvfb 2>/dev/null; pgrep Xvfb >/dev/null && echo leaked || echo contained",
    "see host mounts": "grep -q ' /work\\| /root ' /proc/self/mountinfo && ls /root >/dev/null 2>&1 "
                       "&& echo leaked || echo contained",
    "read the server's token file": "cat /proc/*/root/run/mintgym* 2>/dev/null | grep -q . && echo leaked "
                                    "|| echo contained",
    "another display's abstract socket": "python3 -c \"import socket,sys; s=socket.socket(socket.AF_UNIX); "
                                         "s.connect('\\0/tmp/.X11-unix/X{other}')\" 2>/dev/null && echo leaked "
                                         "|| echo contained",
    "host sockets under /run": "ls /run/*.sock /var/run/*.sock 2>/dev/null | while read s; do "
                               "python3 -c \"import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])\" "
                               "$s 2>/dev/null && echo leaked; done; echo contained",
    "mount a filesystem": "mount -t tmpfs none /tmp 2>/dev/null && echo leaked || echo contained",
}


@pytestmark_async
@pytest.mark.parametrize("attack", sorted(SHELL_ATTACKS))
async def test_shell_attacks_are_contained(desktop_pair, attack):
    a, b = desktop_pair
    out = await sh(a, SHELL_ATTACKS[attack].replace("{other}", str(b.xserver.number)))
    assert "leaked" not in out and out.strip().endswith("contained"), out
    assert await a.alive() and await b.alive()
