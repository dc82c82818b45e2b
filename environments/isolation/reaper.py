"""What a server leaves behind when it is killed: a helper process that removes it when the server dies.

A sandbox's control groups and its tmpfs quota live outside the server process: a SIGKILLed server would
leave frozen processes in their groups and the files its sessions wrote in memory. The reaper, started once
per server and family (outside every group, never frozen), reads a pipe only the server holds; when the pipe
ends it kills and removes the server's groups (``cgroup.kill`` kills frozen processes too) and detaches the
tmpfs mounts named for the server (:func:`mount_source`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: Run by the reaper (standard library only).
_SCRIPT = """
import ctypes, os, sys, time
sys.stdin.buffer.read()  # returns when the server that holds the other end of the pipe is gone
prefix, source, core, others = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
libc = ctypes.CDLL(None, use_errno=True)
with open("/proc/self/mounts") as f:
    points = [line.split()[1] for line in f if line.split()[0] == source]
for point in sorted(points, key=len, reverse=True):
    libc.umount2(point.replace("\\\\040", " ").encode(), 2)
if core:
    for name in sorted(n for n in os.listdir(core) if n.startswith(prefix)):
        group = os.path.join(core, name)
        for file, value in (("cgroup.freeze", "0"), ("cgroup.kill", "1")):
            try:
                with open(os.path.join(group, file), "w") as f:
                    f.write(value)
            except OSError:
                pass
        for _ in range(100):
            try:
                with open(os.path.join(group, "cgroup.procs")) as f:
                    if not f.read().split():
                        break
            except OSError:
                break
            time.sleep(0.05)
        for parent in [core, *others]:
            try:
                os.rmdir(os.path.join(parent, name))
            except OSError:
                pass
"""
_reapers: dict[str, subprocess.Popen] = {}


def group_prefix(family: str) -> str:
    """The name every control group of ``family`` made by this server starts with."""
    return f"mintgym-{family}-{os.getpid()}-"


def mount_source(family: str) -> str:
    """The source name of this server's tmpfs mounts of ``family`` (the reaper detaches them)."""
    return f"mintgym-{family}-{os.getpid()}"


def ensure(family: str, cgroup_parents: dict[str, Path] | None = None) -> None:
    """Start this server's reaper for ``family`` once (again if it died); ``cgroup_parents``: where the
    family's groups are made (role -> folder, the unified one as ``core``), or None without groups."""
    running = _reapers.get(family)
    if running is not None and running.poll() is None:
        return
    core = str(cgroup_parents["core"]) if cgroup_parents else ""
    others = [str(p) for p in dict.fromkeys((cgroup_parents or {}).values()) if str(p) != core]
    _reapers[family] = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _SCRIPT, group_prefix(family), mount_source(family), core, *others],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        close_fds=True)
