"""A control group per sandbox: memory that counts tmpfs, memfd and shared memory, a process cap, a CPU quota,
CPU accounting, freezing, and killing every process at once.

Works on cgroup v2 (``/sys/fs/cgroup/cgroup.controllers``) and on the hybrid v1 layout (memory, pids, cpu and
cpuacct hierarchies, plus the unified v2 hierarchy for ``cgroup.freeze``/``cgroup.kill``). On a pure v1 host
(no unified hierarchy) :func:`probe` says so and callers fall back to weaker containment. Groups are made below
this process's own group, named ``mintgym-<family>-<pid>-<n>``; :func:`sweep_stale` removes those of dead
servers, and a reaper (:mod:`.reaper`) started with the first group removes this server's when it dies.

``cgroup.kill`` is what makes a reset complete: the kernel kills every process of the group, including one
forked while the kill runs, so no process can dodge it the way it can dodge a scan of ``/proc``.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from mintgym.environments.isolation import reaper

ROOT = Path("/sys/fs/cgroup")
#: Roles of a group's directories: role -> the v1 controller whose hierarchy holds it ("" is unified).
V1_ROLES = {"memory": "memory", "pids": "pids", "cpu": "cpu", "cpuacct": "cpuacct", "core": ""}
CFS_PERIOD_US = 100_000
_counter = itertools.count(1)
_probed: tuple[str, dict[str, Path]] | None = None


@dataclass(frozen=True)
class Limits:
    """What one group may use; None leaves that resource unlimited."""

    memory_bytes: int | None = None
    processes: int | None = None
    #: CPU time per wall-clock second, in cores (1.5 = one and a half cores).
    cpus: float | None = None


def _own_paths() -> dict[str, str]:
    """This process's group per hierarchy: controller name (or "" for v2) -> path."""
    paths: dict[str, str] = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                paths[name] = path
    return paths


def _parents() -> dict[str, Path]:
    """Where to make groups: role -> parent directory."""
    own = _own_paths()
    if (ROOT / "cgroup.controllers").exists():  # pure v2: one directory does everything
        base = ROOT / own.get("", "/").lstrip("/")
        return {role: base for role in V1_ROLES}
    found = {}
    for role, controller in V1_ROLES.items():
        mount = ROOT / ("unified" if not controller else controller)
        if controller in own and (mount / "cgroup.procs").exists():
            found[role] = mount / own[controller].lstrip("/")
    return found


def probe() -> tuple[str, dict[str, Path]]:
    """("", parents) when groups can be made here, else (the reason, {}). Cached per process."""
    global _probed
    if _probed is not None:
        return _probed
    reason, parents = "", {}
    if os.geteuid() != 0:
        reason = "not running as root"
    else:
        try:
            parents = _parents()
        except OSError as err:
            reason = f"cannot read /proc/self/cgroup: {err}"
        missing = [role for role in V1_ROLES if role not in parents]
        if not reason and missing:
            reason = (f"no cgroup hierarchy for {', '.join(missing)} (a pure cgroup v1 host has no cgroup.kill: "
                      "mount the unified hierarchy, or use cgroup v2)")
        if not reason:
            try:
                Cgroup.create("probe", Limits(64 * 2**20, 8, 1.0), parents).remove()
            except OSError as err:
                reason = f"cannot make a control group: {err}"
    _probed = (reason, {} if reason else parents)
    return _probed


