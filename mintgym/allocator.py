"""Keep glibc from handing frame-sized buffers back to the kernel after every step.

A step allocates and frees a few multi-megabyte buffers (a 1280x720 RGB frame is 2.7 MB). With glibc's
defaults each free beyond the dynamic trim threshold returns the memory to the kernel and the next step
page-faults it back in: measured here, that made a pytool step 7.4 ms in a server instead of 2.9 ms,
and a raw frame's trip through server and client about 1 ms slower on each side. :func:`tune_malloc`
raises the mmap threshold to 32 MiB and the trim threshold to 64 MiB (so up to 64 MiB of freed heap
per arena stays mapped), once per process. The env server calls it at start-up, and so do the
``mintgym`` CLI and :func:`mintgym.make`. A value given through ``MALLOC_MMAP_THRESHOLD_`` or
``MALLOC_TRIM_THRESHOLD_`` wins; off glibc (musl, macOS) nothing happens; :func:`keep_default_malloc`
makes later calls in this process leave the allocator alone (for measuring the difference).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from dataclasses import dataclass

#: mallopt parameter numbers from glibc's <malloc.h>.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD_BYTES = 32 << 20
TRIM_THRESHOLD_BYTES = 64 << 20


@dataclass(frozen=True)
class MallocTuning:
    """What :func:`tune_malloc` did: the settings applied, or why it left the allocator alone."""

    applied: dict[str, int]
    reason: str = ""


_done: MallocTuning | None = None


def keep_default_malloc() -> None:
    """Leave this process's allocator at glibc's defaults: later :func:`tune_malloc` calls do nothing."""
    global _done
    if _done is None:
        _done = MallocTuning({}, "left at glibc's defaults on request")


def tune_malloc() -> MallocTuning:
    """Apply the thresholds above once per process; later calls return the first call's result."""
    global _done
    if _done is not None:
        return _done
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
    except OSError:
        mallopt = None
    if mallopt is None:
        _done = MallocTuning({}, "not glibc: no mallopt")
        return _done
    wanted = {"MALLOC_MMAP_THRESHOLD_": (M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES),
              "MALLOC_TRIM_THRESHOLD_": (M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)}
    applied = {}
    for env_name, (param, value) in wanted.items():
        if env_name in os.environ:
            continue  # the user's explicit setting, already read by glibc at start-up
        if mallopt(ctypes.c_int(param), ctypes.c_int(value)) == 1:
            applied[env_name] = value
    _done = MallocTuning(applied, "" if applied else "set by the environment")
    return _done
