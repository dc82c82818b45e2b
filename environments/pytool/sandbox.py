"""A persistent, sandboxed Python worker per session: the agent's code never runs in the server.

Isolation, strongest available first (:func:`probe_isolation` picks it once per process):

* ``namespace`` (root with bubblewrap): the worker runs under ``bwrap`` in new network, PID, IPC, UTS
  and mount namespaces, as PID 1 of its PID namespace, under a dedicated unprivileged uid/gid with no
  capabilities and ``no_new_privs``. Its filesystem is a read-only tmpfs root with read-only binds of
  /usr, a few /etc files and the Python installation; the session's working directory is bound
  writable at ``/sandbox`` and the task folder read-only at ``/task``.
* ``rlimits`` (not root, or no bubblewrap): the worker is a plain child process with the same resource
  limits, in its own process group; no network, filesystem or uid isolation.

In both, the worker gets a clean environment (nothing of the server's), no file descriptors but its
protocol pipes, a seccomp filter (:mod:`.seccomp`: no new user or other namespaces, no ptrace), and per
cell: a CPU-time limit, a wall-clock limit, and for the process: RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NOFILE,
RLIMIT_NPROC.

With namespaces, when control groups can be made (:mod:`.cgroups`), the worker also runs in its own
group: memory counted by the kernel for the whole sandbox (memfd and shared memory included), a process
cap, and CPU time accounted to the session. The server, not the cell, keeps the time: it watches the
group's CPU time and the wall clock while a cell runs and kills the sandbox when either runs out, so a
cell that switches off its own timers or forges its reply gains nothing. Between cells the group is
frozen and every process but the worker is killed, so nothing of the agent's runs once a step has
answered (or after the episode ended). The working directory is a size-limited tmpfs (:mod:`.mounts`).

Who is to blame when the worker dies during a cell: the cell (its exit, its signal, the memory limit) once
the worker has acknowledged that the cell started, unless bubblewrap itself was killed from outside; the
agent then sees an error and a fresh worker. A worker that dies before the cell started (frozen between
cells, so not by the agent's hand) is an environment crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mintgym.environments.isolation import cgroups
from mintgym.environments.pytool import seccomp
from mintgym.environments.pytool.protocol import CellReply, cell_reply, read_frame
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
    #: Size of the working directory in MiB (a tmpfs, when the server may mount one).
    disk_mb: int = 256
    #: Extra seconds the server waits past ``wall_seconds`` before it kills a stuck worker.
    grace_seconds: float = 5.0
    #: Seconds to wait for the worker's start-up handshake.
    start_seconds: float = 30.0

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "wall_seconds", "memory_mb", "file_mb", "open_files", "processes",
                     "output_chars", "disk_mb"):
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
    #: "cgroup" (memory, processes and CPU of the whole sandbox) or "rlimits" (per process only).
    resources: str = "rlimits"
    #: Why control groups are not used ("" when they are).
    cgroup_reason: str = ""
    #: "tmpfs" (the working directory has a size quota) or "none".
    disk: str = "none"


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
        _ISOLATION = Isolation("rlimits", "none", "none", "shared", reason, cgroup_reason=reason)
    else:
        cgroup_reason = cgroups.probe()[0]
        _ISOLATION = Isolation("namespace", "namespace", "read-only root, writable /sandbox", "dedicated",
                               resources="rlimits" if cgroup_reason else "cgroup", cgroup_reason=cgroup_reason,
                               disk="tmpfs" if _can_mount_tmpfs() else "none")
    return _ISOLATION


def _can_mount_tmpfs() -> bool:
    """Whether this process may mount the working directory's size-limited tmpfs (root, CAP_SYS_ADMIN)."""
    import tempfile

    from mintgym.environments.isolation import mounts

    with tempfile.TemporaryDirectory(prefix="mintgym-mount-probe-") as folder:
        try:
            mounts.mount_tmpfs(Path(folder), 1, None, family="pytool")
        except OSError:
            return False
        mounts.unmount(Path(folder))
    return True


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


#: MintGym's own packages: never readable in the sandbox (task generators could rebuild the answers).
_OWN_PACKAGES = ("mintgym", "mintgym.environments", "mintgym.agents", "mintgym.evals", "mintgym.action_spaces")


