"""Layer 3: ``mintgym.make`` = registry lookup + a provider that runs the server + a client.

Task packs added in this process reach the servers every provider starts (each forwards them its own way:
see local.py, docker.py, ray.py); a task whose pack cannot be forwarded is refused here, before a server
starts, with the reason.

Providers are found by name: ``local`` (default), ``docker``, ``ray``, or ``inprocess`` (no server:
the environment runs on a private event loop in this process; for debugging and overhead baselines).
"""

from __future__ import annotations

import importlib
from typing import Any

from mintgym.allocator import tune_malloc
from mintgym.env import registration
from mintgym.errors import RegistrationError
from mintgym.runtime.fleet import start_env_servers
from mintgym.runtime.providers import Provider

PROVIDERS = {
    "local": "mintgym.runtime.local:LocalProvider",
    "docker": "mintgym.runtime.docker:DockerProvider",
    "ray": "mintgym.runtime.ray:RayProvider",
}
_shared: dict[str, Provider] = {}


def provider(name: str, **config: Any) -> Provider:
    """The provider called ``name`` (one shared instance per name when no config is given)."""
    if name not in PROVIDERS:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join([*PROVIDERS, 'inprocess'])}")
    if not config and name in _shared:
        return _shared[name]
    module, _, cls = PROVIDERS[name].partition(":")
    instance = getattr(importlib.import_module(module), cls)(**config)
    if not config:
        _shared[name] = instance
    return instance


def make(env_or_task_id: str, backend: str = "local", *, base_url: str | None = None, token: str | None = None,
         encoding: str | None = None, side_channels: tuple[str, ...] = (), env_options: dict | None = None,
         host_options: dict | None = None, backend_options: dict | None = None, ready_timeout: float = 180.0,
         timeout: float = 120.0):
    domain, task = registration.resolve(env_or_task_id)
    task_id = task.id if task is not None else None
    tune_malloc()  # this process will move a frame per step (see mintgym.allocator)
    if backend == "inprocess":
        from mintgym.runtime.inprocess import InProcessEnv

        return InProcessEnv(domain, task_id=task_id, side_channels=side_channels, env_options=env_options,
                            host_options=host_options)
    from mintgym.client.sync import EnvClient

    if base_url is None and task_id is not None:
        problem = registration.forwarding_problem(task_id)
        if problem:
            raise RegistrationError(f"cannot run {task_id!r} on the {backend!r} backend: {problem} (backend "
                                    "'inprocess' runs it without a server)")
    if base_url is not None:
        return EnvClient(base_url, domain=domain, task_id=task_id, token=token, encoding=encoding or "png",
                         side_channels=side_channels, env_options=env_options, timeout=timeout)
    servers = start_env_servers(provider(backend, **(backend_options or {})), domain, token=token,
                                options={"host_options": host_options or {}}, ready_timeout=ready_timeout)
    [handle] = servers.handles
    try:
        # Raw frames cost nothing to encode and are the fastest over loopback; PNG across hosts.
        chosen = encoding or ("raw" if handle.base_url.startswith(("http://127.", "http://localhost")) else "png")
        return EnvClient(handle.base_url, domain=domain, task_id=task_id, token=handle.token or token,
                         encoding=chosen, side_channels=side_channels, env_options=env_options, timeout=timeout,
                         on_close=servers.stop)
    except BaseException:
        servers.stop()
        raise
