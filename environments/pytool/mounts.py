"""The working directory's disk quota: a size-limited tmpfs mounted on the session's host folder.

The server (root) mounts it in its own mount namespace, so the server reads the session's files where it
always did, and the sandbox's bind mount of that folder sees the tmpfs. Its pages are charged to the
memory control group of the process that writes them, i.e. the sandbox's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x2, 0x4, 0x8
_MNT_DETACH = 0x2
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def mount_tmpfs(path: Path, size_mb: int, uid: int | None, inodes: int = 65536) -> None:
    """Mount a tmpfs of ``size_mb`` MiB at ``path`` (mode 0700, owned by ``uid``); raises OSError."""
    owner = f",uid={uid},gid={uid}" if uid is not None else ""
    data = f"size={int(size_mb)}m,nr_inodes={int(inodes)},mode=0700{owner}".encode()
    rc = _libc.mount(b"mintgym-pytool", os.fsencode(str(path)), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, data)
    if rc != 0:
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
