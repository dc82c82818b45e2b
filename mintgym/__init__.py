"""MintGym: an environment gym and asynchronous RL platform for visual computer-use agents.

``mintgym.make(id)`` returns a ``gymnasium.Env`` talking to an env server; so does
``gymnasium.make("mintgym/<pack>.<name>")`` (see :mod:`mintgym.gym_registration`). Importing this package is
cheap: the heavy parts load on first use, and the tasks are listed only when gymnasium looks one up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from mintgym import gym_registration as _gym_registration  # stdlib only until gymnasium asks

_gym_registration.install()

if TYPE_CHECKING:
    from mintgym.client.sync import EnvClient


def make(env_or_task_id: str, backend: str = "local", **kwargs: Any) -> EnvClient:
    """A gymnasium env for a domain (``"pytool"``) or a task (``"pytool/count-shapes-0"``).

    ``backend`` picks where the env server runs: ``local`` (a subprocess, the default),
    ``inprocess`` (this process, no HTTP), ``docker`` or ``ray``; or pass ``base_url=`` to use a
    running server.
    """
    from mintgym.runtime.make import make as _make

    return _make(env_or_task_id, backend=backend, **kwargs)


def __getattr__(name: str) -> Any:
    if name in ("Observation",):
        from mintgym import types

        return getattr(types, name)
    if name in ("Environment", "EnvironmentHost", "Task"):
        from mintgym.env import core

        return getattr(core, name)
    raise AttributeError(f"module 'mintgym' has no attribute {name!r}")
