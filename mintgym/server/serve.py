"""Run an env server: ``python -m mintgym.server DOMAIN`` or ``mintgym serve DOMAIN``.

Binds 127.0.0.1 by default. Bound anywhere else it refuses to start without a bearer token (taken from
``--token`` or the ``MINTGYM_TOKEN`` environment variable). ``--fd`` serves on a socket the parent
already bound (the local backend passes one, so no port race), and ``--parent-pid`` makes the server
exit when that process dies, so a killed parent leaves no orphan servers.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import signal
import socket
import threading
import time
from typing import Any

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


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
          fd: int | None = None, parent_pid: int | None = None, request_timeout: float = 60.0,
          max_sessions: int = 1024, host_options: dict[str, Any] | None = None, log_level: str = "warning") -> None:
    import uvicorn

    from mintgym.allocator import tune_malloc
    from mintgym.server.app import create_app

    tune_malloc()
    token = token or os.environ.get("MINTGYM_TOKEN") or None
    if fd is None and not is_loopback(host) and not token:
        raise SystemExit(
            f"refusing to serve on {host}: off loopback the server needs a bearer token "
            "(pass --token or set MINTGYM_TOKEN)"
        )
    env_host = build_host(domain, host_options)
    app = create_app(env_host, token=token, request_timeout=request_timeout, max_sessions=max_sessions)
    if parent_pid:
        _watch_parent(parent_pid)
    logging.basicConfig(level=getattr(logging, log_level.upper(), logging.WARNING))
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False,
                            timeout_graceful_shutdown=10, timeout_keep_alive=75, http="httptools" if _has("httptools") else "h11")
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
