"""The sandbox's seccomp filter: a classic-BPF program built here, loaded by bubblewrap (``--seccomp FD``).

It closes what the kernel would otherwise let an unprivileged process do whatever the machine's sysctls
say: no new namespaces of any kind (``clone``/``unshare`` with a ``CLONE_NEW*`` flag, ``setns``; ``clone3``
answers ENOSYS so libc falls back to ``clone``, whose flags the filter can read), no ``ptrace`` or
cross-process memory access, no keyrings, BPF, perf events, userfaultfd, io_uring, mounts or file
handles. Syscalls of a foreign ABI (32-bit ``int 0x80``, x32) are refused, so they cannot go around it.
"""

from __future__ import annotations

import errno
import platform
import struct

# BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000

_CLONE_NEW_ANY = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
_CLONE_NEWTIME = 0x00000080  # for unshare only: in clone()'s flags the low byte is the exit signal

#: (audit arch, x32 bit or 0, syscall numbers by name) per supported machine.
_ARCHES = {
    "x86_64": (0xC000003E, 0x40000000, {
        "clone": 56, "unshare": 272, "clone3": 435, "setns": 308, "ptrace": 101, "process_vm_readv": 310,
        "process_vm_writev": 311, "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321,
        "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425, "mount": 165, "umount2": 166,
        "pivot_root": 155, "chroot": 161, "open_by_handle_at": 304, "name_to_handle_at": 303,
        "fsopen": 430, "fsmount": 432, "move_mount": 429, "open_tree": 428, "mount_setattr": 442}),
    "aarch64": (0xC00000B7, 0, {
        "clone": 220, "unshare": 97, "clone3": 435, "setns": 268, "ptrace": 117, "process_vm_readv": 270,
        "process_vm_writev": 271, "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280,
        "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425, "mount": 40, "umount2": 39,
        "pivot_root": 41, "chroot": 51, "open_by_handle_at": 265, "name_to_handle_at": 264,
        "fsopen": 430, "fsmount": 432, "move_mount": 429, "open_tree": 428, "mount_setattr": 442}),
}

#: Syscalls refused outright (EPERM), besides the flag checks on clone/unshare and clone3's ENOSYS.
DENIED = ("setns", "ptrace", "process_vm_readv", "process_vm_writev", "keyctl", "add_key", "request_key", "bpf",
          "perf_event_open", "userfaultfd", "io_uring_setup", "mount", "umount2", "pivot_root", "chroot",
          "open_by_handle_at", "name_to_handle_at", "fsopen", "fsmount", "move_mount", "open_tree",
          "mount_setattr")


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def supported() -> bool:
    return platform.machine() in _ARCHES


def build_filter(machine: str | None = None) -> bytes:
    """The filter program (an array of ``struct sock_filter``) for ``machine`` (default: this one)."""
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise ValueError(f"no seccomp filter for machine {machine!r}; supported: {', '.join(_ARCHES)}")
    arch, x32_bit, nr = _ARCHES[machine]
    eperm, enosys = _RET_ERRNO | errno.EPERM, _RET_ERRNO | errno.ENOSYS
    prog = [_ins(_LD_W_ABS, 4), _ins(_JEQ_K, arch, 1, 0), _ins(_RET_K, eperm), _ins(_LD_W_ABS, 0)]
    if x32_bit:
        prog += [_ins(_JGE_K, x32_bit, 0, 1), _ins(_RET_K, eperm)]
    for name, mask in (("clone", _CLONE_NEW_ANY), ("unshare", _CLONE_NEW_ANY | _CLONE_NEWTIME)):
        # if nr == name: load the low word of args[0]; any CLONE_NEW* bit -> EPERM, else allow
        prog += [_ins(_JEQ_K, nr[name], 0, 4), _ins(_LD_W_ABS, 16), _ins(_JSET_K, mask, 0, 1),
                 _ins(_RET_K, eperm), _ins(_RET_K, RET_ALLOW)]
    prog += [_ins(_JEQ_K, nr["clone3"], 0, 1), _ins(_RET_K, enosys)]
    for name in DENIED:
        prog += [_ins(_JEQ_K, nr[name], 0, 1), _ins(_RET_K, eperm)]
    prog.append(_ins(_RET_K, RET_ALLOW))
    return b"".join(prog)
