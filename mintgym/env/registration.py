"""Layer 1: the registry of environment hosts (one per domain) and task packs, fed by entry points.

* ``mintgym.environments`` entry points name an :class:`EnvironmentHost` class per domain
  (``pytool = "mintgym.environments.pytool.env:PytoolHost"``).
* ``mintgym.tasks`` entry points name a callable returning an iterable of :class:`Task` objects
  (``pytool = "mintgym.environments.pytool.tasks:all_tasks"``).

Nothing heavy is imported until a host or pack is asked for; :func:`register_host` and
:func:`register_tasks` add plug-ins at run time (tests, notebooks), :func:`add_pack` one given as
``module:function`` or as a task file or folder of them (``mintgym ... --packs``; see
:mod:`mintgym.env.taskfiles`). Task ids follow one scheme, ``[domain/]pack/name[-vN]``
(:mod:`mintgym.env.ids`): :func:`task` accepts an id with or without its domain, and without a version
(the highest one registered).

Packs added at run time reach the env servers this process starts: :func:`forwarding_environment` names
them in ``$MINTGYM_PACKS`` (a JSON object, pack -> ``module:function``), which every process reads when it
first looks at the registry, and puts their import roots on ``PYTHONPATH``. A pack given as a callable
with no importable name (a lambda, a function defined inside another or in ``__main__``) cannot be
forwarded: the server's unknown-task error then names the pack and why, and :func:`forwarding_problem`
lets a caller refuse early. :func:`pack_forwards` describes each forwardable pack (its ref and the files or
import roots it needs) for providers that must carry them to another machine or container (docker, ray).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import entry_points

from mintgym.env import taskfiles
from mintgym.env.core import EnvironmentHost, Task
from mintgym.env.ids import TaskId, parse_task_id
from mintgym.errors import RegistrationError
from mintgym.extras import install_hint

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
    if taskfiles.is_task_file_ref(ref):
        return lambda: taskfiles.load_tasks(ref)
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
    """Register a task pack: a callable, ``"module:function"`` returning tasks, or a task file or folder."""
    global _tasks
    if isinstance(tasks, str) and taskfiles.is_task_file_ref(tasks):
        tasks = os.path.abspath(tasks)  # forwarded to servers that run elsewhere
    _discover()
    _pack_refs[pack] = tasks
    _runtime_packs.add(pack)
    if _tasks is not None:
        _load_pack(pack)


def add_pack(spec: str) -> str:
    """Register the pack ``module:function`` (named after the module), a task file or folder of them (named
    by its absolute path), or either as ``NAME=...``, and load it now; returns its name. A ref that does not
    parse, import or load raises RegistrationError saying so."""
    name, sep, ref = spec.partition("=")
    if not sep or "/" in name:
        name, ref = "", spec
    if taskfiles.is_task_file_ref(ref) or os.path.exists(ref):
        return _add_file_pack(name, ref)
    module, colon, attr = ref.partition(":")
    if not colon or not module or not attr:
        raise RegistrationError(f"a task pack is given as module:function, a task file (.yaml, .yml, .json) or a "
                                f"folder of them (or NAME=...), got {spec!r}")
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


def _add_file_pack(name: str, path: str) -> str:
    ref = os.path.abspath(path)
    tasks_found = taskfiles.load_tasks(ref)  # a mistake is one TaskFileError line, before anything registers
    name = name or ref
    _discover()
    if _pack_refs.get(name) != ref:
        register_tasks(name, ref)
    _all()
    if name in broken_packs:
        raise RegistrationError(f"task pack {ref!r} failed to load: {broken_packs[name]}")
    if not tasks_found:
        raise RegistrationError(f"task file pack {ref!r} holds no tasks")
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
    if taskfiles.is_task_file_ref(ref):
        return None
    top = ref.partition(":")[0].split(".")[0]
    module = sys.modules.get(top)
    origin = getattr(module, "__file__", None)
    if not origin:
        return None
    folder = os.path.dirname(os.path.abspath(origin))
    return os.path.dirname(folder) if os.path.basename(origin) == "__init__.py" else folder


def forwarding_environment() -> dict[str, str]:
    """Environment variables that make the packs added here available to a server started from here (on
    this machine): ``$MINTGYM_PACKS``, ``$MINTGYM_PACKS_UNFORWARDED`` (packs that cannot be, and why) and
    ``PYTHONPATH`` (the folders module packs were imported from)."""
    forwards, unforwarded = pack_forwards()
    env: dict[str, str] = {}
    if forwards:
        env[PACKS_ENV] = json.dumps({f.pack: f.ref for f in forwards})
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        for forward in forwards:
            root = _import_root(forward.ref)
            if root and root not in paths and "site-packages" not in root:
                paths.append(root)
        if paths:
            env["PYTHONPATH"] = os.pathsep.join(paths)
    if unforwarded:
        env[UNFORWARDED_ENV] = json.dumps(unforwarded)
    return env


@dataclass(frozen=True)
class PackForward:
    """A pack a provider must carry to a server on another machine or in a container.

    ``ref`` is ``module:function`` or the absolute path of a task file or folder; ``paths`` are what the
    server needs to load it: for a task-file pack its task files and every file they read (pages, images,
    OSWorld JSON), for a module pack the folder of its top-level package (or its module file)."""

    pack: str
    ref: str
    paths: tuple[str, ...]

    @property
    def is_task_file(self) -> bool:
        return taskfiles.is_task_file_ref(self.ref)


def pack_forwards(entry_points_too: bool = False) -> tuple[list[PackForward], dict[str, str]]:
    """(the packs added here at run time, with what they need; the packs that cannot be forwarded -> why).

    ``entry_points_too`` also lists entry-point packs of packages other than MintGym (a container or a
    remote node has MintGym's own, not necessarily the user's)."""
    _discover()
    names = set(_runtime_packs)
    if entry_points_too:
        names |= {p for p, ref in _pack_refs.items()
                  if isinstance(ref, str) and not ref.startswith("mintgym.") and not taskfiles.is_task_file_ref(ref)}
    forwards: list[PackForward] = []
    unforwarded: dict[str, str] = {}
    for pack in sorted(names & set(_pack_refs)):
        ref, why = _importable_ref(_pack_refs[pack])
        if ref is None:
            unforwarded[pack] = why
            continue
        try:
            if taskfiles.is_task_file_ref(ref):
                paths = tuple(str(p) for p in taskfiles.pack_files(ref))
            else:
                paths = _module_paths(ref)
        except (RegistrationError, OSError) as err:
            unforwarded[pack] = str(err)
            continue
        forwards.append(PackForward(pack, ref, paths))
    return forwards, unforwarded


def _module_paths(ref: str) -> tuple[str, ...]:
    """The folder of a module ref's top-level package, or its module file; () for MintGym's own modules."""
    import importlib.util

    top = ref.partition(":")[0].split(".")[0]
    if top == "mintgym":
        return ()
    spec = importlib.util.find_spec(top)
    if spec is None:
        raise RegistrationError(f"module {top!r} of pack {ref!r} cannot be found to forward it")
    if spec.submodule_search_locations:
        locations = list(spec.submodule_search_locations)
        if len(locations) != 1:
            raise RegistrationError(f"package {top!r} of pack {ref!r} is a namespace package over "
                                    f"{len(locations)} folders; forward a regular package")
        return (os.path.abspath(locations[0]),)
    if not spec.origin or not os.path.isfile(spec.origin) or not spec.origin.endswith(".py"):
        raise RegistrationError(f"module {top!r} of pack {ref!r} is not Python source ({spec.origin}); it cannot "
                                "be carried to another machine: install it there")
    return (os.path.abspath(spec.origin),)


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
        for task in loaded:
            parse_id(task.id)  # one id scheme: a pack with an id outside it does not load
    except Exception as err:  # a pack whose optional extra is missing must not hide the others
        broken_packs[pack] = f"{type(err).__name__}: {err}"
        if not isinstance(err, ModuleNotFoundError):  # a missing extra is reported by `mintgym envs`, quietly
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
    for task_id in [t for t, p in _task_pack.items() if p == pack]:  # its tasks, whatever their ids
        _tasks.pop(task_id, None)
        del _task_pack[task_id]
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
    """The task with this id: as registered, with or without its domain, or without a version (the highest
    one registered). The error is one line: close matches, and why the pack that has it may be missing."""
    table = _all()
    if task_id in table:
        return table[task_id]
    matches = spellings().get(task_id, [])
    if len({id(t) for t in matches}) == 1:
        return matches[0]
    if matches:
        raise RegistrationError(f"task id {task_id!r} is ambiguous: it names "
                                f"{', '.join(sorted(t.id for t in matches))}; "
                                "give the domain too")
    raise RegistrationError(f"unknown task id {task_id!r}{_missing_hint(task_id, table)}")


def parse_id(task_id: str) -> TaskId:
    """:func:`mintgym.env.ids.parse_task_id` with this registry's domains."""
    _discover()
    return parse_task_id(task_id, set(_host_refs) | set(taskfiles.kinds()))


