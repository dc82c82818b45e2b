"""Per-session sandbox: a dedicated unprivileged user, its directory, and every process it runs.

Running as root, each session takes one of a fixed pool of system users (``mgdesk0``...), locked with
``flock`` so that concurrent servers never share one; everything the session starts -- the window
manager, the apps, a task's config commands -- runs as that user with HOME in the session directory,
and a reset kills every process of that uid. Not running as root (e.g. a container's non-root user),
the sandbox degrades to the server's own user and tracks its processes by a per-session environment
marker; the container is then the isolation boundary.
"""

from __future__ import annotations

import asyncio
import fcntl
import grp
import os
import pwd
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil

USER_PREFIX = "mgdesk"
MAX_USERS = 128
MARKER = "MINTGYM_DESKTOP_SESSION"


def base_dir() -> Path:
    """Where session directories live: $MINTGYM_DESKTOP_DIR, else /tmp/mintgym-desktop[-uid]."""
    env = os.environ.get("MINTGYM_DESKTOP_DIR")
    if env:
        path = Path(env)
    else:
        path = Path("/tmp/mintgym-desktop" if os.geteuid() == 0 else f"/tmp/mintgym-desktop-{os.geteuid()}")
    path.mkdir(parents=True, exist_ok=True)
    (path / "locks").mkdir(exist_ok=True)
    os.chmod(path, 0o755)
    os.chmod(path / "locks", 0o700)
    return path


@dataclass
class CommandResult:
    argv: list[str] | str
    returncode: int
    stdout: str
    stderr: str


