"""A persistent, sandboxed Python worker per session: the agent's code never runs in the server.

Isolation, strongest available first (:func:`probe_isolation` picks it once per process):

* ``namespace`` (root with bubblewrap): the worker runs under ``bwrap`` in new network, PID, IPC, UTS
  and mount namespaces, as PID 1 of its PID namespace, under a dedicated unprivileged uid/gid with no
  capabilities and ``no_new_privs``. Its filesystem is a read-only tmpfs root with read-only binds of
  /usr, a few /etc files and the Python installation; the session's working directory is bound
  writable at ``/sandbox`` and the task folder read-only at ``/task``.
* ``rlimits`` (not root, or no bubblewrap): the worker is a plain child process with the same resource
  limits, in its own process group; no network, filesystem or uid isolation.

In both, the worker gets a clean environment (nothing of the server's), and per cell: a CPU-time
limit, a wall-clock limit, and for the process: RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_NPROC.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mintgym.environments.pytool.worker import HEADER, MAX_FRAME

from mintgym.errors import EnvironmentCrashed

WORKER_SCRIPT = Path(__file__).with_name("worker.py")
SANDBOX_WORKDIR = "/sandbox"
SANDBOX_TASKDIR = "/task"
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "fonts", "alternatives")


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandbox (per cell for time, per process for the rest)."""

    cpu_seconds: float = 10.0
    wall_seconds: float = 30.0
    memory_mb: int = 1024
    file_mb: int = 64
    open_files: int = 256
    processes: int = 64
    output_chars: int = 20_000
    #: Extra seconds the server waits past ``wall_seconds`` before it kills a stuck worker.
    grace_seconds: float = 5.0
    #: Seconds to wait for the worker's start-up handshake.
    start_seconds: float = 30.0

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "wall_seconds", "memory_mb", "file_mb", "open_files", "processes",
                     "output_chars"):
            if getattr(self, name) <= 0:
                raise ValueError(f"SandboxLimits.{name} must be positive, got {getattr(self, name)}")


@dataclass
class ExecResult:
    """What one cell produced."""

    code: str
    output: str = ""
    #: The traceback or limit message when the cell failed, else None.
    error: str | None = None
    truncated_bytes: int = 0
    #: True when the worker had to be restarted after this cell (its variables are gone).
    restarted: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    def text(self) -> str:
        """Output and error as the agent reads them."""
        parts = [self.output]
        if self.truncated_bytes:
            parts.append(f"\n[output truncated: {self.truncated_bytes} more bytes not shown]\n")
        if self.error:
            parts.append(self.error)
        if self.restarted:
            parts.append("[the sandbox was restarted: variables were lost, files in the working directory kept]\n")
        return "".join(parts)


@dataclass(frozen=True)
class Isolation:
    """What isolation this machine gives the sandbox (reported in the server's spec)."""

    level: str  # "namespace" | "rlimits"
    network: str  # "namespace" | "none"
    filesystem: str  # "read-only root, writable /sandbox" | "none"
    uid: str  # "dedicated" | "shared"
    reason: str = ""


_ISOLATION: Isolation | None = None


def probe_isolation() -> Isolation:
    """Try bubblewrap once; fall back to rlimits only when not root or namespaces are unavailable."""
    global _ISOLATION
    if _ISOLATION is not None:
        return _ISOLATION
    reason = ""
    if os.geteuid() != 0:
        reason = "not running as root: no dedicated uid, no namespaces"
    elif shutil.which("bwrap") is None:
        reason = "bubblewrap (bwrap) is not installed"
    elif shutil.which("setpriv") is None:
        reason = "setpriv (util-linux) is not installed"
    else:
        probe = subprocess.run(["bwrap", "--unshare-net", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev",
                                "--proc", "/proc", "true"], capture_output=True, timeout=30, env={}, check=False)
        if probe.returncode != 0:
            reason = f"bwrap cannot create namespaces here: {probe.stderr.decode(errors='replace').strip()}"
    if reason:
        _ISOLATION = Isolation("rlimits", "none", "none", "shared", reason)
    else:
        _ISOLATION = Isolation("namespace", "namespace", "read-only root, writable /sandbox", "dedicated")
    return _ISOLATION


