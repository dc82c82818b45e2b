"""The sandbox worker: runs the agent's code, one cell at a time, with state kept between cells.

This file is executed *inside* the sandbox as a standalone script (``python -I worker.py``); it imports
only the standard library, so nothing of MintGym needs to be readable there. It talks to the server
over its stdin/stdout with length-prefixed JSON frames (4-byte big-endian length, then UTF-8 JSON):

* the first frame from the server is the configuration (limits, paths); the worker applies the
  resource limits to itself, then answers ``{"ready": true, ...}``;
* each later request is ``{"op": "exec", "code": ...}`` and gets one reply with the captured output,
  the traceback if the code raised, and ``restart: true`` when the worker is too damaged to go on.

Protocol descriptors are moved away from fds 0-2 first, so code that reads stdin or writes to fd 1
(``os.system("echo")``) cannot corrupt the protocol: fds 1 and 2 point at an in-memory file whose
content is the cell's output. Every other inherited descriptor is closed, and the seccomp filter the
server sends is installed before anything else runs.

The cell runs in this process, so it could write frames itself: the server trusts nothing in a reply but
its text (each request carries a ``seq`` the reply echoes; the server keeps the time and the limits). Before
the cell runs the worker sends ``{"seq", "started": true}``: a worker that dies before that frame died
without the agent's code having run (an outside fault), one that dies after it is the cell's doing.
"""

from __future__ import annotations

import ast
import errno
import io
import json
import linecache
import os
import resource
import signal
import struct
import sys
import time
import traceback

HEADER = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024


class CPUTimeExceeded(BaseException):
    """Raised in the cell when its CPU time budget runs out (SIGXCPU)."""


class WallTimeExceeded(BaseException):
    """Raised in the cell when its wall-clock budget runs out (SIGALRM)."""


# ---------------------------------------------------------------------------------------------- framing

def read_frame(fd: int) -> dict | None:
    head = _read_exact(fd, HEADER.size)
    if head is None:
        return None
    (size,) = HEADER.unpack(head)
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes is over the {MAX_FRAME} limit")
    body = _read_exact(fd, size)
    if body is None:
        return None
    return json.loads(body.decode("utf-8"))


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write_frame(fd: int, message: dict) -> None:
    body = json.dumps(message).encode("utf-8")
    data = HEADER.pack(len(body)) + body
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


# ---------------------------------------------------------------------------------------------- output

class CappedWriter(io.TextIOBase):
    """sys.stdout/sys.stderr of a cell: writes through to fd 1 until ``cap`` bytes, then only counts."""

    def __init__(self, fd: int, state: dict):
        self._fd = fd
        self._state = state  # shared by stdout and stderr: {"written": int, "dropped": int, "cap": int}

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        data = str(text).encode("utf-8", "replace")
        room = self._state["cap"] - self._state["written"]
        keep = data[: max(room, 0)]
        self._state["dropped"] += len(data) - len(keep)
        view = memoryview(keep)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        self._state["written"] += len(keep)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return "utf-8"


# ---------------------------------------------------------------------------------------------- worker