def _hidden_paths(roots: list[str]) -> list[str]:
    """Folders of MintGym's own packages that lie inside the bound Python roots (a non-editable install)."""
    import importlib.util

    found = []
    for name in _OWN_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        for location in (spec.submodule_search_locations or []) if spec else []:
            real = os.path.realpath(location)
            if any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots) and real not in found:
                found.append(real)
    return found


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
    for hidden in _hidden_paths(_python_roots()):  # an empty tmpfs over each of MintGym's own packages
        cmd += ["--tmpfs", hidden]
    cmd += ["--perms", "0755", "--dir", "/opt", "--perms", "0755", "--dir", "/opt/mintgym",
            "--ro-bind", str(WORKER_SCRIPT), "/opt/mintgym/worker.py",
            "--dev", "/dev", "--proc", "/proc",
            "--bind", str(workdir), SANDBOX_WORKDIR, "--ro-bind", str(taskdir), SANDBOX_TASKDIR,
            "--chdir", SANDBOX_WORKDIR, "--remount-ro", "/", "--",
            "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--",
            sys.executable, "-I", "-B", "/opt/mintgym/worker.py"]
    return cmd


#: CPU seconds past a cell's budget before the server kills it (the worker's own, politer timer fires first).
CPU_GRACE_SECONDS = 1.0
#: How often the server looks at a running cell's CPU time.
POLL_SECONDS = 0.1


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
        self._closed = False
        self._seq = 0
        self._cell_started = False
        #: The sandbox's control group (namespace isolation with cgroups only), made on first start.
        self.cgroup: cgroups.Cgroup | None = None
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

    @property
    def uses_cgroup(self) -> bool:
        return self.isolation.level == "namespace" and self.isolation.resources == "cgroup"

    def cpu_seconds(self) -> float | None:
        """CPU time every process of this sandbox used so far (None without a control group)."""
        return self.cgroup.cpu_seconds() if self.cgroup is not None else None

    def describe(self) -> dict[str, Any]:
        info = asdict(self.isolation)
        info.update(sandbox_uid=self.uid, workdir=self.code_workdir, task_image=self.task_image_path,
                    limits=asdict(self.limits), seccomp=seccomp.supported(), cpu_seconds_used=self.cpu_seconds())
        return info

    # -- lifecycle ------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start a fresh worker (the working directory is left as it is); refused once closed."""
        if self._proc is not None:
            await self.stop()
        self._refuse_if_closed()
        lim = self.limits
        if self.isolation.level == "namespace":
            cmd = bwrap_command(self.workdir, self.taskdir, int(self.uid))
        else:
            cmd = [sys.executable, "-I", "-B", str(WORKER_SCRIPT)]
        if self.uses_cgroup and self.cgroup is None:
            self.cgroup = await _new_cgroup(lim.memory_mb * 2**20, lim.processes)
            await self._abandon_if_closed()
        env = _clean_env(self.code_workdir)
        self._stderr_tail = bytearray()
        self._proc = await asyncio.create_subprocess_exec(
            *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=env, cwd=str(self.workdir), start_new_session=True, close_fds=True)
        self._stderr_task = asyncio.create_task(self._drain_stderr(self._proc))
        await self._abandon_if_closed()
        processes = lim.processes
        if self.isolation.level != "namespace":  # NPROC counts every process of our (shared) uid
            processes = _user_process_count() + lim.processes
        config = {"workdir": self.code_workdir, "task_image": self.task_image_path,
                  "cpu_seconds": lim.cpu_seconds, "wall_seconds": lim.wall_seconds,
                  "memory_bytes": lim.memory_mb * 2**20, "file_bytes": lim.file_mb * 2**20,
                  "open_files": lim.open_files, "processes": processes, "output_limit": lim.output_chars,
                  "block_network": True, "preload": ["numpy", "PIL.Image", "PIL.ImageDraw"],
                  "seccomp": seccomp.build_filter().hex() if seccomp.supported() else ""}
        try:
            if self.isolation.level == "namespace":
                # the worker waits for its configuration: put it in its group before it runs anything
                self.worker_pid = await self._wait_worker_pid(lim.start_seconds)
                if self.cgroup is not None:
                    self.cgroup.freeze(False)  # a restart finds the group frozen since the last cell
                    self.cgroup.add(self.worker_pid)
            else:
                self.worker_pid = self._proc.pid
            await self._send(config)
            hello = await asyncio.wait_for(self._receive(), lim.start_seconds)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError, OSError, ValueError) as err:
            await self.stop()
            raise EnvironmentCrashed(f"the pytool sandbox worker did not start: {err!r}; "
                                     f"stderr: {self.stderr_tail()}") from None
        if not hello.get("ready"):
            await self.stop()
            raise EnvironmentCrashed(f"the pytool sandbox worker sent a bad handshake: {hello!r}")
        self._pause()
        self.starts += 1
        self.fresh = True

    async def stop(self) -> None:
        """Kill the worker and everything in its namespace; safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.returncode is None:
            # Kill the worker (PID 1 of its namespace: the kernel then kills everything in it) and let
            # bwrap reap it and exit; bwrap itself is killed only if it does not.
            if self.cgroup is not None:
                self.cgroup.kill_all()
            if self.worker_pid:
                _kill(self.worker_pid)
            elif self.isolation.level == "namespace":  # stopped while starting: the worker is not known yet
                for pid in _descendants(proc.pid):
                    _kill(pid)
            if self.isolation.level != "namespace":
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                _kill(proc.pid)
                # Bounded too: a close must never hang the server (the group's cgroup.kill in close() and the
                # reaper end whatever is left).
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), 5)
        await self._end_stderr()
        self.worker_pid = None

    async def close(self) -> None:
        """Stop the worker and delete the control group; safe to call twice, and while a cell runs (the
        cell then fails with EnvironmentCrashed, and nothing restarts the worker)."""
        self._closed = True
        await self.stop()
        if self.cgroup is not None:
            group, self.cgroup = self.cgroup, None
            await asyncio.to_thread(group.remove)

    async def _abandon_if_closed(self) -> None:
        """In ``start``, after each wait: a close that came meanwhile found nothing yet to end; end it here."""
        if self._closed:
            await self.close()
            self._refuse_if_closed()

    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise EnvironmentCrashed("the pytool sandbox was closed")

    # -- cells ----------------------------------------------------------------------------------------
    async def execute(self, code: str) -> ExecResult:
        """Run one cell. Limits and the cell's own faults give an error result; a sandbox killed from
        outside raises EnvironmentCrashed."""
        async with self._lock:
            if not self.alive():
                raise EnvironmentCrashed(f"the pytool sandbox worker is gone ({self._exit_text()}); "
                                         f"stderr: {self.stderr_tail()}")
            lim = self.limits
            self.fresh = False
            self._seq += 1
            seq = self._seq
            self._cell_started = False
            started = time.monotonic()
            ooms = self.cgroup.oom_kills() if self.cgroup is not None else 0
            cpu_start = self.cpu_seconds()
            self._resume()
            try:
                await self._send({"op": "exec", "code": code, "seq": seq})
                reply = await self._await_reply(seq, cpu_start)
            except _LimitHit as hit:
                await self._restart()
                return ExecResult(code, error=hit.message, restarted=True, seconds=time.monotonic() - started)
            except (asyncio.IncompleteReadError, ConnectionError, BrokenPipeError):
                return await self._after_death(code, ooms)
            except ValueError as err:  # the code wrote garbage into the protocol (ProtocolError)
                await self._restart()
                return ExecResult(code, error=f"the sandbox's reply was unreadable ({err}); it was restarted.\n",
                                  restarted=True, seconds=time.monotonic() - started)
            self._pause()
            over = max(len(reply.output) - lim.output_chars, 0)
            result = ExecResult(code, output=reply.output[:lim.output_chars], error=reply.error,
                                truncated_bytes=over + reply.truncated_bytes, seconds=time.monotonic() - started)
            if reply.restart:
                await self._restart()
                result.restarted = True
            return result

    async def _await_reply(self, seq: int, cpu_start: float | None) -> CellReply:
        """The reply to cell ``seq``, while the server (not the cell) keeps its wall-clock and CPU time."""
        lim = self.limits
        deadline = time.monotonic() + lim.wall_seconds + lim.grace_seconds
        receiving = asyncio.ensure_future(self._receive_reply(seq))
        try:
            while True:
                done, _ = await asyncio.wait({receiving}, timeout=POLL_SECONDS)
                if done:
                    return receiving.result()
                if self._proc is not None and self._proc.returncode is not None and self._proc.returncode < 0:
                    status = self._proc.returncode  # bubblewrap itself was killed: not the cell's doing
                    await self.stop()
                    raise EnvironmentCrashed(f"the pytool sandbox was killed from outside (signal {-status}) "
                                             f"during a step; stderr: {self.stderr_tail()}")
                if cpu_start is not None and self.cgroup is not None:
                    used = self.cgroup.cpu_seconds() - cpu_start
                    if used > lim.cpu_seconds + CPU_GRACE_SECONDS:
                        raise _LimitHit(f"CPU time limit ({_fmt(lim.cpu_seconds)} s) exceeded: the code did not "
                                        "stop, so the sandbox was killed.\n")
                if time.monotonic() > deadline:
                    raise _LimitHit(f"wall-clock time limit ({_fmt(lim.wall_seconds)} s) exceeded: the code did "
                                    "not stop, so the sandbox was killed.\n")
        finally:
            if not receiving.done():
                receiving.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await receiving

    async def _receive_reply(self, seq: int) -> CellReply:
        """Read frames until the one answering ``seq`` (replies the cell wrote for other cells are dropped)."""
        for _ in range(1000):
            message = await self._receive()
            if message.get("seq") == seq:
                if message.get("started") is True:
                    self._cell_started = True
                    continue
                return cell_reply(message)
        raise ValueError("the sandbox sent too many replies that answer no request")

    async def _restart(self) -> None:
        await self.stop()
        await self.start()

    async def _after_death(self, code: str, ooms_before: int) -> ExecResult:
        """The worker died during a cell: the cell's doing unless bubblewrap itself was killed from outside."""
        proc = self._proc
        if proc is None or self._closed:  # closed (the session deleted) while the cell ran: not the cell's doing
            raise EnvironmentCrashed("the pytool sandbox was closed during the step")
        status = await proc.wait()
        await self._end_stderr()
        oom = self.cgroup is not None and self.cgroup.oom_kills() > ooms_before
        outside = not self._cell_started or (status < 0 and self.isolation.level == "namespace")
        if outside and not oom:
            self._proc = None
            why = f"signal {-status}" if status < 0 else f"exit status {status}"
            raise EnvironmentCrashed(f"the pytool sandbox was killed from outside ({why}) "
                                     f"{'during' if self._cell_started else 'before'} a step; "
                                     f"stderr: {self.stderr_tail()}")
        await self._restart()
        if oom:
            return ExecResult(code, error=f"MemoryError: the sandbox's memory limit ({self.limits.memory_mb} MiB, "
                                          "shared memory and files in the working directory included) was "
                                          "exceeded: the sandbox was restarted.\n", restarted=True)
        signo = status - 128 if status > 128 else (-status if status < 0 else 0)
        how = f"signal {signo}" if signo else f"exit status {status}"
        return ExecResult(code, error=f"the sandbox process ended during the code ({how}); it was restarted.\n",
                          restarted=True)

    def _pause(self) -> None:
        """Between cells: kill every process of the cell but the worker, and freeze the group."""
        if self.cgroup is None:
            return
        spare = (self.worker_pid,) if self.worker_pid else ()
        self.cgroup.freeze(True)  # first, so nothing forks while the strays are killed (SIGKILL still lands)
        self.cgroup.kill_all(spare=spare)

    def _resume(self) -> None:
        if self.cgroup is not None:
            self.cgroup.freeze(False)

    # -- plumbing -------------------------------------------------------------------------------------
    async def _send(self, message: dict) -> None:
        if self._proc is None or self._proc.stdin is None:
            raise ConnectionError("the sandbox worker is stopped")
        body = json.dumps(message).encode("utf-8")
        self._proc.stdin.write(HEADER.pack(len(body)) + body)
        await self._proc.stdin.drain()

    async def _receive(self) -> dict:
        if self._proc is None or self._proc.stdout is None:
            raise ConnectionError("the sandbox worker is stopped")
        return await read_frame(self._proc.stdout, min(MAX_FRAME, 8 * self.limits.output_chars + 1_000_000))

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while True:
            chunk = await proc.stderr.read(4096)
            if not chunk:
                return
            self._stderr_tail += chunk
            del self._stderr_tail[:-4000]

    async def _end_stderr(self) -> None:
        """Wait for the stderr reader, which ends at EOF once the last holder of the pipe is gone."""
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stderr_task, 5)
            self._stderr_task = None

    def stderr_tail(self) -> str:
        return self._stderr_tail.decode("utf-8", "replace").strip()[-2000:] or "(empty)"

    def _exit_text(self) -> str:
        if self._proc is None:
            return "not started"
        return f"exit status {self._proc.returncode}"

    async def _wait_worker_pid(self, timeout: float) -> int:
        """The host pid of the Python worker (below bwrap), once bwrap has started it."""
        import psutil

        proc = self._proc
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is None or self._proc is not proc:
                raise ConnectionError("the sandbox was stopped while it started")
            if proc.returncode is not None:
                raise ConnectionError(f"bwrap exited with status {proc.returncode}")
            try:
                for child in psutil.Process(proc.pid).children(recursive=True):
                    if child.cmdline()[-1:] == ["/opt/mintgym/worker.py"]:
                        return child.pid
            except psutil.Error:
                pass
            await asyncio.sleep(0.01)
        raise TimeoutError("the sandbox worker process did not appear")


class _LimitHit(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


async def _new_cgroup(memory_bytes: int, processes: int) -> cgroups.Cgroup:
    """A new control group, made on a thread; one whose caller was cancelled meanwhile is removed, not leaked."""
    making = asyncio.get_running_loop().run_in_executor(None, cgroups.Cgroup.create, "pytool",
                                                                cgroups.Limits(memory_bytes, processes))
    try:
        return await asyncio.shield(making)
    except asyncio.CancelledError:
        making.add_done_callback(_remove_unclaimed)
        raise


def _remove_unclaimed(making: asyncio.Future) -> None:
    if not making.cancelled() and making.exception() is None:
        asyncio.get_running_loop().run_in_executor(None, making.result().remove)


def _descendants(pid: int) -> list[int]:
    import psutil

    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


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