def _clean_env(workdir: str) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "MPLCONFIGDIR": workdir, "PYTHONDONTWRITEBYTECODE": "1"}


def _python_roots() -> list[str]:
    """Folders the worker's interpreter needs: the venv, the base installation, the real executable's."""
    roots = {sys.prefix, sys.base_prefix, str(Path(os.path.realpath(sys.executable)).parent.parent)}
    keep = []
    for root in sorted(roots, key=len):
        if root.startswith("/usr/") or root == "/usr":
            continue
        if any(root == k or root.startswith(k + "/") for k in keep):
            continue
        keep.append(root)
    return keep


def bwrap_command(workdir: Path, taskdir: Path, uid: int) -> list[str]:
    """The bubblewrap + setpriv command line that starts the worker in its namespaces."""
    cmd = ["bwrap", "--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid", "--unshare-ipc",
           "--unshare-uts", "--unshare-cgroup-try", "--as-pid-1", "--hostname", "sandbox",
           "--ro-bind", "/usr", "/usr",
           # /tmp first: the Python install may live under /tmp (a CI clone), and later binds must land on it
           "--tmpfs", "/tmp"]
    made: set[str] = {"/", "/etc", "/usr", "/tmp"}
    for link in ("bin", "lib", "lib64", "sbin"):
        path = Path("/") / link
        if path.is_symlink():
            cmd += ["--symlink", os.readlink(path), str(path)]
        elif path.exists():
            cmd += ["--ro-bind", str(path), str(path)]
    cmd += ["--perms", "0755", "--dir", "/etc"]
    for name in _ETC_FILES:
        cmd += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for root in _python_roots():
        parents = list(Path(root).parents)[::-1][1:]
        for parent in parents:
            if str(parent) not in made:
                cmd += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        cmd += ["--ro-bind", root, root]
        made.add(root)
    cmd += ["--perms", "0755", "--dir", "/opt", "--perms", "0755", "--dir", "/opt/mintgym",
            "--ro-bind", str(WORKER_SCRIPT), "/opt/mintgym/worker.py",
            "--dev", "/dev", "--proc", "/proc",
            "--bind", str(workdir), SANDBOX_WORKDIR, "--ro-bind", str(taskdir), SANDBOX_TASKDIR,
            "--chdir", SANDBOX_WORKDIR, "--remount-ro", "/", "--",
            "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--",
            sys.executable, "-I", "-B", "/opt/mintgym/worker.py"]
    return cmd