@dataclass
class Sandbox:
    """The user, directories and processes of one desktop session."""

    name: str
    uid: int
    gid: int
    root: Path
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    extra_env: dict[str, str] = field(default_factory=dict)
    _lock_fd: int | None = None

    @property
    def privileged(self) -> bool:
        return os.geteuid() == 0

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    # -- lifecycle -------------------------------------------------------------------------------
    @classmethod
    def acquire(cls) -> "Sandbox":
        """Lock a free session user (creating it when needed) and lay out its directory."""
        base = base_dir()
        if os.geteuid() != 0:
            token = uuid.uuid4().hex[:8]
            root = base / f"s-{token}"
            root.mkdir(mode=0o700)
            box = cls(name=pwd.getpwuid(os.geteuid()).pw_name, uid=os.geteuid(), gid=os.getegid(), root=root)
            box._layout()
            return box
        for i in range(MAX_USERS):
            name = f"{USER_PREFIX}{i}"
            fd = os.open(base / "locks" / f"{name}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            root = base / name
            uid, gid = _ensure_user(name, root / "home")
            box = cls(name=name, uid=uid, gid=gid, root=root, _lock_fd=fd)
            box.kill_all()  # leftovers of a crashed server that held this user before
            box._layout()
            return box
        raise RuntimeError(f"all {MAX_USERS} desktop session users are in use")

    def _layout(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        for sub in (self.tmp, self.run_dir):
            shutil.rmtree(sub, ignore_errors=True)
            sub.mkdir(mode=0o700)
            self._chown(sub)
        shutil.rmtree(self.log_dir, ignore_errors=True)  # a previous session's logs
        self.log_dir.mkdir()
        os.chmod(self.log_dir, 0o700)  # server-side logs: the session user cannot forge them

    def release(self) -> None:
        self.kill_all()
        shutil.rmtree(self.root if not self.privileged else self.tmp, ignore_errors=True)
        if self.privileged:
            shutil.rmtree(self.home, ignore_errors=True)
            shutil.rmtree(self.run_dir, ignore_errors=True)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def restore_home(self, template: Path) -> None:
        """Replace the home directory with a fresh copy of ``template`` owned by the session user."""
        for log in self.log_dir.glob("*.log"):
            if log.stat().st_size > 8 * 2**20:  # app output of earlier episodes: keep it bounded
                log.write_bytes(b"")
        if self.home.exists():
            shutil.rmtree(self.home)
        shutil.copytree(template, self.home, symlinks=True)
        os.chmod(self.home, 0o700)
        for sub in (self.tmp, self.run_dir):
            shutil.rmtree(sub, ignore_errors=True)
            sub.mkdir(mode=0o700)
        if self.privileged:
            for top in (self.home, self.tmp, self.run_dir):
                for dirpath, _dirnames, filenames in os.walk(top):
                    os.lchown(dirpath, self.uid, self.gid)
                    for name in filenames:
                        os.lchown(os.path.join(dirpath, name), self.uid, self.gid)

    def _chown(self, path: Path) -> None:
        if self.privileged:
            os.chown(path, self.uid, self.gid)

    # -- processes -------------------------------------------------------------------------------
    def env(self, display: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment every session process gets (no variables of the server leak in)."""
        env = {
            "HOME": str(self.home), "USER": self.name, "LOGNAME": self.name, "SHELL": "/bin/bash",
            "PATH": f"{self.root / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "TMPDIR": str(self.tmp), "XDG_RUNTIME_DIR": str(self.run_dir), "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "GSETTINGS_BACKEND": "keyfile", "NO_AT_BRIDGE": "1",
            "TERM": "xterm", MARKER: self.token,
        }
        if display:
            env["DISPLAY"] = display
        env.update(self.extra_env)
        env.update(extra or {})
        return env

    def _popen_kwargs(self) -> dict:
        kwargs: dict = {"cwd": str(self.home), "start_new_session": True, "close_fds": True}
        if self.privileged:
            kwargs.update(user=self.uid, group=self.gid, extra_groups=[], umask=0o077)
        return kwargs

    def spawn(self, argv: list[str] | str, display: str | None, *, shell: bool = False,
              extra_env: dict[str, str] | None = None, log_name: str = "app") -> subprocess.Popen:
        """Start a process as the session user, detached, its output in the session's log folder."""
        log = open(self.log_dir / f"{log_name}.log", "ab")
        try:
            return subprocess.Popen(argv, shell=shell, env=self.env(display, extra_env), stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, **self._popen_kwargs())
        finally:
            log.close()

    async def run(self, argv: list[str] | str, display: str | None, *, shell: bool = False,
                  timeout: float = 60.0, extra_env: dict[str, str] | None = None) -> CommandResult:
        """Run a command as the session user and wait for it; on timeout kill its process group."""
        kwargs = self._popen_kwargs()
        env = self.env(display, extra_env)
        if shell:
            if not isinstance(argv, str):
                argv = " ".join(argv)
            proc = await asyncio.create_subprocess_exec("/bin/bash", "-c", argv, env=env, stdin=subprocess.DEVNULL,
                                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)
        else:
            if isinstance(argv, str):
                argv = [argv]
            proc = await asyncio.create_subprocess_exec(*argv, env=env, stdin=subprocess.DEVNULL,
                                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except asyncio.TimeoutError:
            _killpg(proc.pid)
            await proc.wait()
            raise TimeoutError(f"command {argv!r} did not finish within {timeout:g} s (killed)") from None
        return CommandResult(argv, proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace"))

    def processes(self) -> list[psutil.Process]:
        """Every live process of this session: by uid when privileged, by marker otherwise."""
        found = []
        me = os.getpid()
        for proc in psutil.process_iter(["uids", "pid"]):
            try:
                if proc.pid == me:
                    continue
                if self.privileged:
                    if proc.info["uids"] and proc.info["uids"].real == self.uid:
                        found.append(proc)
                elif proc.info["uids"] and proc.info["uids"].real == self.uid:
                    if proc.environ().get(MARKER) == self.token:
                        found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def kill_all(self, timeout: float = 5.0) -> int:
        """SIGKILL every process of the session until none is left; returns how many were killed."""
        killed = 0
        deadline = time.monotonic() + timeout
        while True:
            procs = self.processes()
            if not procs:
                return killed
            for proc in procs:
                try:
                    proc.send_signal(signal.SIGKILL)
                    killed += 1
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    pass
            psutil.wait_procs(procs, timeout=0.5)
            if time.monotonic() > deadline:
                left = [p.pid for p in self.processes()]
                if left:
                    raise RuntimeError(f"session {self.name}: processes {left} survive SIGKILL")
                return killed


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _ensure_user(name: str, home: Path) -> tuple[int, int]:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", str(home),
                        "--shell", "/bin/bash", name], check=True, capture_output=True)
        entry = pwd.getpwnam(name)
    grp.getgrgid(entry.pw_gid)
    return entry.pw_uid, entry.pw_gid
