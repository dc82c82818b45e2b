"""A desktop episode's own network, IPC, mount and PID namespaces, and how processes enter them.

Why: the agent types into a real shell. Without this, that shell shares the host's loopback with the
env server (it could call ``/v1/sessions``), its SysV IPC, ``/dev/shm`` and ``/var/tmp`` with every other
session, sees the host's files, and its processes outlive a killed server. With it, everything the
session runs (the window manager, apps, a task's config commands) sees

* a network with only its own loopback (what the task itself serves there, e.g. a browser's DevTools
  port, is reached by the server through :meth:`SessionNamespace.connect`);
* an IPC namespace of its own (no other session's shared memory, semaphores or queues);
* a root built from an allow list (see ``session_init.py``): the system's folders read-only, its own
  directory, and ``/tmp``, ``/var/tmp`` and ``/dev/shm`` on its own size-capped tmpfs;
* its own PID namespace, whose init is :mod:`session_init`: when the server ends the episode or dies,
  init exits and the kernel kills every process left in it.

A namespace lives for one episode: reset stops it and starts a fresh one. Processes enter with
``nsenter`` and drop to the session user with ``setpriv`` (both util-linux), so starting one needs no
``preexec_fn`` and no user switch by the event loop (uvloop cannot do one). Needs root (or
CAP_SYS_ADMIN); without it :func:`available` says why and sessions fall back to the user-only sandbox.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import psutil

INIT_SCRIPT = Path(__file__).with_name("session_init.py")
TOOLS = ("unshare", "nsenter", "setpriv")
#: Folders never covered, whatever the project's location: the session needs the system to run apps.
SYSTEM_DIRS = {Path(p) for p in ("/", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/var", "/opt",
                                 "/home", "/root", "/tmp", "/run", "/dev", "/proc", "/sys", "/srv", "/mnt")}
CLONE_NEWNET = 0x40000000
#: slirp4netns's DNS forwarder, as the session sees it.
SLIRP_DNS = "10.0.2.3"


def available() -> str | None:
    """None when sessions can have their own namespaces here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "namespaces need root; sessions run as the server's user (the container is the boundary)"
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"{', '.join(missing)} not installed (util-linux)"
    return None


def egress_unavailable() -> str | None:
    """None when sessions can be given egress here, else why not."""
    return None if shutil.which("slirp4netns") else "slirp4netns is not installed (egress needs it)"


def hidden_dirs(extra: tuple[str, ...] = ()) -> list[str]:
    """Folders a session must not see: this project's code, its Python environment, task data. The allow
    list already leaves them out wherever they are; these are covered too should one lie inside an allowed
    system folder (a checkout under ``/usr/local``)."""
    import mintgym

    project = Path(mintgym.__file__).resolve().parent.parent
    candidates = [project, Path(sys.prefix).resolve(), project.parent / "shared",
                  *(Path(p) for p in (os.environ.get("MINTGYM_DATA"),) if p), *(Path(p) for p in extra)]
    found: list[str] = []
    for path in candidates:
        path = path.resolve()
        if path in SYSTEM_DIRS or not path.is_dir() or str(path) in found:
            continue
        found.append(str(path))
    return found


