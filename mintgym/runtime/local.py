"""Layer 3: the ``local`` provider -- the env server as a subprocess of this process (the default).

The parent binds 127.0.0.1 on a free port and hands the listening socket to the child (no port race).
The child runs in its own process group, exits by itself when the parent dies (it polls its parent), and
``stop`` ends the whole group, so no server or browser outlives its owner.
Bound off loopback (``LocalProvider(bind="0.0.0.0")``) a server always has a token: a fresh random one when
none is given (it is in the returned handle). The token reaches the child in its environment, never on its
command line.
Task packs added in this process at run time (``--packs``, ``register_tasks``) are forwarded to the child
through its environment (see :func:`mintgym.env.registration.forwarding_environment`).
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading

from mintgym.env import registration
from mintgym.errors import BackendError
from mintgym.runtime.providers import Provider, ServerHandle, wait_for_health
from mintgym.server.serve import TOKEN_ENV, is_loopback


class LocalProvider(Provider):
    name = "local"

    def __init__(self, bind: str = "127.0.0.1", request_timeout: float = 60.0, python: str | None = None):
        self.bind = bind
        self.request_timeout = request_timeout
        self.python = python or sys.executable
        self._procs: dict[str, subprocess.Popen] = {}
        self._logs: dict[str, str] = {}
        self._lock = threading.Lock()
        atexit.register(self.stop_all)

    def start(self, domain: str, *, token: str | None = None, options: dict | None = None) -> ServerHandle:
        options = dict(options or {})
        if not token and not is_loopback(self.bind):
            token = secrets.token_urlsafe(32)  # off loopback a server is never without one
        family = socket.AF_INET6 if ":" in self.bind else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.bind, 0))
        listener.listen(1024)
        port = listener.getsockname()[1]
        log = tempfile.NamedTemporaryFile(prefix=f"mintgym-{domain}-{port}-", suffix=".log", delete=False)
        cmd = [self.python, "-m", "mintgym.server", domain, "--fd", str(listener.fileno()),
               "--parent-pid", str(os.getpid()), "--request-timeout",
               str(options.pop("request_timeout", self.request_timeout)),
               "--host-options", json.dumps(options.pop("host_options", {}))]
        for name, cap in dict(options.pop("max_options", {})).items():
            cmd += ["--max-option", f"{name}={cap}"]
        if options:
            listener.close()
            raise ValueError(f"unknown local server options {sorted(options)}; known: request_timeout, "
                             "host_options, max_options")
        env = dict(os.environ)
        env.update(registration.forwarding_environment())  # task packs added here reach the server
        env.pop(TOKEN_ENV, None)
        if token:
            env[TOKEN_ENV] = token
        try:
            proc = subprocess.Popen(cmd, pass_fds=[listener.fileno()], stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        finally:
            listener.close()
            log.close()
        ident = str(proc.pid)
        with self._lock:
            self._procs[ident] = proc
            self._logs[ident] = log.name
        host = f"[{self.bind}]" if family == socket.AF_INET6 else self.bind
        if self.bind in ("0.0.0.0", "::"):
            host = "127.0.0.1" if family == socket.AF_INET else "[::1]"
        return ServerHandle(f"http://{host}:{port}", domain, token, ident, {"log": log.name})

    def wait_ready(self, handle: ServerHandle, timeout: float = 120.0) -> None:
        try:
            wait_for_health(handle, timeout, alive=lambda: self.alive(handle))
        except BackendError as err:
            raise BackendError(f"{err}\n--- server log ({handle.extra.get('log')}) ---\n"
                               f"{self.log_tail(handle)}") from None

    def alive(self, handle: ServerHandle) -> bool:
        proc = self._procs.get(handle.ident)
        return proc is not None and proc.poll() is None

    def log_tail(self, handle: ServerHandle, chars: int = 4000) -> str:
        path = self._logs.get(handle.ident) or handle.extra.get("log")
        try:
            with open(path, errors="replace") as f:
                return f.read()[-chars:]
        except (OSError, TypeError):
            return "(no log)"

    def stop(self, handle: ServerHandle, grace: float = 10.0) -> None:
        with self._lock:
            proc = self._procs.pop(handle.ident, None)
            log = self._logs.pop(handle.ident, None)
        if proc is None:
            return
        _terminate_group(proc, grace)
        if log:
            try:
                os.unlink(log)
            except OSError:
                pass

    def stop_all(self) -> None:
        for ident in list(self._procs):
            self.stop(ServerHandle("", "", ident=ident), grace=5.0)


def _terminate_group(proc: subprocess.Popen, grace: float) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    try:  # whatever is left of the group (browsers, displays) goes too
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
