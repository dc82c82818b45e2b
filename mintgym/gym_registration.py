"""Layer 3: every MintGym task in gymnasium's registry, as ``mintgym/<pack>.<name>[-vN]``, with no task listed
at ``import mintgym``.

>>> import gymnasium, mintgym
>>> gymnasium.spec("mintgym/null.echo").kwargs
{'task_id': 'null/echo'}

A task id ``[domain/]pack/name[-vN]`` becomes ``mintgym/`` + its pack and name joined by dots + its version:
``miniwob/click-test`` is ``mintgym/miniwob.click-test``, ``osworld/gimp/<uuid>`` is
``mintgym/osworld.gimp.<uuid>``, ``desktop/terminal-file-v0`` is ``mintgym/desktop.terminal-file-v0``
(gymnasium's names hold no ``/``). Each spec makes the env with :func:`make_env` (``mintgym.make`` of the task;
extra ``gymnasium.make`` keywords are ``mintgym.make``'s), has the task's step limit as
``max_episode_steps``, and ``gymnasium.make_vec`` makes a :class:`~mintgym.runtime.vector.MintVectorEnv`
(one batch request per step).

Listing the tasks costs most of a second, too much for every ``import mintgym``. gymnasium reads its
registry, a plain dict, in ``make``, ``make_vec``, ``spec``, ``register`` and ``pprint_registry``;
:func:`install` (run by ``import mintgym``) puts a :class:`LazyRegistry` in its place, wherever gymnasium
names it: a dict with the same entries that adds MintGym's tasks the first time an id in the ``mintgym``
namespace is looked up or the registry is listed (gymnasium's own listings that check one other namespace,
in every ``register`` and ``make``, do not count: they read only that namespace's specs). When
gymnasium is imported after mintgym, a meta path hook does this as soon as gymnasium's registration module
has run, before anything else can hold the old dict. The dict it replaced is kept equal to it, for code
that took a reference earlier.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

NAMESPACE = "mintgym"
ENTRY_POINT = "mintgym.gym_registration:make_env"
VECTOR_ENTRY_POINT = "mintgym.gym_registration:make_vector_env"
_REGISTRATION = "gymnasium.envs.registration"


def gym_id(task_id: str) -> str:
    """The gymnasium id of MintGym task ``task_id``: ``mintgym/<pack>.<name with dots>[-vN]``."""
    from mintgym.env import registration

    parsed = registration.parse_id(task_id)
    name = ".".join([parsed.pack, *parsed.name.split("/")])
    return f"{NAMESPACE}/{name}" + ("" if parsed.version is None else f"-v{parsed.version}")


def make_env(task_id: str, render_mode: str | None = "rgb_array", **kwargs: Any):
    """gymnasium's entry point: ``mintgym.make(task_id, **kwargs)``, rendering ``rgb_array`` frames."""
    from mintgym.runtime.make import make

    _check_render_mode(render_mode)
    env = make(task_id, **kwargs)
    env.render_mode = render_mode
    return env


def make_vector_env(task_id: str, num_envs: int = 1, render_mode: str | None = "rgb_array", **kwargs: Any):
    """gymnasium's vector entry point (``gymnasium.make_vec``): a :class:`~mintgym.runtime.vector.MintVectorEnv`."""
    from mintgym.runtime.vector import MintVectorEnv

    _check_render_mode(render_mode)
    return MintVectorEnv(task_id, num_envs, render_mode=render_mode, **kwargs)


def _check_render_mode(render_mode: str | None) -> None:
    if render_mode not in (None, "rgb_array"):
        raise ValueError(f"MintGym envs render 'rgb_array' (the last screenshot), not {render_mode!r}")