class SessionNamespace:
    """The namespaces of one session, held by their init process for as long as the session lives."""

    def __init__(self, proc: subprocess.Popen, init_pid: int, root: Path):
        self._proc = proc
        self.init_pid = init_pid
        self.root = root
        self._egress: subprocess.Popen | None = None

    @classmethod
    def start(cls, root: Path, rw: Path, display: int, *, hide: list[str], home_link: tuple[str, str] | None = None,
              egress: bool = False, timeout: float = 15.0) -> SessionNamespace:
        """Create the namespaces for a session whose directory is ``root``, writable tmpfs ``rw`` and display
        ``:display``; with ``egress`` the session also gets a way out to the internet (:meth:`start_egress`)."""
        reason = available() or (egress_unavailable() if egress else None)
        if reason:
            raise RuntimeError(f"session namespaces are unavailable: {reason}")
        newroot = root / ".sysroot"
        newroot.mkdir(mode=0o700, exist_ok=True)
        argv = ["setpriv", "--pdeathsig", "KILL", "--",
                "unshare", "--pid", "--fork", "--kill-child", "--net", "--ipc", "--mount", "--propagation", "private",
                "--mount-proc", "--", sys.executable, "-I", "-S", str(INIT_SCRIPT),
                "--root", str(root), "--rw", str(rw), "--newroot", str(newroot), "--display", str(display)]
        for path in hide:
            argv += ["--hide", path]
        if home_link:
            argv += ["--home-link", *home_link]
        if egress:
            resolv = root / ".resolv.conf"
            resolv.write_text(f"nameserver {SLIRP_DNS}\n")
            os.chmod(resolv, 0o644)
            argv += ["--resolv", str(resolv)]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True)
        line = _read_line(proc, timeout)
        if line != "ready":
            _stop(proc)
            raise RuntimeError(f"the session namespace did not start: {line or 'no answer'}")
        children = psutil.Process(proc.pid).children(recursive=True)
        init = [c for c in children if c.name() != "unshare"]
        if not init:
            _stop(proc)
            raise RuntimeError("the session namespace's init process is gone")
        namespace = cls(proc, init[-1].pid, root)
        if egress:
            try:
                namespace.start_egress(timeout)
            except BaseException:
                namespace.stop()
                raise
        return namespace

    def start_egress(self, timeout: float = 15.0) -> None:
        """A user-mode network stack (slirp4netns) on ``tap0``: the internet, but not the host's loopback
        (``--disable-host-loopback``) and, since it answers only what the session sends out, nothing of the
        host reaches in. It dies with the server thread that started it."""
        read_fd, write_fd = os.pipe()
        self._egress = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", "slirp4netns", "--configure", "--mtu=65520",
             "--disable-host-loopback", "--enable-sandbox", f"--ready-fd={write_fd}", str(self.init_pid), "tap0"],
            pass_fds=(write_fd,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True)
        os.close(write_fd)
        ready = select.select([read_fd], [], [], timeout)[0] and os.read(read_fd, 1) == b"1"
        os.close(read_fd)
        if not ready:
            self._egress.kill()
            err = self._egress.communicate()[1].decode(errors="replace").strip()[-300:]
            self._egress = None
            raise RuntimeError(f"slirp4netns did not configure the session's network: {err or 'no answer'}")

    def alive(self) -> bool:
        return self._proc.poll() is None

    def command(self, argv: list[str], *, uid: int, gid: int, cwd: Path) -> list[str]:
        """``argv`` run inside the namespaces as ``uid``:``gid`` with no supplementary groups or capabilities,
        in folder ``cwd`` (entered inside the session's root: a folder opened outside it has no path there)."""
        return ["nsenter", f"--target={self.init_pid}", "--net", "--ipc", "--mount", "--pid", "--wd", "--",
                "setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all", "--",
                "env", f"--chdir={cwd}", "--", *argv]

    def connect(self, port: int, host: str = "127.0.0.1", timeout: float = 5.0) -> socket.socket:
        """A TCP connection from the server to ``host:port`` on the session's own loopback.

        The socket is made by a short-lived thread that enters the session's network namespace (which is
        per thread); a socket stays in the namespace it was made in, so the server can use it anywhere."""
        result: dict[str, object] = {}

        def make() -> None:
            try:
                with open(f"/proc/{self.init_pid}/ns/net", "rb") as ns:
                    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
                    if libc.setns(ns.fileno(), CLONE_NEWNET) != 0:
                        err = ctypes.get_errno()
                        raise OSError(err, f"setns: {os.strerror(err)}")
                result["sock"] = socket.create_connection((host, port), timeout=timeout)
            except OSError as err:
                result["error"] = err

        thread = threading.Thread(target=make, name="netns-connect", daemon=True)
        thread.start()
        thread.join(timeout + 1)
        if "sock" not in result:
            raise ConnectionError(f"cannot reach {host}:{port} in the session's network: "
                                  f"{result.get('error', 'timed out')}")
        return result["sock"]  # type: ignore[return-value]

    def stop(self, wait: bool = True) -> None:
        """End init, and with it every process of the session's PID namespace (and the egress).

        ``wait=False`` returns at once and lets a thread reap the namespace: for a reset, whose processes are
        dead already (the kernel's teardown of a PID namespace sometimes takes over a second)."""
        if self._egress is not None:
            self._egress.kill()
            self._egress.wait()
            self._egress = None
        if wait:
            _stop(self._proc)
        else:
            threading.Thread(target=_stop, args=(self._proc,), name="namespace-stop", daemon=True).start()


def _read_line(proc: subprocess.Popen, timeout: float) -> str:
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline().decode(errors="replace").strip()),
                              daemon=True)
    reader.start()
    reader.join(timeout)
    return box[0] if box else ""


def _stop(proc: subprocess.Popen) -> None:
    for stream in (proc.stdin, proc.stdout):
        try:
            stream.close()
        except (OSError, AttributeError):
            pass
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