class Sandbox:
    """One session's worker process: start it, run cells in it, restart it, stop it.

    ``workdir`` and ``taskdir`` are host paths the caller creates; the sandbox sees them as
    :data:`SANDBOX_WORKDIR` and :data:`SANDBOX_TASKDIR` (or under their own paths without namespaces).
    """

    def __init__(self, workdir: Path, taskdir: Path, uid: int | None, limits: SandboxLimits | None = None,
                 isolation: Isolation | None = None):
        self.workdir = Path(workdir)
        self.taskdir = Path(taskdir)
        self.limits = limits or SandboxLimits()
        self.isolation = isolation or probe_isolation()
        self.uid = uid if self.isolation.level == "namespace" else None
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr_task: asyncio.Task | None = None
        self._stderr_tail = bytearray()
        self._lock = asyncio.Lock()
        self._killing = False
        self.worker_pid: int | None = None
        self.starts = 0
        #: True while the running worker has not executed any cell yet (a reset need not restart it).
        self.fresh = False

    # -- paths as the code sees them ------------------------------------------------------------------
    @property
    def code_workdir(self) -> str:
        return SANDBOX_WORKDIR if self.isolation.level == "namespace" else str(self.workdir)

    @property
    def code_taskdir(self) -> str:
        return SANDBOX_TASKDIR if self.isolation.level == "namespace" else str(self.taskdir)

    @property
    def task_image_path(self) -> str:
        """Where the code finds the task image."""
        return f"{self.code_taskdir}/image.png"

    def describe(self) -> dict[str, Any]:
        info = asdict(self.isolation)
        info.update(sandbox_uid=self.uid, workdir=self.code_workdir, task_image=self.task_image_path,
                    limits=asdict(self.limits))
        return info

    # -- lifecycle ------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start a fresh worker (the working directory is left as it is)."""
        if self._proc is not None:
            await self.stop()
        lim = self.limits
        if self.isolation.level == "namespace":
            cmd = bwrap_command(self.workdir, self.taskdir, int(self.uid))
        else:
            cmd = [sys.executable, "-I", "-B", str(WORKER_SCRIPT)]
        env = _clean_env(self.code_workdir)
        self._stderr_tail = bytearray()
        self._killing = False
        self._proc = await asyncio.create_subprocess_exec(
            *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=env, cwd=str(self.workdir), start_new_session=True, close_fds=True)
        self._stderr_task = asyncio.create_task(self._drain_stderr(self._proc))
        processes = lim.processes
        if self.isolation.level != "namespace":  # NPROC counts every process of our (shared) uid
            processes = _user_process_count() + lim.processes
        config = {"workdir": self.code_workdir, "task_image": self.task_image_path,
                  "cpu_seconds": lim.cpu_seconds, "wall_seconds": lim.wall_seconds,
                  "memory_bytes": lim.memory_mb * 2**20, "file_bytes": lim.file_mb * 2**20,
                  "open_files": lim.open_files, "processes": processes, "output_limit": lim.output_chars,
                  "block_network": True, "preload": ["numpy", "PIL.Image", "PIL.ImageDraw"]}
        try:
            await self._send(config)
            hello = await asyncio.wait_for(self._receive(), lim.start_seconds)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError, OSError) as err:
            await self.stop()
            raise EnvironmentCrashed(f"the pytool sandbox worker did not start: {err!r}; "
                                     f"stderr: {self.stderr_tail()}") from None
        if not hello.get("ready"):
            await self.stop()
            raise EnvironmentCrashed(f"the pytool sandbox worker sent a bad handshake: {hello!r}")
        self.worker_pid = self._find_worker_pid()
        self.starts += 1
        self.fresh = True

    async def stop(self) -> None:
        """Kill the worker and everything in its namespace; safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        self._killing = True
        if proc.returncode is None:
            # Kill the worker (PID 1 of its namespace: the kernel then kills everything in it) and let
            # bwrap reap it and exit; bwrap itself is killed only if it does not.
            if self.worker_pid:
                _kill(self.worker_pid)
            if self.isolation.level != "namespace":
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                _kill(proc.pid)
                await proc.wait()
        if self._stderr_task is not None:
            await self._stderr_task
            self._stderr_task = None
        self.worker_pid = None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    # -- cells ----------------------------------------------------------------------------------------
    async def execute(self, code: str) -> ExecResult:
        """Run one cell. Limits give an error result; a worker killed from outside raises EnvironmentCrashed."""
        async with self._lock:
            if not self.alive():
                raise EnvironmentCrashed(f"the pytool sandbox worker is gone ({self._exit_text()}); "
                                         f"stderr: {self.stderr_tail()}")
            lim = self.limits
            self.fresh = False
            try:
                await self._send({"op": "exec", "code": code})
                reply = await asyncio.wait_for(self._receive(), lim.wall_seconds + lim.grace_seconds)
            except TimeoutError:
                await self.stop()
                await self.start()
                return ExecResult(code, error=f"wall-clock time limit ({_fmt(lim.wall_seconds)} s) exceeded: the "
                                              "code did not stop, so the sandbox was killed.\n", restarted=True)
            except (asyncio.IncompleteReadError, ConnectionError, BrokenPipeError):
                return await self._after_death(code)
            except (ValueError, json.JSONDecodeError) as err:  # the code wrote garbage into the protocol
                await self.stop()
                await self.start()
                return ExecResult(code, error=f"the sandbox's reply was unreadable ({err}); it was restarted.\n",
                                  restarted=True)
            result = ExecResult(code, output=str(reply.get("output", "")), error=reply.get("error"),
                                truncated_bytes=int(reply.get("truncated_bytes", 0)),
                                seconds=float(reply.get("seconds", 0.0)))
            if reply.get("restart"):
                await self.stop()
                await self.start()
                result.restarted = True
            return result

    async def _after_death(self, code: str) -> ExecResult:
        """The worker died during a cell: a SIGKILL/SIGTERM came from outside, anything else from the code."""
        proc = self._proc
        assert proc is not None
        status = await proc.wait()
        if self._stderr_task is not None:
            await self._stderr_task
            self._stderr_task = None
        signo = status - 128 if status > 128 else (-status if status < 0 else 0)
        if signo in (signal.SIGKILL, signal.SIGTERM):
            self._proc = None
            raise EnvironmentCrashed(f"the pytool sandbox worker was killed from outside (signal {signo}) during a "
                                     f"step; stderr: {self.stderr_tail()}")
        await self.stop()
        await self.start()
        how = f"signal {signo}" if signo else f"exit status {status}"
        return ExecResult(code, error=f"the sandbox process ended during the code ({how}); it was restarted.\n",
                          restarted=True)

    # -- plumbing -------------------------------------------------------------------------------------
    async def _send(self, message: dict) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        body = json.dumps(message).encode("utf-8")
        self._proc.stdin.write(HEADER.pack(len(body)) + body)
        await self._proc.stdin.drain()

    async def _receive(self) -> dict:
        assert self._proc is not None and self._proc.stdout is not None
        head = await self._proc.stdout.readexactly(HEADER.size)
        (size,) = HEADER.unpack(head)
        if size > MAX_FRAME:
            raise ValueError(f"frame of {size} bytes")
        message = json.loads(await self._proc.stdout.readexactly(size))
        if not isinstance(message, dict):
            raise ValueError("frame is not a JSON object")  # noqa: TRY004 -- a protocol error, handled as one
        return message

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while True:
            chunk = await proc.stderr.read(4096)
            if not chunk:
                return
            self._stderr_tail += chunk
            del self._stderr_tail[:-4000]

    def stderr_tail(self) -> str:
        return self._stderr_tail.decode("utf-8", "replace").strip()[-2000:] or "(empty)"

    def _exit_text(self) -> str:
        if self._proc is None:
            return "not started"
        return f"exit status {self._proc.returncode}"

    def _find_worker_pid(self) -> int | None:
        """The host pid of the Python worker (below bwrap), so it can be killed directly."""
        assert self._proc is not None
        if self.isolation.level != "namespace":
            return self._proc.pid
        import psutil

        try:
            for child in psutil.Process(self._proc.pid).children(recursive=True):
                if any("worker.py" in part for part in child.cmdline()):
                    return child.pid
        except psutil.Error:
            return None
        return None


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _user_process_count() -> int:
    import psutil

    uid = os.getuid()
    count = 0
    for proc in psutil.process_iter(["uids"]):
        uids = proc.info.get("uids")
        if uids is not None and uids.real == uid:
            count += proc.num_threads() if proc.is_running() else 0
    return count


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


__all__ = [
    "SANDBOX_TASKDIR",
    "SANDBOX_WORKDIR",
    "ExecResult",
    "Isolation",
    "Sandbox",
    "SandboxLimits",
    "probe_isolation",
]
