"""A control group per sandbox: memory that counts memfd and shared memory, a process cap, CPU accounting,
freezing between cells and killing every process at once.

Works on cgroup v2 (``/sys/fs/cgroup/cgroup.controllers``) and on the hybrid v1 layout (memory, pids and
cpuacct hierarchies, plus the unified v2 hierarchy for ``cgroup.freeze``/``cgroup.kill``). Groups are made
below this process's own group, named ``mintgym-pytool-<pid>-<n>``; :func:`sweep_stale` removes those of
dead servers. :func:`probe` says whether it works here and, if not, why.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PREFIX = "mintgym-pytool-"
_counter = itertools.count(1)
_PROBED: tuple[str, dict[str, Path]] | None = None


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
    """Where to make sandbox groups: role ("memory", "pids", "cpu", "core") -> parent directory."""
    own = _own_paths()
    if (ROOT / "cgroup.controllers").exists():  # pure v2: one directory does everything
        base = ROOT / own.get("", "/").lstrip("/")
        return {"memory": base, "pids": base, "cpu": base, "core": base}
    found = {}
    for role, controller in (("memory", "memory"), ("pids", "pids"), ("cpu", "cpuacct")):
        if controller in own and (ROOT / controller).is_dir():
            found[role] = ROOT / controller / own[controller].lstrip("/")
    if "" in own and (ROOT / "unified" / "cgroup.procs").exists():
        found["core"] = ROOT / "unified" / own[""].lstrip("/")
    return found


def probe() -> tuple[str, dict[str, Path]]:
    """("", parents) when sandbox groups can be made here, else (the reason, {})."""
    global _PROBED
    if _PROBED is not None:
        return _PROBED
    reason = ""
    parents: dict[str, Path] = {}
    if os.geteuid() != 0:
        reason = "not running as root"
    else:
        try:
            parents = _parents()
        except OSError as err:
            reason = f"cannot read /proc/self/cgroup: {err}"
        missing = [r for r in ("memory", "pids", "cpu", "core") if r not in parents]
        if not reason and missing:
            reason = f"no cgroup hierarchy for {', '.join(missing)}"
        if not reason:
            try:
                group = SandboxCgroup.create(64 * 2**20, 8, parents)
                group.remove()
            except OSError as err:
                reason = f"cannot make a control group: {err}"
    _PROBED = (reason, {} if reason else parents)
    return _PROBED


class SandboxCgroup:
    """One sandbox's group(s). ``create`` makes them with the limits; ``remove`` kills and deletes them."""

    def __init__(self, dirs: dict[str, Path], v2: bool):
        self.dirs = dirs
        self.v2 = v2
        self._cpu_start_ns = 0

    @classmethod
    def create(cls, memory_bytes: int, processes: int, parents: dict[str, Path] | None = None) -> SandboxCgroup:
        parents = parents or probe()[1]
        if not parents:
            raise OSError(probe()[0])
        name = f"{PREFIX}{os.getpid()}-{next(_counter)}"
        _ensure_reaper(parents)
        v2 = parents["memory"] == parents["core"]
        dirs = {role: parent / name for role, parent in parents.items()}
        made = []
        try:
            for d in dict.fromkeys(dirs.values()):
                d.mkdir()
                made.append(d)
            group = cls(dirs, v2)
            if v2:
                _write(dirs["memory"] / "memory.max", memory_bytes)
                _write_try(dirs["memory"] / "memory.swap.max", 0)
            else:
                _write(dirs["memory"] / "memory.limit_in_bytes", memory_bytes)
                _write_try(dirs["memory"] / "memory.memsw.limit_in_bytes", memory_bytes)
            _write(dirs["pids"] / "pids.max", processes)
            return group
        except OSError:
            for d in reversed(made):
                try:
                    d.rmdir()
                except OSError:
                    pass
            raise

    # -- membership -----------------------------------------------------------------------------------
    def add(self, pid: int) -> None:
        """Move ``pid`` into every hierarchy of the group (before it runs any agent code)."""
        for d in dict.fromkeys(self.dirs.values()):
            _write(d / "cgroup.procs", pid)

    def pids(self) -> list[int]:
        try:
            text = (self.dirs["core"] / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    # -- accounting -----------------------------------------------------------------------------------
    def cpu_seconds(self) -> float:
        """CPU time used by every process that ever ran in the group."""
        try:
            if self.v2:
                for line in (self.dirs["cpu"] / "cpu.stat").read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) / 1e6
                return 0.0
            return int((self.dirs["cpu"] / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return 0.0

    def memory_peak(self) -> int:
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        try:
            return int((self.dirs["memory"] / name).read_text())
        except (OSError, ValueError):
            return 0

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the memory limit."""
        name = "memory.events" if self.v2 else "memory.oom_control"
        try:
            for line in (self.dirs["memory"] / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    # -- control --------------------------------------------------------------------------------------
    def freeze(self, frozen: bool) -> None:
        """Stop (or resume) every process of the group: nothing of the sandbox runs between cells."""
        _write(self.dirs["core"] / "cgroup.freeze", 1 if frozen else 0)

    def kill_all(self, spare: tuple[int, ...] = ()) -> int:
        """SIGKILL every process of the group but ``spare``; returns how many were signalled."""
        count = 0
        if not spare and (self.dirs["core"] / "cgroup.kill").exists():
            _write(self.dirs["core"] / "cgroup.kill", 1)
            return len(self.pids())
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
        for d in dict.fromkeys(self.dirs.values()):
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


#: Run by the reaper (standard library only): wait for this server to die, then end its sandboxes.
_REAPER = """
import os, sys, time
sys.stdin.buffer.read()  # returns when the server that holds the other end of the pipe is gone
prefix, cores, others = sys.argv[1], sys.argv[2], sys.argv[3:]
for name in sorted(n for n in os.listdir(cores) if n.startswith(prefix)):
    core = os.path.join(cores, name)
    for file, value in (("cgroup.freeze", "0"), ("cgroup.kill", "1")):
        try:
            with open(os.path.join(core, file), "w") as f:
                f.write(value)
        except OSError:
            pass
    for _ in range(100):
        try:
            with open(os.path.join(core, "cgroup.procs")) as f:
                if not f.read().split():
                    break
        except OSError:
            break
        time.sleep(0.05)
    for parent in [cores, *others]:
        try:
            os.rmdir(os.path.join(parent, name))
        except OSError:
            pass
"""
_reaper = None


def _ensure_reaper(parents: dict[str, Path]) -> None:
    """Start, once per server process, a helper that ends this server's sandboxes when the server dies.

    Between cells a sandbox is frozen, and a frozen worker whose server was SIGKILLed would never run again
    to notice: the helper (outside every sandbox, never frozen) reads a pipe only the server holds, and at
    its end kills and removes the server's groups (``cgroup.kill`` kills frozen processes too)."""
    global _reaper
    if _reaper is not None and _reaper.poll() is None:
        return
    import subprocess
    import sys

    core = parents["core"]
    others = [str(p) for p in dict.fromkeys(parents.values()) if p != core]
    _reaper = subprocess.Popen([sys.executable, "-I", "-S", "-c", _REAPER, f"{PREFIX}{os.getpid()}-", str(core),
                                *others], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)


def sweep_stale() -> int:
    """Remove sandbox groups left by pytool servers that died; returns how many were removed."""
    reason, parents = probe()
    if reason:
        return 0
    removed = 0
    for name in sorted(p.name for p in parents["core"].glob(f"{PREFIX}*-*")):
        pid_text = name[len(PREFIX):].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid() or _pid_alive(int(pid_text)):
            continue
        dirs = {role: parent / name for role, parent in parents.items()}
        SandboxCgroup(dirs, parents["memory"] == parents["core"]).remove(timeout=2.0)
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


def _write(path: Path, value: int | str) -> None:
    with open(path, "w") as f:
        f.write(str(value))


def _write_try(path: Path, value: int | str) -> None:
    try:
        _write(path, value)
    except OSError:
        pass
