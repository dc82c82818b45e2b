"""Layer 1: the registry of environment hosts (one per domain) and task packs, fed by entry points.

* ``mintgym.environments`` entry points name an :class:`EnvironmentHost` class per domain
  (``pytool = "mintgym.environments.pytool.env:PytoolHost"``).
* ``mintgym.tasks`` entry points name a callable returning an iterable of :class:`Task` objects
  (``pytool = "mintgym.environments.pytool.tasks:all_tasks"``).

Nothing heavy is imported until a host or pack is asked for; :func:`register_host` and
:func:`register_tasks` add plug-ins at run time (tests, notebooks), :func:`add_pack` one given as
``module:function`` (``mintgym ... --packs``).

Packs added at run time reach the env servers this process starts: :func:`forwarding_environment` names
them in ``$MINTGYM_PACKS`` (a JSON object, pack -> ``module:function``), which every process reads when it
first looks at the registry, and puts their import roots on ``PYTHONPATH``. A pack given as a callable
with no importable name (a lambda, a function defined inside another or in ``__main__``) cannot be
forwarded: the server's unknown-task error then names the pack and why.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
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
#: Packs added at run time (not by entry point): the ones env servers must be told about.
_runtime_packs: set[str] = set()
#: Which pack each loaded task came from.
_task_pack: dict[str, str] = {}
PACKS_ENV = "MINTGYM_PACKS"
#: Packs the parent process could not forward (pack -> why), for the server's unknown-task errors.
UNFORWARDED_ENV = "MINTGYM_PACKS_UNFORWARDED"


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    for ep in entry_points(group=HOST_GROUP):
        _host_refs.setdefault(ep.name, ep.value)
    for ep in entry_points(group=TASK_GROUP):
        _pack_refs.setdefault(ep.name, ep.value)
    for pack, ref in _forwarded(PACKS_ENV).items():
        _pack_refs[pack] = ref
        _runtime_packs.add(pack)


def _forwarded(variable: str) -> dict[str, str]:
    raw = os.environ.get(variable)
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        raise RegistrationError(f"${variable} is not JSON ({err}); it should be an object of pack -> "
                                "'module:function'") from None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise RegistrationError(f"${variable} should be a JSON object of pack -> 'module:function', got {raw[:200]!r}")
    return value


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
    _runtime_packs.add(pack)
    if _tasks is not None:
        _load_pack(pack)


def add_pack(spec: str) -> str:
    """Register the pack ``module:function`` (named after the module) or ``NAME=module:function`` and load
    it now; returns its name. A ref that does not parse, import or load raises RegistrationError saying so."""
    name, sep, ref = spec.partition("=")
    if not sep:
        name, ref = "", spec
    module, colon, attr = ref.partition(":")
    if not colon or not module or not attr:
        raise RegistrationError(f"a task pack is given as module:function (or NAME=module:function), got {spec!r}")
    try:
        factory = _load(ref)
    except ImportError as err:
        raise RegistrationError(f"task pack {ref!r}: cannot import {module!r} ({err}); put its folder on "
                                "PYTHONPATH or install its package") from None
    except AttributeError:
        raise RegistrationError(f"task pack {ref!r}: module {module!r} has no {attr!r}") from None
    if not callable(factory):
        raise RegistrationError(f"task pack {ref!r} is a {type(factory).__name__}, not a function returning tasks")
    name = name or module
    _discover()
    if _pack_refs.get(name) != ref:  # the same pack given twice (or also in $MINTGYM_PACKS) loads once
        register_tasks(name, ref)
    _all()
    if name in broken_packs:
        raise RegistrationError(f"task pack {ref!r} failed to load: {broken_packs[name]}")
    return name


def _importable_ref(target: str | Callable[[], Iterable[Task]]) -> tuple[str | None, str]:
    """(``module:qualname`` a fresh process can import, or None, and why not)."""
    if isinstance(target, str):
        return target, ""
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if not module or not qualname:
        return None, f"{target!r} has no module and name to import it by"
    if "<lambda>" in qualname or "<locals>" in qualname:
        return None, (f"{module}.{qualname} is a lambda or a function defined inside another; register a "
                      "module-level function or 'module:function'")
    if module == "__main__":
        return None, (f"{qualname} is defined in __main__, which another process cannot import; move it into "
                      "a module and register 'module:function'")
    try:
        found = _load(f"{module}:{qualname}")
    except (ImportError, AttributeError) as err:
        return None, f"{module}:{qualname} does not import by name ({err})"
    if found is not target:
        return None, f"{module}:{qualname} names a different object than the one registered"
    return f"{module}:{qualname}", ""


def _import_root(ref: str) -> str | None:
    """The sys.path folder a ref's top-level package was imported from (None for installed ones)."""
    top = ref.partition(":")[0].split(".")[0]
    module = sys.modules.get(top)
    origin = getattr(module, "__file__", None)
    if not origin:
        return None
    folder = os.path.dirname(os.path.abspath(origin))
    return os.path.dirname(folder) if os.path.basename(origin) == "__init__.py" else folder


def forwarding_environment() -> dict[str, str]:
    """Environment variables that make the packs added here available to a server started from here:
    ``$MINTGYM_PACKS``, ``$MINTGYM_PACKS_UNFORWARDED`` (packs that cannot be, and why) and ``PYTHONPATH``."""
    _discover()
    refs: dict[str, str] = {}
    unforwarded: dict[str, str] = {}
    for pack in sorted(_runtime_packs & set(_pack_refs)):  # a pack may have been taken out again
        ref, why = _importable_ref(_pack_refs[pack])
        if ref is None:
            unforwarded[pack] = why
        else:
            refs[pack] = ref
    env: dict[str, str] = {}
    if refs:
        env[PACKS_ENV] = json.dumps(refs)
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        for ref in refs.values():
            root = _import_root(ref)
            if root and root not in paths and "site-packages" not in root:
                paths.append(root)
        if paths:
            env["PYTHONPATH"] = os.pathsep.join(paths)
    if unforwarded:
        env[UNFORWARDED_ENV] = json.dumps(unforwarded)
    return env


def pack_tasks(pack: str) -> list[Task]:
    """The tasks pack ``pack`` registered, by id."""
    return sorted((t for t in _all().values() if _task_pack.get(t.id) == pack), key=lambda t: t.id)


def forwarding_problem(task_id: str) -> str | None:
    """Why a server started from here could not run ``task_id`` (its pack cannot be forwarded), else None."""
    pack = _task_pack.get(task_id)
    if pack is None or pack not in _runtime_packs or pack not in _pack_refs:
        return None
    ref, why = _importable_ref(_pack_refs[pack])
    return None if ref else f"task pack {pack!r} cannot be forwarded to an env server: {why}"


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
        _task_pack[task.id] = pack
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
    unforwarded = _forwarded(UNFORWARDED_ENV)
    if unforwarded:
        hint += ("; packs registered in the process that started this server could not be forwarded: "
                 + "; ".join(f"{p}: {why}" for p, why in sorted(unforwarded.items())))
    raise RegistrationError(f"unknown task id {task_id!r}{hint}")


def resolve(env_or_task_id: str) -> tuple[str, Task | None]:
    """Map an id to (domain, task): a domain name gives no fixed task, a task id gives its domain."""
    _discover()
    if env_or_task_id in _host_refs:
        return env_or_task_id, None
    t = task(env_or_task_id)
    return t.domain, t
