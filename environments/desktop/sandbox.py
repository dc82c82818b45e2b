"""Per-session sandbox: a dedicated unprivileged user, its directory, its limits and every process it runs.

Running as root, each session takes one of a fixed pool of system users (``mgdesk0``...), locked with
``flock`` so that concurrent servers never share one; everything the session starts -- the window
manager, the apps, a task's config commands, and its X server -- runs in the session's control group
(:mod:`mintgym.environments.isolation.cgroups`: memory, processes and CPU capped, and killed at once by
``cgroup.kill``), and all but the X server as that user inside the episode's own namespaces
(:mod:`.namespace`). Everything the session can write (home, ``/tmp``, ``/var/tmp``, ``/dev/shm`` and its
run-time folder) lies on one size-capped tmpfs, the session's disk quota, laid down afresh each episode.
The server reads and writes the session's files only through :meth:`Sandbox.read_bytes` /
:meth:`Sandbox.write_bytes`, which never follow a link the agent made.

Not running as root (e.g. a container's non-root user), the sandbox degrades to the server's own user,
tracks its processes by a per-session environment marker and enforces no limits; the container is then the
isolation boundary and :attr:`Sandbox.containment` says so.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import grp
import os
import pwd
import shutil
import signal
import stat
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from mintgym.environments.desktop.namespace import SessionNamespace
from mintgym.environments.isolation import cgroups, mounts

USER_PREFIX = "mgdesk"
#: Desktop sessions one machine may hold at once (one system user each, made on first use). Bounded by the
#: system uid range (``SYS_UID_MIN``-``SYS_UID_MAX`` in /etc/login.defs, about 900 ids on Debian); 128 was too
#: few for a fleet of 500 sessions split evenly over web, pytool and desktop (167 desktops).
MAX_USERS = 512
MARKER = "MINTGYM_DESKTOP_SESSION"
#: The writable folders on the session's tmpfs, with their modes ("user" ones belong to the session user).
WRITABLE = {"tmp": 0o1777, "var-tmp": 0o1777, "shm": 0o1777, "run": 0o700}


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


@dataclass(frozen=True)
class SessionLimits:
    """What one desktop session may use (every process of it together, its X server included)."""

    #: Memory in MiB: processes, shared memory and the files on the session's tmpfs.
    memory_mb: int = 4096
    #: Processes and threads.
    processes: int = 1024
    #: CPU time per second, in cores.
    cpus: float = 1.0
    #: Size of everything the session can write (home, /tmp, /var/tmp, /dev/shm), in MiB.
    disk_mb: int = 1024

    def cgroup_limits(self) -> cgroups.Limits:
        return cgroups.Limits(self.memory_mb * 2**20, self.processes, self.cpus)


@dataclass
class CommandResult:
    argv: list[str] | str
    returncode: int
    stdout: str
    stderr: str


@dataclass
class Sandbox:
    """The user, directories, limits and processes of one desktop session."""

    name: str
    uid: int
    gid: int
    root: Path
    limits: SessionLimits = field(default_factory=SessionLimits)
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    extra_env: dict[str, str] = field(default_factory=dict)
    namespace: SessionNamespace | None = None
    cgroup: cgroups.Cgroup | None = None
    #: Why the session's processes are not in a control group (limits not enforced), or "".
    uncontained: str = ""
    _lock_fd: int | None = None

    @property
    def privileged(self) -> bool:
        return os.geteuid() == 0

    @property
    def rw(self) -> Path:
        """The session's writable tmpfs (everything it can write lies here)."""
        return self.root / "rw"

    @property
    def home(self) -> Path:
        return self.rw / "home"

    @property
    def tmp(self) -> Path:
        """The session's /tmp, as the server sees it."""
        return self.rw / "tmp"

    @property
    def run_dir(self) -> Path:
        return self.rw / "run"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    @property
    def containment(self) -> dict:
        """How this session is contained and bounded (for the server's spec and the session's description)."""
        return {"cgroup": self.cgroup.name if self.cgroup else None,
                "limits": {"memory_mb": self.limits.memory_mb, "processes": self.limits.processes,
                           "cpus": self.limits.cpus, "disk_mb": self.limits.disk_mb},
                "enforced": self.cgroup is not None, "reason": self.uncontained or None}

    # -- lifecycle -------------------------------------------------------------------------------
    @classmethod
    def acquire(cls, limits: SessionLimits | None = None) -> Sandbox:
        """Lock a free session user (creating it when needed), lay out its directory, make its group."""
        limits = limits or SessionLimits()
        base = base_dir()
        if os.geteuid() != 0:
            root = base / f"s-{uuid.uuid4().hex[:8]}"
            root.mkdir(mode=0o700)
            box = cls(name=pwd.getpwuid(os.geteuid()).pw_name, uid=os.geteuid(), gid=os.getegid(), root=root,
                      limits=limits, uncontained="not running as root: the container is the boundary")
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
            uid, gid = _ensure_user(name, root / "rw" / "home")
            box = cls(name=name, uid=uid, gid=gid, root=root, limits=limits, _lock_fd=fd)
            try:
                box._kill_leftovers()  # a crashed server that held this user before
                box._layout()
                box._make_cgroup()
            except BaseException:
                box.release()
                raise
            return box
        raise RuntimeError(f"all {MAX_USERS} desktop session users are in use")

    def _kill_leftovers(self) -> None:
        for proc in self._scan():
            try:
                proc.kill()
            except psutil.Error:
                pass
        mounts.unmount_all(self.root)

    def _layout(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        for stale in ("home", "tmp", "run", ".X11-socket"):  # the layout before the session's tmpfs
            path = self.root / stale
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
        self.rw.mkdir(exist_ok=True)
        if self.privileged:
            mounts.mount_tmpfs(self.rw, self.limits.disk_mb, None, family="desktop", inodes=262144, mode=0o755,
                               noexec=False)
        shutil.rmtree(self.log_dir, ignore_errors=True)  # a previous session's logs
        self.log_dir.mkdir()
        os.chmod(self.log_dir, 0o700)  # server-side logs: the session user cannot forge them

    def _make_cgroup(self) -> None:
        reason = cgroups.probe()[0]
        if reason:
            self.uncontained = f"no control group for the session ({reason}): its limits are not enforced"
            return
        cgroups.sweep_stale("desktop")
        self.cgroup = cgroups.Cgroup.create("desktop", self.limits.cgroup_limits())

    def release(self) -> None:
        try:
            self.kill_all()
        except RuntimeError:
            pass
        if self.namespace is not None:
            self.namespace.stop()
            self.namespace = None
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        if self.privileged:
            mounts.unmount_all(self.root)
            shutil.rmtree(self.rw, ignore_errors=True)
        else:
            shutil.rmtree(self.root, ignore_errors=True)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def fresh_world(self, template: Path) -> None:
        """Empty everything the session can write and lay the home template down again (no process of the
        session may run: call after :meth:`kill_all` and with the episode's namespace stopped)."""
        for log in self.log_dir.glob("*.log"):
            if log.stat().st_size > 8 * 2**20:  # app output of earlier episodes: keep it bounded
                log.write_bytes(b"")
        shutil.rmtree(self.log_dir / "fetched", ignore_errors=True)  # files copied out for the last scoring
        with os.scandir(self.rw) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
        shutil.copytree(template, self.home, symlinks=True)
        os.chmod(self.home, 0o700)
        for name, mode in WRITABLE.items():
            (self.rw / name).mkdir()
            os.chmod(self.rw / name, mode)
        if self.privileged:
            os.chown(self.run_dir, self.uid, self.gid)
            for dirpath, _dirnames, filenames in os.walk(self.home):
                os.lchown(dirpath, self.uid, self.gid)
                for name in filenames:
                    os.lchown(os.path.join(dirpath, name), self.uid, self.gid)

    # -- processes -------------------------------------------------------------------------------
    def env(self, display: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment every session process gets (no variables of the server leak in)."""
        env = {
            "HOME": str(self.home), "USER": self.name, "LOGNAME": self.name, "SHELL": "/bin/bash",
            "PATH": f"{self.root / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "TMPDIR": "/tmp" if self.namespace is not None else str(self.tmp),
            "XDG_RUNTIME_DIR": str(self.run_dir), "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "GSETTINGS_BACKEND": "keyfile", "NO_AT_BRIDGE": "1",
            "TERM": "xterm", MARKER: self.token,
        }
        if display:
            env["DISPLAY"] = display
        env.update(self.extra_env)
        env.update(extra or {})
        return {key: value for key, value in env.items() if value is not None}  # None unsets a variable

    def contain(self, argv: list[str]) -> list[str]:
        """``argv`` started inside the session's control group (unchanged when it has none)."""
        return self.cgroup.join_command(argv) if self.cgroup is not None else argv

    def _command(self, argv: list[str]) -> tuple[list[str], dict]:
        """The command line and Popen options that run ``argv`` as the session user, in its namespaces and group."""
        kwargs: dict = {"cwd": str(self.home), "start_new_session": True, "close_fds": True}
        if not self.privileged:
            return argv, kwargs
        if self.namespace is None:
            raise RuntimeError(f"session {self.name}: its namespaces are not started")
        kwargs["umask"] = 0o077
        return self.contain(self.namespace.command(argv, uid=self.uid, gid=self.gid, cwd=self.home)), kwargs

    def spawn(self, argv: list[str] | str, display: str | None, *, shell: bool = False,
              extra_env: dict[str, str] | None = None, log_name: str = "app") -> subprocess.Popen:
        """Start a process as the session user, detached, its output in the session's log folder."""
        argv = _argv(argv, shell)
        command, kwargs = self._command(argv)
        log = open(self.log_dir / f"{log_name}.log", "ab")
        try:
            return subprocess.Popen(command, env=self.env(display, extra_env), stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, **kwargs)
        except FileNotFoundError as err:
            raise FileNotFoundError(err.errno, err.strerror, argv[0]) from None
        finally:
            log.close()

    async def run(self, argv: list[str] | str, display: str | None, *, shell: bool = False,
                  timeout: float = 60.0, extra_env: dict[str, str] | None = None,
                  max_output: int = 8 * 2**20) -> CommandResult:
        """Run a command as the session user and wait for it; on timeout kill its process group.

        Started by a plain ``Popen`` waited on in a thread, so it works on any event loop (uvloop's
        subprocess support cannot switch users). Output beyond ``max_output`` bytes per stream is cut."""
        original = argv
        argv = _argv(argv, shell)
        command, kwargs = self._command(argv)
        if self.privileged and shutil.which(argv[0], path=self.env(None)["PATH"]) is None and "/" not in argv[0]:
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        proc = subprocess.Popen(command, env=self.env(display, extra_env), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)
        try:
            out, err = await asyncio.to_thread(_communicate, proc, timeout, max_output)
        except subprocess.TimeoutExpired:
            _killpg(proc.pid)
            await asyncio.to_thread(proc.wait)
            raise TimeoutError(f"command {original!r} did not finish within {timeout:g} s (killed)") from None
        return CommandResult(original, proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace"))

    # -- files the server reads and writes ---------------------------------------------------------
    def _open(self, path: Path, flags: int, *, create_dirs: bool = False) -> int:
        """Open ``path`` inside the session's root without following any symbolic link on the way.

        Every component is opened relative to its parent with O_NOFOLLOW, so a link the agent put
        anywhere on the path (to another session's home, to a root-only file) makes this fail instead of
        reading through it. Raises FileNotFoundError, or PermissionError naming the refusal."""
        path = Path(os.path.abspath(path))
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            raise PermissionError(f"{path} is outside the session's directory {self.root}") from None
        parts = rel.parts
        if not parts:
            raise IsADirectoryError(str(path))
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for part in parts[:-1]:
                try:
                    nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    if not create_dirs:
                        raise
                    os.mkdir(part, 0o755, dir_fd=fd)
                    nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                    if self.privileged:
                        os.fchown(nxt, self.uid, self.gid)
                except OSError as err:
                    if err.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise PermissionError(f"{path}: {part!r} is a link or not a folder; not followed") from None
                    raise
                os.close(fd)
                fd = nxt
            try:
                return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600, dir_fd=fd)
            except OSError as err:
                if err.errno == errno.ELOOP:
                    raise PermissionError(f"{path} is a symbolic link; not followed") from None
                raise
        finally:
            os.close(fd)

    def read_bytes(self, path: Path, max_bytes: int = 64 * 2**20) -> bytes:
        """The content of a regular file of the session, owned by the session user, at most ``max_bytes``.

        Refuses links, hard links to files of other users, devices, FIFOs and files larger than the cap
        (their size is checked before anything is read, so a huge sparse file costs nothing)."""
        fd = self._open(path, os.O_RDONLY)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise PermissionError(f"{path} is not a regular file")
            if self.privileged and info.st_uid not in (self.uid, 0):
                raise PermissionError(f"{path} belongs to uid {info.st_uid}, not the session user")
            if info.st_size > max_bytes:
                raise PermissionError(f"{path} is {info.st_size} bytes, over the {max_bytes}-byte cap")
            chunks, left = [], max_bytes + 1
            while left > 0:
                chunk = os.read(fd, min(left, 2**20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            data = b"".join(chunks)
            if len(data) > max_bytes:
                raise PermissionError(f"{path} grew over the {max_bytes}-byte cap while being read")
            return data
        finally:
            os.close(fd)

    def is_file(self, path: Path) -> bool:
        """Whether ``path`` is a regular file the server may read (no link on the way)."""
        try:
            fd = self._open(path, os.O_RDONLY)
        except OSError:
            return False
        try:
            info = os.fstat(fd)
            return stat.S_ISREG(info.st_mode) and (not self.privileged or info.st_uid in (self.uid, 0))
        finally:
            os.close(fd)

    def list_files(self, folder: Path) -> list[tuple[Path, float]]:
        """(path, mtime) of the regular files directly in ``folder`` (no link followed; [] when missing)."""
        try:
            fd = self._open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return []
        try:
            found = []
            with os.scandir(fd) as entries:
                for entry in entries:
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode):
                        found.append((Path(folder) / entry.name, info.st_mtime))
            return found
        finally:
            os.close(fd)

    def write_bytes(self, path: Path, data: bytes) -> None:
        """Create or replace a file of the session (owned by the session user), following no link."""
        fd = self._open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, create_dirs=True)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise PermissionError(f"{path} is not a regular file")
            if self.privileged:
                os.fchown(fd, self.uid, self.gid)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)

    def processes(self) -> list[psutil.Process]:
        """Every live process the session user runs: its control group's members of that user (not the X
        server or the server's ``nsenter`` wrappers), else by uid when privileged, else by marker (zombies
        are dead already and left out: their parent or the namespace's init reaps them)."""
        if self.cgroup is not None:
            found = []
            for pid in self.cgroup.pids():
                try:
                    proc = psutil.Process(pid)
                    if proc.status() != psutil.STATUS_ZOMBIE and proc.uids().real == self.uid:
                        found.append(proc)
                except psutil.Error:
                    continue
            return found
        return self._scan()

    def _scan(self) -> list[psutil.Process]:
        found = []
        me = os.getpid()
        for proc in psutil.process_iter(["uids", "pid", "status"]):
            try:
                if proc.pid == me or proc.info["status"] == psutil.STATUS_ZOMBIE:
                    continue
                if not proc.info["uids"] or proc.info["uids"].real != self.uid:
                    continue
                if self.privileged or proc.environ().get(MARKER) == self.token:
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def kill_all(self, timeout: float = 5.0, spare: tuple[int, ...] = ()) -> int:
        """Kill every process of the session (its X server included, unless in ``spare``) and wait until
        none is left.

        With a control group and nothing spared this is ``cgroup.kill``: the kernel kills every member, one
        forked meanwhile included. Otherwise processes are killed by scanning until two scans in a row find
        none (the process cap keeps a fork bomb from outrunning them)."""
        if self.cgroup is not None:
            return self.cgroup.kill_and_wait(timeout, spare)
        killed, empty_scans = 0, 0
        deadline = time.monotonic() + timeout
        while empty_scans < 2:
            procs = self.processes()
            empty_scans = empty_scans + 1 if not procs else 0
            for proc in procs:
                if proc.pid in spare:
                    continue
                try:
                    proc.send_signal(signal.SIGKILL)
                    killed += 1
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    pass
            psutil.wait_procs(procs, timeout=0.2)
            if time.monotonic() > deadline:
                left = [p.pid for p in self.processes()]
                if left:
                    raise RuntimeError(f"session {self.name}: processes {left} survive SIGKILL")
                return killed
        return killed

    def limit_hits(self) -> dict[str, int]:
        """How often the session hit its limits so far: processes the kernel killed for memory, forks refused."""
        if self.cgroup is None:
            return {"oom_kills": 0, "refused_forks": 0}
        return {"oom_kills": self.cgroup.oom_kills(), "refused_forks": self.cgroup.process_limit_hits()}


def _argv(argv: list[str] | str, shell: bool) -> list[str]:
    if shell:
        return ["/bin/bash", "-c", argv if isinstance(argv, str) else " ".join(argv)]
    return [argv] if isinstance(argv, str) else list(argv)


def _communicate(proc: subprocess.Popen, timeout: float, max_output: int) -> tuple[bytes, bytes]:
    out, err = proc.communicate(timeout=timeout)
    return out[:max_output], err[:max_output]


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
