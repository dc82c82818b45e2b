"""Layer 1: the registry of environment hosts (one per domain) and task packs, fed by entry points.

* ``mintgym.environments`` entry points name an :class:`EnvironmentHost` class per domain
  (``pytool = "mintgym.environments.pytool.env:PytoolHost"``).
* ``mintgym.tasks`` entry points name a callable returning an iterable of :class:`Task` objects
  (``pytool = "mintgym.environments.pytool.tasks:all_tasks"``).

Nothing heavy is imported until a host or pack is asked for; :func:`register_host` and
:func:`register_tasks` add plug-ins at run time (tests, notebooks).
"""

from __future__ import annotations

import importlib
import warnings
from importlib.metadata import entry_points
from typing import Callable, Iterable

from mintgym.env.core import EnvironmentHost, Task
from mintgym.errors import RegistrationError

HOST_GROUP = "mintgym.environments"
TASK_GROUP = "mintgym.tasks"

_host_refs: dict[str, str | type[EnvironmentHost]] = {}
_pack_refs: dict[str, str | Callable[[], Iterable[Task]]] = {}
_tasks: dict[str, Task] | None = None
_loaded_packs: set[str] = set()
#: Packs whose entry point failed to load: pack name -> the error, shown by `mintgym envs`.
broken_packs: dict[str, str] = {}
_discovered = False


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    for ep in entry_points(group=HOST_GROUP):
        _host_refs.setdefault(ep.name, ep.value)
    for ep in entry_points(group=TASK_GROUP):
        _pack_refs.setdefault(ep.name, ep.value)


def _load(ref: str | object) -> object:
    if not isinstance(ref, str):
        return ref
    module, _, attr = ref.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def register_host(domain: str, host: str | type[EnvironmentHost]) -> None:
    """Register the host class (or ``"module:Class"``) serving ``domain``."""
    _discover()
    _host_refs[domain] = host


def register_tasks(pack: str, tasks: str | Callable[[], Iterable[Task]]) -> None:
    """Register a task pack: a callable (or ``"module:function"``) returning tasks."""
    global _tasks
    _discover()
    _pack_refs[pack] = tasks
    if _tasks is not None:
        _load_pack(pack)


def domains() -> list[str]:
    _discover()
    return sorted(_host_refs)


def host_class(domain: str) -> type[EnvironmentHost]:
    _discover()
    if domain not in _host_refs:
        raise RegistrationError(
            f"no environment registered for domain {domain!r}; registered: {', '.join(sorted(_host_refs)) or 'none'}"
            " (is the package that provides it installed with `pip install -e .`?)"
        )
    cls = _load(_host_refs[domain])
    if not (isinstance(cls, type) and issubclass(cls, EnvironmentHost)):
        raise RegistrationError(f"entry point for domain {domain!r} is not an EnvironmentHost: {cls!r}")
    return cls


def packs() -> list[str]:
    _discover()
    return sorted(_pack_refs)


def _load_pack(pack: str) -> None:
    assert _tasks is not None
    try:
        factory = _load(_pack_refs[pack])
        loaded = list(factory())  # type: ignore[operator]
    except Exception as err:  # a pack whose optional extra is missing must not hide the others
        broken_packs[pack] = f"{type(err).__name__}: {err}"
        warnings.warn(f"task pack {pack!r} ({_pack_refs[pack]}) failed to load: {err}", stacklevel=3)
        return
    broken_packs.pop(pack, None)
    for task in loaded:
        if task.id in _tasks and _tasks[task.id] is not task:
            raise RegistrationError(f"task id {task.id!r} registered twice (pack {pack!r})")
        _tasks[task.id] = task
    _loaded_packs.add(pack)


def reload_pack(pack: str) -> None:
    """Load a pack's tasks again (its data source changed); a no-op before the registry is first read."""
    if _tasks is None:
        return
    _discover()
    if pack not in _pack_refs:
        raise RegistrationError(f"unknown task pack {pack!r}; packs: {', '.join(sorted(_pack_refs))}")
    prefix = f"{pack}/"
    for task_id in [t for t in _tasks if t.startswith(prefix)]:
        del _tasks[task_id]
    _loaded_packs.discard(pack)
    _load_pack(pack)


def _all() -> dict[str, Task]:
    global _tasks
    _discover()
    if _tasks is None:
        _tasks = {}
        for pack in sorted(_pack_refs):
            _load_pack(pack)
    return _tasks


def tasks(domain: str | None = None, prefix: str | None = None) -> list[Task]:
    """Every registered task, optionally of one domain or with an id prefix (``"miniwob/"``)."""
    found = _all().values()
    return sorted(
        (t for t in found if (domain is None or t.domain == domain) and (prefix is None or t.id.startswith(prefix))),
        key=lambda t: t.id,
    )


def task(task_id: str) -> Task:
    """The task with this id; the error lists close matches."""
    table = _all()
    if task_id in table:
        return table[task_id]
    import difflib

    close = difflib.get_close_matches(task_id, table, n=5)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; {len(table)} tasks are registered (see `mintgym tasks`)"
    if broken_packs:
        hint += "; packs that failed to load: " + "; ".join(f"{p}: {e}" for p, e in sorted(broken_packs.items()))
    raise RegistrationError(f"unknown task id {task_id!r}{hint}")


def resolve(env_or_task_id: str) -> tuple[str, Task | None]:
    """Map an id to (domain, task): a domain name gives no fixed task, a task id gives its domain."""
    _discover()
    if env_or_task_id in _host_refs:
        return env_or_task_id, None
    t = task(env_or_task_id)
    return t.domain, t
