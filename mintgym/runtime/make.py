"""Layer 3: ``mintgym.make`` = registry lookup + a provider that runs the server + a client.

Task packs added in this process reach the servers every provider starts (each forwards them its own way:
see local.py, docker.py, ray.py); a task whose pack cannot be forwarded is refused here, before a server
starts, with the reason.

Providers are found by name: ``local`` (default), ``docker``, ``ray``, or ``inprocess`` (no server:
the environment runs on a private event loop in this process; for debugging and overhead baselines).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mintgym.allocator import tune_malloc
from mintgym.env import registration
from mintgym.env.core import Task
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


@dataclass(frozen=True)
class Served:
    """An env server for one domain: where it answers, and how to stop it (a no-op for a given URL)."""

    base_url: str
    token: str | None
    #: The frame encoding that suits the link: raw over loopback (free to encode, the fastest), PNG across hosts.
    encoding: str
    stop: Callable[[], None]


def serve(domain: str, backend: str = "local", *, base_url: str | None = None, token: str | None = None,
          host_options: dict | None = None, backend_options: dict | None = None,
          ready_timeout: float = 180.0) -> Served:
    """The env server for ``domain``: the one at ``base_url``, or one the ``backend`` provider starts."""
    if base_url is not None:
        return Served(base_url, token, "png", lambda: None)
    servers = start_env_servers(provider(backend, **(backend_options or {})), domain, token=token,
                                options={"host_options": host_options or {}}, ready_timeout=ready_timeout)
    [handle] = servers.handles
    local = handle.base_url.startswith(("http://127.", "http://localhost"))
    return Served(handle.base_url, handle.token or token, "raw" if local else "png", servers.stop)


def make(env_or_task_id: str, backend: str = "local", *, base_url: str | None = None, token: str | None = None,
         encoding: str | None = None, side_channels: tuple[str, ...] = (), env_options: dict | None = None,
         host_options: dict | None = None, backend_options: dict | None = None, ready_timeout: float = 180.0,
         timeout: float = 120.0):
    domain, task = resolve_runnable(env_or_task_id, backend, base_url)
    task_id = task.id if task is not None else None
    if backend == "inprocess":
        from mintgym.runtime.inprocess import InProcessEnv

        return InProcessEnv(domain, task_id=task_id, side_channels=side_channels, env_options=env_options,
                            host_options=host_options)
    from mintgym.client.sync import EnvClient

    served = serve(domain, backend, base_url=base_url, token=token, host_options=host_options,
                   backend_options=backend_options, ready_timeout=ready_timeout)
    try:
        return EnvClient(served.base_url, domain=domain, task_id=task_id, token=served.token,
                         encoding=encoding or served.encoding, side_channels=side_channels, env_options=env_options,
                         timeout=timeout, on_close=served.stop)
    except BaseException:
        served.stop()
        raise


def resolve_runnable(env_or_task_id: str, backend: str, base_url: str | None) -> tuple[str, Task | None]:
    """(domain, task) of an id, refused before any server starts when the task's pack cannot reach one."""
    domain, task = registration.resolve(env_or_task_id)
    tune_malloc()  # this process will move a frame per step (see mintgym.allocator)
    if backend != "inprocess" and base_url is None and task is not None:
        problem = registration.forwarding_problem(task.id)
        if problem:
            raise RegistrationError(f"cannot run {task.id!r} on the {backend!r} backend: {problem} (backend "
                                    "'inprocess' runs it without a server)")
    return domain, task