class Worker:
    def __init__(self, config: dict, proto_in: int, proto_out: int):
        self.config = config
        self.proto_in = proto_in
        self.proto_out = proto_out
        self.pid = os.getpid()
        self.workdir = config["workdir"]
        self.cells = 0
        self.output_fd = os.memfd_create("cell-output", 0)
        self.out_state = {"written": 0, "dropped": 0, "cap": int(config["output_limit"])}
        self.namespace: dict = {"__name__": "__main__", "__builtins__": __builtins__}
        self._reserve: bytearray | None = None

    # -- setup ---------------------------------------------------------------------------------------
    def setup(self) -> None:
        cfg = self.config
        os.dup2(self.output_fd, 1)
        os.dup2(self.output_fd, 2)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 -- lives as long as the worker
        sys.stdout = CappedWriter(1, self.out_state)
        sys.stderr = CappedWriter(2, self.out_state)
        os.chdir(self.workdir)
        os.umask(0o077)
        signal.signal(signal.SIGXCPU, self._on_cpu)
        signal.signal(signal.SIGALRM, self._on_alarm)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversize write fails with EFBIG instead
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        # Preload the analysis stack so the first cell does not pay for it (before the memory limit).
        for name in cfg.get("preload", ()):
            try:
                __import__(name)
            except ImportError:
                pass
        limits = {
            resource.RLIMIT_AS: int(cfg["memory_bytes"]),
            resource.RLIMIT_FSIZE: int(cfg["file_bytes"]),
            resource.RLIMIT_NOFILE: int(cfg["open_files"]),
            resource.RLIMIT_CORE: 0,
        }
        if cfg.get("processes"):
            limits[resource.RLIMIT_NPROC] = int(cfg["processes"])
        for which, value in limits.items():
            resource.setrlimit(which, (value, value))
        if cfg.get("block_network", True):
            sys.addaudithook(_network_guard)
        self.namespace["TASK_IMAGE"] = cfg.get("task_image", "")
        self.namespace["show"] = _make_show(os.path.join(self.workdir, "out.png"))
        self._reserve = bytearray(4 * 1024 * 1024)

    def _on_cpu(self, signum, frame):
        raise CPUTimeExceeded()

    def _on_alarm(self, signum, frame):
        raise WallTimeExceeded()

    # -- loop ----------------------------------------------------------------------------------------
    def serve(self) -> None:
        write_frame(self.proto_out, {"ready": True, "pid": self.pid, "uid": os.getuid(),
                                     "python": sys.version.split()[0]})
        while True:
            request = read_frame(self.proto_in)
            if request is None:
                return
            op = request.get("op")
            if op == "exec":
                write_frame(self.proto_out, {"seq": request.get("seq"), "started": True})
                reply = self.run_cell(str(request.get("code", "")))
                reply["seq"] = request.get("seq")
            elif op == "ping":
                reply = {"ok": True}
            else:
                reply = {"ok": False, "error": f"unknown op {op!r}"}
            write_frame(self.proto_out, reply)

    def run_cell(self, code: str) -> dict:
        self.cells += 1
        name = f"<cell {self.cells}>"
        os.ftruncate(self.output_fd, 0)
        os.lseek(self.output_fd, 0, os.SEEK_SET)
        self.out_state["written"] = self.out_state["dropped"] = 0
        error = None
        restart = False
        started = time.monotonic()
        cpu_limit = float(self.config["cpu_seconds"])
        wall_limit = float(self.config["wall_seconds"])
        try:
            try:
                used = _cpu_used()
                resource.setrlimit(resource.RLIMIT_CPU, (int(used + cpu_limit) + 1, resource.RLIM_INFINITY))
                signal.setitimer(signal.ITIMER_REAL, wall_limit)
                self._execute(code, name)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
                if os.getpid() != self.pid:  # a child forked by the cell must never return to the loop
                    os._exit(0)
        except BaseException as exc:  # noqa: BLE001 -- the cell's exception is the agent's result, not ours
            if os.getpid() != self.pid:
                os._exit(1)
            self._reserve = None
            error, restart = self._describe(exc, name)
            if len(error) > self.out_state["cap"]:
                error = error[: self.out_state["cap"]] + f"... [{len(error) - self.out_state['cap']} more characters]\n"
            self._reserve = bytearray(4 * 1024 * 1024) if not restart else None
        self._reap_strays()
        output, truncated = self._collect_output()
        seconds = time.monotonic() - started
        return {"ok": error is None, "output": output, "truncated_bytes": truncated, "error": error,
                "restart": restart, "seconds": round(seconds, 4)}

    def _execute(self, code: str, name: str) -> None:
        tree = ast.parse(code, name, "exec")
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, "exec"), self.namespace)  # noqa: S102 -- inside the sandbox, by design
        if last is not None:
            value = eval(compile(last, name, "eval"), self.namespace)
            if value is not None:
                print(repr(value))

    # -- results -------------------------------------------------------------------------------------
    def _describe(self, exc: BaseException, name: str) -> tuple[str, bool]:
        cfg = self.config
        if isinstance(exc, CPUTimeExceeded):
            return f"CPU time limit ({_fmt(cfg['cpu_seconds'])} s) exceeded: the code was stopped.", False
        if isinstance(exc, WallTimeExceeded):
            return f"wall-clock time limit ({_fmt(cfg['wall_seconds'])} s) exceeded: the code was stopped.", False
        if isinstance(exc, SystemExit):
            return f"SystemExit({exc.code!r}) was raised: the sandbox keeps running.", False
        if isinstance(exc, SyntaxError) and exc.filename == name:  # the cell did not compile: no frames
            text = "".join(traceback.format_exception_only(type(exc), exc))
        else:
            lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
            # Drop the worker's own frames: the agent should see its cell only.
            text = "".join(lines[:1] + [ln for ln in lines[1:] if "worker.py" not in ln])
        note = _hint(exc, self.workdir, cfg)
        restart = False
        if isinstance(exc, MemoryError):
            restart = _rss_bytes() > 0.5 * float(cfg["memory_bytes"])
            if restart:
                note += " The sandbox was restarted to free memory."
        return text + (f"note: {note}\n" if note else ""), restart

    def _collect_output(self) -> tuple[str, int]:
        try:
            sys.stdout.flush()
        except OSError:
            pass
        size = os.fstat(self.output_fd).st_size
        cap = self.out_state["cap"]
        data = os.pread(self.output_fd, min(size, cap), 0)
        truncated = max(size - cap, 0) + self.out_state["dropped"]
        return data.decode("utf-8", "replace"), truncated

    def _reap_strays(self) -> None:
        """Kill every process the cell left behind (fork bombs, background jobs) and reap them."""
        if self.pid == 1:  # PID 1 of our own PID namespace: kill(-1) reaches exactly our processes
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
        else:
            for pid in _same_group_pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        while True:
            try:
                pid, _ = os.waitpid(-1, 0 if self.pid == 1 else os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return


def _network_guard(event: str, args: tuple) -> None:
    if event == "socket.__new__":
        import socket

        family = args[1] if len(args) > 1 else None
        if family not in (socket.AF_UNIX, -1):
            raise PermissionError(errno.EACCES, "network is unavailable in the sandbox")


def _make_show(path: str):
    def show(image, *_ignored) -> str:
        """Save a PIL image, a numpy array or an image file as out.png: the next screenshot shows it."""
        from PIL import Image

        if isinstance(image, (str, os.PathLike)):
            image = Image.open(image)
        elif not isinstance(image, Image.Image):
            import numpy as np

            array = np.asarray(image)
            if array.dtype != np.uint8:
                array = np.clip(array, 0, 255).astype(np.uint8)
            image = Image.fromarray(array)
        image.convert("RGB").save(path)
        return path

    return show


def _hint(exc: BaseException, workdir: str, cfg: dict) -> str:
    if isinstance(exc, MemoryError):
        return f"MemoryError: the sandbox's memory limit ({int(cfg['memory_bytes']) // 2**20} MiB) was reached."
    if isinstance(exc, RuntimeError) and "thread" in str(exc):
        return f"fork failed: resource limit (at most {cfg.get('processes')} processes and threads)."
    if not isinstance(exc, OSError):
        return ""
    if exc.errno == errno.EAGAIN and isinstance(exc, BlockingIOError):
        return f"fork failed: resource limit (at most {cfg.get('processes')} processes and threads)."
    if exc.errno == errno.EFBIG:
        return f"file size limit ({int(cfg['file_bytes']) // 2**20} MiB) exceeded."
    if exc.errno == errno.EMFILE:
        return f"open files limit ({cfg['open_files']}) reached."
    if exc.errno in (errno.ENETUNREACH, errno.ECONNREFUSED, errno.EHOSTUNREACH) or "network" in str(exc):
        return "network is unavailable in the sandbox."
    target = str(exc.filename or "")
    outside = not os.path.realpath(target or "/").startswith(workdir.rstrip("/") + "/")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and outside:
        return f"PermissionError: access outside the sandbox is not allowed; only {workdir} is writable."
    if exc.errno == errno.ENOENT and target.startswith("/") and outside:
        return (f"{target} is outside the sandbox: only {workdir} is writable, and most of the machine's "
                "filesystem is hidden.")
    return ""


def _fmt(value) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() else str(value)


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _same_group_pids() -> list[int]:
    me, group = os.getpid(), os.getpgid(0)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:
            found.append(int(entry))
    return found


def install_seccomp(program: bytes) -> None:
    """Load a seccomp filter (``struct sock_filter`` array) on this single-threaded process for good."""
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(program, len(program))
    prog = SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "loading the seccomp filter failed")


def close_inherited(keep: set[int]) -> None:
    """Close every file descriptor but 0-2 and ``keep``."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def main() -> None:
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    close_inherited({proto_in, proto_out})
    config = read_frame(proto_in)
    if config is None:
        return
    if config.get("seccomp"):
        install_seccomp(bytes.fromhex(config["seccomp"]))
    worker = Worker(config, proto_in, proto_out)
    worker.setup()
    worker.serve()


if __name__ == "__main__":
    main()
