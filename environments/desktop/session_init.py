"""PID 1 of a desktop session's namespaces: lays out what the session may see, then reaps and waits.

Started by :mod:`mintgym.environments.desktop.namespace` as
``unshare --pid --fork --kill-child --net --mount --propagation private --mount-proc -- python -I -S
session_init.py ARGS``. Standard library only, run by path, so it imports nothing of MintGym (whose
code it is about to hide). Inside the new mount namespace it

* mounts a fresh tmpfs on ``/tmp`` (private to the session) holding only the session's directory and
  its own X display's socket, bind-mounted from outside;
* covers every ``--hide`` directory with an empty read-only tmpfs and every ``--mask`` file with
  ``/dev/null`` (project code, task data, other sessions, the docker socket);
* brings up the loopback of the new network namespace, which is all the network the session has.

Then it prints ``ready`` and waits: it reaps orphaned children (it is their init) and exits when its
standard input closes, which happens when the env server ends the session or dies. Its exit makes the
kernel kill every process left in the session's PID namespace.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import fcntl
import os
import select
import signal
import socket
import struct
import sys

MS_NOSUID, MS_NODEV, MS_BIND, MS_REC = 0x2, 0x4, 0x1000, 0x4000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if _libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
                   data.encode() if data else None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def lay_out(root: str, display: int, tmp_size: str, hide: list[str], mask: list[str], resolv: str | None) -> None:
    x_socket = f"/tmp/.X11-unix/X{display}"
    # The session's own directory and display socket, kept through fds and a bind before /tmp is covered.
    kept_socket = os.path.join(root, ".X11-socket")
    if not os.path.exists(kept_socket):
        open(kept_socket, "w").close()
    mount(x_socket, kept_socket, None, MS_BIND)
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={tmp_size}")
    for path in hide:  # empty, root's: code, data, the other sessions (a hide under /tmp is gone already)
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=64k")
    for path in mask:
        if os.path.exists(path) and not os.path.isdir(path):
            mount("/dev/null", path, None, MS_BIND)
    os.makedirs(root, mode=0o755, exist_ok=True)
    mount(f"/proc/self/fd/{root_fd}", root, None, MS_BIND | MS_REC)
    os.close(root_fd)
    os.makedirs("/tmp/.X11-unix", mode=0o1777, exist_ok=True)
    os.chmod("/tmp/.X11-unix", 0o1777)
    open(x_socket, "w").close()
    mount(kept_socket, x_socket, None, MS_BIND)
    if resolv:  # the egress's DNS forwarder in place of the host's resolvers
        mount(resolv, "/etc/resolv.conf", None, MS_BIND)
    loopback_up()


def reap(*_: object) -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", required=True, help="the session's directory (its HOME is below)")
    parser.add_argument("--display", type=int, required=True, help="the session's X display number")
    parser.add_argument("--tmp-size", default="1g", help="size cap of the session's private /tmp")
    parser.add_argument("--hide", action="append", default=[], help="a directory the session must not see")
    parser.add_argument("--mask", action="append", default=[], help="a file (socket) the session must not reach")
    parser.add_argument("--resolv", help="a resolv.conf to show the session (with egress)")
    args = parser.parse_args(argv)
    try:
        lay_out(args.root, args.display, args.tmp_size, args.hide, args.mask, args.resolv)
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
