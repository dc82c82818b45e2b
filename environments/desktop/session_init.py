"""PID 1 of a desktop session's namespaces: builds the session's filesystem from an allow list, then reaps.

Started by :mod:`mintgym.environments.desktop.namespace` as
``unshare --pid --fork --kill-child --net --ipc --mount --propagation private --mount-proc -- python -I -S
session_init.py ARGS``, once per episode. Standard library only, run by path, so it imports nothing of
MintGym. Inside the new mount namespace it makes a fresh root (``pivot_root``) holding only

* the system's folders, read-only: ``/usr``, ``/etc``, the ``/bin``-style links or folders, and the few
  folders of ``/var`` that apps read (:data:`VAR_RO`);
* a fresh ``/proc`` (the session's PID namespace), ``/sys`` (read-only), ``/dev`` with the harmless devices
  and a private ``devpts``, and empty ``/run``, ``/home``, ``/root``, ``/mnt``;
* the session's writable folders, all on the one size-capped tmpfs the server mounted (``--rw``): its
  ``/tmp``, ``/var/tmp`` and ``/dev/shm`` (nothing of the host's or another session's), and its directory
  (home, helper commands) at the same path as on the host;
* its own X display's socket, bound from the host.

No other host path exists in the session, wherever a checkout or a data folder lies (``/opt``, ``/srv``,
``/home``, ``/mnt``, ``/root``, ``/work``...: none); ``--hide`` still covers a listed folder that falls inside an
allowed one (a checkout under ``/usr/local``). The network namespace
gets its loopback up, the IPC namespace is new and empty. Then it prints ``ready`` and waits: it reaps
orphaned children and exits when its standard input closes (the server ended the episode or died), and the
kernel kills every process left in the PID namespace.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import fcntl
import os
import platform
import select
import signal
import socket
import struct
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC = 0x1, 0x2, 0x4, 0x8, 0x20, 0x1000, 0x4000
MNT_DETACH = 0x2
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
#: System folders the session sees read-only (when the host has them).
SYSTEM_RO = ("/usr", "/etc")
#: The few folders of /var that apps read (the rest of /var holds the host's state, caches and data: a build
#: cache there once held a copy of MintGym's code): D-Bus's machine id, LibreOffice's bundled extensions,
#: Ghostscript's font map, the font cache.
VAR_RO = ("/var/lib/dbus", "/var/lib/libreoffice", "/var/lib/ghostscript", "/var/cache/fontconfig")
#: Top-level names that merged-/usr systems keep as links into /usr (folders elsewhere: bound read-only).
TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
EMPTY_DIRS = ("/home", "/root", "/mnt", "/media", "/srv", "/opt")

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)
_libc.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
                       data.encode() if data else None), f"mount {source} on {target}")


def bind(source: str, target: str, *, readonly: bool, recursive: bool = True) -> None:
    """Bind ``source`` on ``target`` (made as a file or folder like the source); read-only when asked."""
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    elif not os.path.exists(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "w").close()
    mount(source, target, None, MS_BIND | (MS_REC if recursive else 0))
    if readonly:
        mount("none", target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def tmpfs(target: str, options: str, flags: int = MS_NOSUID | MS_NODEV) -> None:
    os.makedirs(target, exist_ok=True)
    mount("tmpfs", target, "tmpfs", flags, options)


def pivot_root(new: str) -> None:
    """Make ``new`` the namespace's root and detach the old one (``pivot_root(".", ".")``)."""
    number = PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(38, f"pivot_root: no syscall number known for {platform.machine()}")
    os.chdir(new)
    _check(_libc.syscall(number, b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def make_dev(new: str, shm: str) -> None:
    dev = new + "/dev"
    tmpfs(dev, "mode=755,size=64k", MS_NOSUID | MS_NOEXEC)
    for name in DEVICES:
        if os.path.exists("/dev/" + name):
            bind("/dev/" + name, f"{dev}/{name}", readonly=False, recursive=False)
    os.makedirs(dev + "/pts")
    mount("devpts", dev + "/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
    os.symlink("pts/ptmx", dev + "/ptmx")
    bind(shm, dev + "/shm", readonly=False)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{dev}/{name}")


def lay_out(args: argparse.Namespace) -> None:
    """Build the session's root in ``args.newroot`` from the allow list and switch to it."""
    new, rw, root = args.newroot, args.rw, args.root
    tmpfs(new, "mode=755,size=1m")
    for path in TOP_LINKS:
        if os.path.islink(path):
            os.symlink(os.readlink(path), new + path)
        elif os.path.isdir(path):
            bind(path, new + path, readonly=True)
    for path in (*SYSTEM_RO, *VAR_RO):
        if os.path.isdir(path):
            bind(path, new + path, readonly=True)
    os.makedirs(new + "/proc")
    try:
        os.makedirs(new + "/sys")
        mount("sysfs", new + "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        bind("/sys", new + "/sys", readonly=True)
    make_dev(new, rw + "/shm")
    tmpfs(new + "/run", "mode=755,size=64k", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path in EMPTY_DIRS:
        os.makedirs(new + path, exist_ok=True)
    os.chmod(new + "/root", 0o700)
    bind(rw + "/tmp", new + "/tmp", readonly=False)
    bind(rw + "/var-tmp", new + "/var/tmp", readonly=False)
    for name, target in (("run", "../run"), ("lock", "../run/lock")):
        if not os.path.lexists(f"{new}/var/{name}"):
            os.symlink(target, f"{new}/var/{name}")
    # The session's directory at its host path (non-recursive: not the new root's own mount point), then
    # its writable tmpfs over it, then the X socket.
    bind(root, new + root, readonly=False, recursive=False)
    bind(rw, new + rw, readonly=False, recursive=False)
    x_socket = f"/tmp/.X11-unix/X{args.display}"
    os.makedirs(new + "/tmp/.X11-unix", mode=0o1777, exist_ok=True)
    os.chmod(new + "/tmp/.X11-unix", 0o1777)
    bind(x_socket, new + x_socket, readonly=False, recursive=False)
    if args.home_link:  # what tasks call the home folder (OSWorld's /home/user), as a link to the session's
        os.symlink(args.home_link[1], new + args.home_link[0])
    if args.resolv:  # the egress's DNS forwarder in place of the host's resolvers
        bind(args.resolv, new + "/etc/resolv.conf", readonly=True, recursive=False)
    for path in args.hide:  # a listed folder inside an allowed one: covered, empty and read-only
        if os.path.isdir(new + path) and not os.path.islink(new + path):
            mount("tmpfs", new + path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=755,size=4k")
    mount("none", new, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    pivot_root(new)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    loopback_up()


def reap(*_: object) -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", required=True, help="the session's directory (helper commands, its rw tmpfs)")
    parser.add_argument("--rw", required=True, help="the session's writable tmpfs (home, tmp, var-tmp, shm, run)")
    parser.add_argument("--newroot", required=True, help="an empty folder to build the session's root in")
    parser.add_argument("--display", type=int, required=True, help="the session's X display number")
    parser.add_argument("--hide", action="append", default=[], help="a folder to cover if it is inside the view")
    parser.add_argument("--home-link", nargs=2, metavar=("LINK", "HOME"), help="a link to the session's home")
    parser.add_argument("--resolv", help="a resolv.conf to show the session (with egress)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        lay_out(args)
    except OSError as err:
        print(f"error {err}", flush=True)
        return 1
    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("ready", flush=True)
    while True:
        try:
            readable, _, _ = select.select([sys.stdin], [], [], 5.0)
        except InterruptedError:
            continue
        reap()
        if readable and not os.read(sys.stdin.fileno(), 4096):
            return 0


if __name__ == "__main__":
    sys.exit(main())
