"""One X display per session: Xvfb on a safely allocated display number, access limited to the
server's and the session's users, and the window manager (openbox).

The X server runs in the session's control group (its memory counts against the session's limit, and a
reset's ``cgroup.kill`` ends it) and is started afresh every episode on the same display number, so nothing
an agent set in it (keymap, root-window properties, selections, access control) reaches the next episode."""

from __future__ import annotations

import fcntl
import os
import secrets
import subprocess
import time
from pathlib import Path

from Xlib import display as xdisplay
from Xlib.error import DisplayError

from mintgym.environments.desktop.sandbox import Sandbox, base_dir

FIRST_DISPLAY = 100
LAST_DISPLAY = 999


class XServer:
    """An Xvfb process (run as the server's user) with its display lock and cookie."""

    def __init__(self, number: int, proc: subprocess.Popen, lock_fd: int, auth_file: Path):
        self.number = number
        self.proc = proc
        self._lock_fd = lock_fd
        self.auth_file = auth_file

    @property
    def name(self) -> str:
        return f":{self.number}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    @classmethod
    def start(cls, width: int, height: int, sandbox: Sandbox, timeout: float = 15.0) -> XServer:
        """Find a free display number (our flock + no X lock file), start Xvfb there, wait until ready."""
        locks = base_dir() / "locks"
        last_error = "no free display number"
        for number in range(FIRST_DISPLAY, LAST_DISPLAY + 1):
            taken = Path(f"/tmp/.X{number}-lock").exists() or Path(f"/tmp/.X11-unix/X{number}").exists()
            if taken and _in_use(number):
                continue
            fd = os.open(locks / f"X{number}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if taken:  # left by an X server that was killed (e.g. its env server got SIGKILL): ours now
                _remove_stale(number)
            proc, auth = _launch(number, width, height, sandbox, timeout)
            if proc is not None:
                return cls(number, proc, fd, auth)
            os.close(fd)
            last_error = f"Xvfb :{number} failed to start (see {sandbox.log_dir / 'xvfb.log'})"
        raise RuntimeError(last_error)

    def restart(self, width: int, height: int, sandbox: Sandbox, timeout: float = 15.0) -> None:
        """A fresh X server on the same display number (the old one must be dead or is killed here)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        _remove_stale(self.number)
        proc, self.auth_file = _launch(self.number, width, height, sandbox, timeout)
        if proc is None:
            raise RuntimeError(f"Xvfb :{self.number} failed to restart (see {sandbox.log_dir / 'xvfb.log'})")
        self.proc = proc

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        _remove_stale(self.number)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def connect(self) -> xdisplay.Display:
        try:
            return xdisplay.Display(self.name)
        except DisplayError as err:
            raise RuntimeError(f"cannot connect to Xvfb {self.name}: {err}") from err


def _launch(number: int, width: int, height: int, sandbox: Sandbox,
            timeout: float) -> tuple[subprocess.Popen | None, Path]:
    """Start Xvfb on ``:number`` in the session's group with a new cookie; the process once it is ready (and
    the server's and session's users allowed in), else None."""
    auth = sandbox.log_dir / "xauth"
    auth.unlink(missing_ok=True)
    cookie = secrets.token_hex(16)
    subprocess.run(["xauth", "-f", str(auth), "add", f":{number}", ".", cookie], check=True, capture_output=True)
    read_fd, write_fd = os.pipe()
    # --pdeathsig: Xvfb dies with the server thread that started it, even on SIGKILL.
    argv = ["setpriv", "--pdeathsig", "KILL", "--", "Xvfb", f":{number}", "-screen", "0", f"{width}x{height}x24",
            "-nolisten", "tcp", "-noreset", "-auth", str(auth), "-displayfd", str(write_fd), "+extension", "MIT-SHM"]
    with open(sandbox.log_dir / "xvfb.log", "ab") as log:
        proc = subprocess.Popen(sandbox.contain(argv), pass_fds=(write_fd,), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    os.close(write_fd)
    ready = _read_ready(read_fd, proc, timeout)
    os.close(read_fd)
    if not ready:
        proc.kill()
        proc.wait()
        return None, auth
    users = ["root" if os.geteuid() == 0 else _username(os.geteuid())]
    if sandbox.name not in users:
        users.append(sandbox.name)
    subprocess.run(["xhost", *[f"+si:localuser:{u}" for u in users]], check=True, capture_output=True,
                   env={"DISPLAY": f":{number}", "XAUTHORITY": str(auth), "PATH": "/usr/bin:/bin"})
    return proc, auth


def _in_use(number: int) -> bool:
    """Whether an X server answers on display ``number`` (its socket file or abstract socket)."""
    import socket

    for address in (f"\0/tmp/.X11-unix/X{number}", f"/tmp/.X11-unix/X{number}"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(1.0)
            try:
                sock.connect(address)
                return True
            except OSError:
                continue
    return False


def _remove_stale(number: int) -> None:
    for stale in (f"/tmp/.X{number}-lock", f"/tmp/.X11-unix/X{number}"):
        try:
            os.unlink(stale)
        except FileNotFoundError:
            pass


def _read_ready(fd: int, proc: subprocess.Popen, timeout: float) -> bool:
    import select

    deadline = time.monotonic() + timeout
    data = b""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        readable, _, _ = select.select([fd], [], [], 0.1)
        if readable:
            chunk = os.read(fd, 64)
            if not chunk:
                return False
            data += chunk
            if data.endswith(b"\n"):
                return True
    return False


def _username(uid: int) -> str:
    import pwd

    return pwd.getpwuid(uid).pw_name


def wait_for_wm(d: xdisplay.Display, proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Block until the window manager announces itself (_NET_SUPPORTING_WM_CHECK on the root window)."""
    atom = d.intern_atom("_NET_SUPPORTING_WM_CHECK")
    root = d.screen().root
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the window manager exited with code {proc.returncode}")
        prop = root.get_full_property(atom, 0)
        if prop is not None and prop.value:
            # openbox announces itself a moment before its key bindings are grabbed
            time.sleep(0.25)
            return
        time.sleep(0.02)
    raise RuntimeError(f"the window manager did not start within {timeout:g} s")