def canonical_id(task: Task) -> str:
    """``domain/pack/name[-vN]`` for a registered task (its registered id may leave the domain out)."""
    return parse_id(task.id).canonical(task.domain)


def spellings() -> dict[str, list[Task]]:
    """Every accepted spelling of every registered id -> the tasks it names (an unversioned spelling names
    only the highest version)."""
    found: dict[str, list[Task]] = {}
    latest: dict[str, tuple[int, Task]] = {}
    for tid, t in _all().items():
        try:
            parsed = parse_id(tid)
        except RegistrationError:
            continue
        for key in {tid, parsed.canonical(t.domain), parsed.short()}:
            found.setdefault(key, []).append(t)
        if parsed.version is not None:
            for key in (parsed.unversioned(t.domain), f"{parsed.pack}/{parsed.name}"):
                if key not in latest or latest[key][0] < parsed.version:
                    latest[key] = (parsed.version, t)
    for key, (_, t) in latest.items():
        found.setdefault(key, [t])
    return found


def _missing_hint(task_id: str, table: dict[str, Task]) -> str:
    import difflib

    known = spellings()
    close = difflib.get_close_matches(task_id, list(known), n=5)
    close = list(dict.fromkeys(known[c][0].id for c in close))
    hint = (f"; did you mean {', '.join(close)}?" if close
            else f"; {len(table)} tasks are registered (see `mintgym tasks`)")
    try:
        parsed = parse_id(task_id)
    except RegistrationError as err:
        return f"{hint}; {err}"
    namespaces = {i.split("/")[0] for i in table} | {i.split("/")[1] for i in table if i.count("/") >= 2}
    if parsed.pack in broken_packs:
        return f"{hint}; its pack {parsed.pack!r} failed to load: {why_broken(parsed.pack)}"
    if parsed.pack not in namespaces:
        hint += (f"; no registered pack has ids under {parsed.pack!r}: add yours with --packs module:function or "
                 "--packs path/to/tasks.yaml (or a mintgym.tasks entry point); a pack registered with "
                 "register_tasks() in another process reaches this one only when that process forwards it")
    if broken_packs:
        hint += "; packs that failed to load: " + "; ".join(f"{p}: {why_broken(p)}" for p in sorted(broken_packs))
    unforwarded = _forwarded(UNFORWARDED_ENV)
    if unforwarded:
        hint += ("; packs registered in the process that started this server could not be forwarded: "
                 + "; ".join(f"{p}: {why}" for p, why in sorted(unforwarded.items())))
    return hint


def why_broken(pack: str) -> str:
    """Why ``pack`` (one of :data:`broken_packs`) failed to load: the extra to install when a module of one is
    missing, else the error."""
    hint = install_hint(broken_packs[pack], pack)
    return f"it {hint}" if hint else broken_packs[pack]


def resolve(env_or_task_id: str) -> tuple[str, Task | None]:
    """Map an id to (domain, task): a domain name gives no fixed task, a task id gives its domain."""
    _discover()
    if env_or_task_id in _host_refs:
        return env_or_task_id, None
    t = task(env_or_task_id)
    return t.domain, t
