"""A sandbox's disk quota: a size-limited tmpfs mounted on its host folder.

The server (root) mounts it in its own mount namespace, so the server reads the sandbox's files where it
always did, and the sandbox's view of that folder sees the tmpfs. Its pages are charged to the memory control
group of the process that writes them, i.e. the sandbox's, so the memory limit counts them too.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

from mintgym.environments.isolation import cgroups, reaper

_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x2, 0x4, 0x8
_MNT_DETACH = 0x2
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def mount_tmpfs(path: Path, size_mb: int, uid: int | None, *, family: str, inodes: int = 65536,
                mode: int = 0o700, noexec: bool = True) -> None:
    """Mount a tmpfs of ``size_mb`` MiB at ``path`` (owned by ``uid``, ``mode``), named for this server and
    ``family`` so that the reaper detaches it should the server be killed; raises OSError."""
    reaper.ensure(family, cgroups.probe()[1] or None)  # one reaper per family: it must know the groups too
    source = reaper.mount_source(family)
    owner = f",uid={uid},gid={uid}" if uid is not None else ""
    data = f"size={int(size_mb)}m,nr_inodes={int(inodes)},mode={mode:o}{owner}".encode()
    flags = _MS_NOSUID | _MS_NODEV | (_MS_NOEXEC if noexec else 0)
    if _libc.mount(source.encode(), os.fsencode(str(path)), b"tmpfs", flags, data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mounting a {size_mb} MiB tmpfs on {path} failed: {os.strerror(err)}")


def unmount(path: Path) -> None:
    """Detach whatever is mounted at ``path`` (nothing when nothing is)."""
    if _libc.umount2(os.fsencode(str(path)), _MNT_DETACH) != 0:
        err = ctypes.get_errno()
        if err not in (22, 2):  # EINVAL: not a mount point; ENOENT: gone
            raise OSError(err, f"unmounting {path} failed: {os.strerror(err)}")


def mounts_under(folder: Path) -> list[Path]:
    """Mount points at or below ``folder`` (deepest first), from /proc/self/mounts."""
    prefix = str(folder).rstrip("/") + "/"
    found = []
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                point = line.split()[1].replace("\\040", " ")
                if point == str(folder) or point.startswith(prefix):
                    found.append(Path(point))
    except OSError:
        return []
    return sorted(found, key=lambda p: len(str(p)), reverse=True)


def unmount_all(folder: Path) -> None:
    """Detach every mount at or below ``folder`` (a crashed server's leftovers)."""
    for point in mounts_under(folder):
        unmount(point)