class LazyRegistry(dict):
    """gymnasium's registry, which adds MintGym's tasks when one is looked up or the registry is listed.

    Writes go to ``mirror`` too (the dict it replaced), so code holding that one sees every entry."""

    def __init__(self, entries: dict, mirror: dict | None = None):
        super().__init__(entries)
        self._mirror = mirror
        self._synced: set[str] = set()
        self._syncing = False
        self.collisions: dict[str, tuple[str, str]] = {}

    # ---- filling -------------------------------------------------------------------------------
    def sync(self) -> None:
        """Add a spec for every MintGym task registered since the last call (the first call lists them)."""
        if self._syncing:  # listing the tasks may import a package that registers gymnasium envs
            return
        self._syncing = True
        try:
            from gymnasium.envs.registration import EnvSpec

            from mintgym.env import registration

            for task in registration.tasks():
                if task.id in self._synced:
                    continue
                self._synced.add(task.id)
                env_id = gym_id(task.id)
                taken = dict.get(self, env_id)
                if taken is not None:
                    self.collisions[env_id] = (taken.kwargs.get("task_id", taken.entry_point), task.id)
                    warnings.warn(f"MintGym task {task.id!r} is not in gymnasium's registry: its id {env_id!r} is "
                                  f"taken by {self.collisions[env_id][0]!r}; use mintgym.make({task.id!r})",
                                  stacklevel=2)
                    continue
                self._put(env_id, EnvSpec(id=env_id, entry_point=ENTRY_POINT, vector_entry_point=VECTOR_ENTRY_POINT,
                                          max_episode_steps=task.max_steps, kwargs={"task_id": task.id}))
        finally:
            self._syncing = False

    def _put(self, key: str, spec: Any) -> None:
        dict.__setitem__(self, key, spec)
        if self._mirror is not None:
            dict.__setitem__(self._mirror, key, spec)

    def _sync_for(self, key: Any) -> None:
        if isinstance(key, str) and key.startswith(NAMESPACE + "/") and not dict.__contains__(self, key):
            self.sync()

    def _sync_for_listing(self) -> None:
        """Sync before a listing, unless gymnasium lists to check one namespace other than MintGym's (each
        ``register`` and ``make`` does: its version and namespace checks read only that namespace's specs; without
        this, importing gymnasium, which registers its own envs, would list every MintGym task). Should gymnasium
        rename what this reads, the cost is one early listing, not a wrong answer."""
        caller = sys._getframe(2)
        if caller.f_globals.get("__name__") == _REGISTRATION:
            local = caller.f_locals
            if "ns" in local:
                namespace = local["ns"]
            elif "testing_spec" in local:
                namespace = getattr(local["testing_spec"], "namespace", NAMESPACE)
            else:
                namespace = NAMESPACE  # pprint_registry, or a check this module does not know: list everything
            if namespace != NAMESPACE:
                return
        self.sync()

    # ---- reads: a MintGym id, or any listing, first adds the tasks ------------------------------
    def get(self, key, default=None):
        self._sync_for(key)
        return dict.get(self, key, default)

    def __getitem__(self, key):
        self._sync_for(key)
        return dict.__getitem__(self, key)

    def __contains__(self, key) -> bool:
        self._sync_for(key)
        return dict.__contains__(self, key)

    def __iter__(self):
        self._sync_for_listing()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._sync_for_listing()
        return dict.__len__(self)

    def keys(self):
        self._sync_for_listing()
        return dict.keys(self)

    def values(self):
        self._sync_for_listing()
        return dict.values(self)

    def items(self):
        self._sync_for_listing()
        return dict.items(self)

    def copy(self) -> dict:
        self.sync()
        return dict(dict.items(self))

    def __repr__(self) -> str:
        self.sync()
        return dict.__repr__(self)

    # ---- writes: mirrored ---------------------------------------------------------------------
    def __setitem__(self, key, value) -> None:
        self._put(key, value)

    def __delitem__(self, key) -> None:
        dict.__delitem__(self, key)
        if self._mirror is not None:
            self._mirror.pop(key, None)

    def pop(self, key, *default):
        if self._mirror is not None:
            self._mirror.pop(key, None)
        return dict.pop(self, key, *default)

    def update(self, *args, **kwargs) -> None:
        for key, value in dict(*args, **kwargs).items():
            self._put(key, value)

    def setdefault(self, key, default=None):
        if not dict.__contains__(self, key):
            self._put(key, default)
        return dict.__getitem__(self, key)

    def clear(self) -> None:
        dict.clear(self)
        if self._mirror is not None:
            self._mirror.clear()


def install() -> None:
    """Make MintGym's ids resolvable by gymnasium: now when gymnasium is imported, else as soon as it is."""
    module = sys.modules.get(_REGISTRATION)
    if module is not None and hasattr(module, "pprint_registry"):  # imported, and done importing
        lazy_registry(module)
    elif not any(isinstance(finder, _AfterGymnasiumRegistration) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasiumRegistration())


def lazy_registry(module: Any = None) -> LazyRegistry:
    """Put a :class:`LazyRegistry` in place of gymnasium's registry (once), everywhere gymnasium names it."""
    module = module or sys.modules[_REGISTRATION]
    old = module.registry
    if isinstance(old, LazyRegistry):
        return old
    new = LazyRegistry(old, mirror=old)
    module.registry = new
    for name in ("gymnasium.envs", "gymnasium"):
        holder = sys.modules.get(name)
        if holder is not None and getattr(holder, "registry", None) is old:
            holder.registry = new
    printer = getattr(module, "pprint_registry", None)
    if printer is not None and printer.__defaults__ and printer.__defaults__[0] is old:
        printer.__defaults__ = (new, *printer.__defaults__[1:])
    return new


class _AfterGymnasiumRegistration:
    """A meta path finder that lets gymnasium's registration module load as usual, then swaps its registry
    (before ``gymnasium/__init__`` re-exports it), and leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname != _REGISTRATION:
            return None
        sys.meta_path.remove(self)
        from importlib.util import find_spec

        spec = find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module) -> None:
            run(module)
            lazy_registry(module)

        spec.loader.exec_module = exec_module
        return spec