class Cgroup:
    """One sandbox's group: ``create`` makes it with its limits, ``remove`` kills and deletes it."""

    def __init__(self, dirs: dict[str, Path], v2: bool):
        self.dirs = dirs
        self.v2 = v2

    @property
    def name(self) -> str:
        return self.dirs["core"].name

    @classmethod
    def create(cls, family: str, limits: Limits, parents: dict[str, Path] | None = None) -> Cgroup:
        """A new group ``mintgym-<family>-<pid>-<n>`` with ``limits``; raises OSError when it cannot be made."""
        parents = parents or probe()[1]
        if not parents:
            raise OSError(probe()[0])
        name = f"{reaper.group_prefix(family)}{next(_counter)}"
        reaper.ensure(family, parents)
        v2 = parents["memory"] == parents["core"]
        dirs = {role: parent / name for role, parent in parents.items()}
        made: list[Path] = []
        try:
            for folder in dict.fromkeys(dirs.values()):
                folder.mkdir()
                made.append(folder)
            group = cls(dirs, v2)
            group._apply(limits)
            return group
        except OSError:
            for folder in reversed(made):
                _rmdir(folder)
            raise

    def _apply(self, limits: Limits) -> None:
        if limits.memory_bytes is not None:
            if self.v2:
                _write(self.dirs["memory"] / "memory.max", limits.memory_bytes)
                _write_try(self.dirs["memory"] / "memory.swap.max", 0)
            else:
                _write(self.dirs["memory"] / "memory.limit_in_bytes", limits.memory_bytes)
                _write_try(self.dirs["memory"] / "memory.memsw.limit_in_bytes", limits.memory_bytes)
        if limits.processes is not None:
            _write(self.dirs["pids"] / "pids.max", limits.processes)
        if limits.cpus is not None:
            quota = max(1000, int(limits.cpus * CFS_PERIOD_US))
            if self.v2:
                _write(self.dirs["cpu"] / "cpu.max", f"{quota} {CFS_PERIOD_US}")
            else:
                _write(self.dirs["cpu"] / "cpu.cfs_period_us", CFS_PERIOD_US)
                _write(self.dirs["cpu"] / "cpu.cfs_quota_us", quota)

    def set_cpu_weight(self, share: float) -> None:
        """Weigh the group as ``share`` fresh groups when the CPU is contended. A fresh group (one sandbox's) weighs
        as much as a process session outside any group; a host whose one group serves n sessions (the web
        host's Chromium) sets n, so each of its sessions gets the CPU a sandboxed session of another domain gets.
        Capped by the kernel's range: 256 on cgroup v1 (cpu.shares), 100 on v2 (cpu.weight)."""
        if self.v2:
            _write(self.dirs["cpu"] / "cpu.weight", min(10000, max(1, round(100 * share))))
        else:
            _write(self.dirs["cpu"] / "cpu.shares", min(262144, max(2, round(1024 * share))))

    # -- membership ---------------------------------------------------------------------------------------
    def procs_files(self) -> list[Path]:
        """The ``cgroup.procs`` file of every hierarchy: a process that writes its pid to each joins the group."""
        return [folder / "cgroup.procs" for folder in dict.fromkeys(self.dirs.values())]

    def join_script(self) -> str:
        """A shell command that moves the shell running it (``$$``) into this group, and so what it execs."""
        return 'echo $$ | tee ' + " ".join(f"'{p}'" for p in self.procs_files()) + ' >/dev/null'

    def join_command(self, argv: list[str]) -> list[str]:
        """``argv`` started inside this group: a shell joins it, then execs ``argv`` (no preexec_fn needed)."""
        return ["/bin/sh", "-c", self.join_script() + ' && exec "$@"', "sh", *argv]

    def add(self, pid: int) -> None:
        """Move ``pid`` into every hierarchy of the group (before it runs any untrusted code)."""
        for path in self.procs_files():
            _write(path, pid)

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.dirs["core"] / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    # -- accounting -----------------------------------------------------------------------------------------
    def cpu_seconds(self) -> float:
        """CPU time used by every process that ever ran in the group."""
        try:
            if self.v2:
                for line in (self.dirs["cpu"] / "cpu.stat").read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) / 1e6
                return 0.0
            return int((self.dirs["cpuacct"] / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return 0.0

    def memory_bytes(self) -> int:
        """Memory charged to the group now (tmpfs pages its processes wrote included)."""
        return _read_int(self.dirs["memory"] / ("memory.current" if self.v2 else "memory.usage_in_bytes"))

    def memory_peak(self) -> int:
        return _read_int(self.dirs["memory"] / ("memory.peak" if self.v2 else "memory.max_usage_in_bytes"))

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the memory limit."""
        return _read_key(self.dirs["memory"] / ("memory.events" if self.v2 else "memory.oom_control"), "oom_kill")

    def process_limit_hits(self) -> int:
        """How many forks the process cap refused."""
        return _read_key(self.dirs["pids"] / "pids.events", "max")

    # -- control --------------------------------------------------------------------------------------------
    def freeze(self, frozen: bool) -> None:
        """Stop (or resume) every process of the group."""
        _write(self.dirs["core"] / "cgroup.freeze", 1 if frozen else 0)

    def kill_all(self, spare: tuple[int, ...] = ()) -> int:
        """SIGKILL every process of the group but ``spare``; returns how many were signalled."""
        if not spare and (self.dirs["core"] / "cgroup.kill").exists():
            count = len(self.pids())
            _write(self.dirs["core"] / "cgroup.kill", 1)
            return count
        count = 0
        for _ in range(50):  # processes may fork while we kill: repeat until only the spared are left
            victims = [p for p in self.pids() if p not in spare]
            if not victims:
                break
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                    count += 1
                except ProcessLookupError:
                    pass
        return count

    def kill_and_wait(self, timeout: float = 5.0, spare: tuple[int, ...] = ()) -> int:
        """Kill every process but ``spare`` and wait until none is left; RuntimeError names any that survive."""
        count = 0
        deadline = time.monotonic() + timeout
        while True:
            count += self.kill_all(spare)
            left = [pid for pid in self.pids() if pid not in spare]
            if not left:
                return count
            if time.monotonic() > deadline:
                raise RuntimeError(f"control group {self.name}: processes {left} survive SIGKILL")
            time.sleep(0.01)

    def remove(self, timeout: float = 5.0) -> None:
        """Kill what is left, wait for the group to empty, delete it; safe to call twice."""
        if not self.dirs["core"].exists():
            return
        try:
            self.freeze(False)
        except OSError:
            pass
        self.kill_all()
        deadline = time.monotonic() + timeout
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.02)
        for folder in dict.fromkeys(self.dirs.values()):
            _rmdir(folder, tries=100)


def sweep_stale(family: str) -> int:
    """Remove the groups of ``family`` left by servers that died; returns how many were removed."""
    reason, parents = probe()
    if reason:
        return 0
    removed = 0
    prefix = f"mintgym-{family}-"
    for name in sorted(p.name for p in parents["core"].glob(f"{prefix}*-*")):
        pid_text = name[len(prefix):].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid() or _pid_alive(int(pid_text)):
            continue
        Cgroup({role: parent / name for role, parent in parents.items()}, parents["memory"] == parents["core"]
               ).remove(timeout=2.0)
        removed += 1
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _rmdir(folder: Path, tries: int = 1) -> None:
    for _ in range(tries):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return 0


def _read_key(path: Path, wanted: str) -> int:
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == wanted:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _write(path: Path, value: int | str) -> None:
    with open(path, "w") as f:
        f.write(str(value))


def _write_try(path: Path, value: int | str) -> None:
    try:
        _write(path, value)
    except OSError:
        pass
