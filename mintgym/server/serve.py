"""Run an env server: ``python -m mintgym.server DOMAIN`` or ``mintgym serve DOMAIN``.

Binds 127.0.0.1 by default. Bound anywhere else -- including a socket passed with ``--fd`` that is bound
off loopback -- it refuses to start without a bearer token. The token never travels on a command line
(where ``ps`` shows it to every local user): it comes from the ``MINTGYM_TOKEN`` environment variable
(removed from the server's environment once read, so nothing the server starts inherits it) or from a
``--token-file`` only its owner can read. ``--fd`` serves on a socket the parent already bound (the local
backend passes one, so no port race), and ``--parent-pid`` makes the server exit when that process dies,
so a killed parent leaves no orphan servers. ``--max-option NAME=VALUE`` caps a numeric session option.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import socket
import threading
import time
from typing import Any

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}
TOKEN_ENV = "MINTGYM_TOKEN"


class TokenError(SystemExit):
    """The token cannot be used: refused at start-up with one line saying why."""


def read_token_file(path: str) -> str:
    """The token in ``path``, which must belong to this user and be readable by nobody else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as err:
        raise TokenError(f"cannot read the token file {path}: {err.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise TokenError(f"the token file {path} must belong to this user and be readable by nobody else "
                             f"(it has mode {info.st_mode & 0o777:o}, owner uid {info.st_uid}): chmod 600 it")
        token = f.read(4097).decode("utf-8", "replace").strip()
    if not token or len(token) > 4096:
        raise TokenError(f"the token file {path} is empty or longer than 4096 characters")
    return token


def resolve_token(token: str | None = None, token_file: str | None = None) -> str | None:
    """The server's token: given (Python callers), from ``token_file``, or from $MINTGYM_TOKEN.

    $MINTGYM_TOKEN is removed from this process's environment either way, so the environments' processes
    (browsers, X apps, sandboxes) never inherit it.
    """
    from_env = os.environ.pop(TOKEN_ENV, None)
    if token_file:
        token = token or read_token_file(token_file)
    token = token or from_env or None
    if token is not None and (not token.strip() or any(c in token for c in "\r\n\0")):
        raise TokenError("the bearer token is empty or holds a line break or NUL")
    return token


def socket_host(sock: socket.socket) -> str:
    """The address a listening socket is bound to ("" for a unix socket)."""
    name = sock.getsockname()
    return name[0] if isinstance(name, tuple) else ""


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_host(domain: str, options: dict[str, Any] | None = None):
    from mintgym.env import registration

    return registration.host_class(domain)(**(options or {}))


def serve(domain: str, host: str = "127.0.0.1", port: int = 8000, *, token: str | None = None,
          token_file: str | None = None, fd: int | None = None, parent_pid: int | None = None,
          request_timeout: float = 60.0, max_sessions: int = 1024, host_options: dict[str, Any] | None = None,
          option_caps: dict[str, Any] | list[str] | None = None, body_timeout: float = 30.0,
          log_level: str = "warning") -> None:
    import uvicorn

    from mintgym.allocator import tune_malloc
    from mintgym.server.app import create_app
    from mintgym.server.options import OptionError

    tune_malloc()
    token = resolve_token(token, token_file)
    bound = host
    if fd is not None:
        probe = socket.socket(fileno=os.dup(fd))
        try:
            bound = socket_host(probe)
        finally:
            probe.close()
    if bound and not is_loopback(bound) and not token:
        raise TokenError(
            f"refusing to serve on {bound}: off loopback the server needs a bearer token "
            f"(set {TOKEN_ENV} or pass --token-file)"
        )
    env_host = build_host(domain, host_options)
    try:
        app = create_app(env_host, token=token, request_timeout=request_timeout, max_sessions=max_sessions,
                         option_caps=option_caps, body_chunk_seconds=body_timeout)
    except (OptionError, ValueError) as err:
        raise SystemExit(f"refusing to serve {domain}: {err}") from None
    if parent_pid:
        _watch_parent(parent_pid)
    logging.basicConfig(level=getattr(logging, log_level.upper(), logging.WARNING))
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False,
                            timeout_graceful_shutdown=10, timeout_keep_alive=75,
                            http="httptools" if _has("httptools") else "h11")
    sockets = [socket.socket(fileno=fd)] if fd is not None else None
    uvicorn.Server(config).run(sockets=sockets)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _watch_parent(parent_pid: int, every: float = 0.5) -> None:
    """Exit when the parent process dies (we are re-parented), polling ``getppid``.

    PR_SET_PDEATHSIG is not used: it fires when the parent *thread* that forked us exits, and parents
    start servers from worker threads.
    """
    if os.getppid() != parent_pid:  # the parent died before we got here
        os.kill(os.getpid(), signal.SIGTERM)

    def poll() -> None:
        while True:
            time.sleep(every)
            if os.getppid() != parent_pid:
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=poll, name="parent-watch", daemon=True).start()
