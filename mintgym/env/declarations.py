"""Layer 1: what each domain and task pack declares about itself, read by the core without naming it.

A ``mintgym.declarations`` entry point names a :class:`Declaration` in a light module of the domain or pack
(``android = "mintgym.environments.android.declaration:DECLARATION"``): the fields of its entries in task
files, the line its screenshots get in agent prompts, why none of its tasks can run on this machine, and
the command-line flags it adds to MintGym's commands. The core (task files, the CLI, the env server)
reads these here, so a new domain or pack touches no core file. :func:`declare` adds one at run time,
:func:`declaring` for the length of a ``with`` block (tests, notebooks). Session options are declared by the
host itself (``EnvironmentHost.options_model``).

Nothing is imported until a declaration is asked for; a declaration module must stay cheap to import
(no browser, no device, no VM tooling): it names heavier things as ``module:Class`` or imports them inside
its functions.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import entry_points
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mintgym.errors import RegistrationError

GROUP = "mintgym.declarations"

#: The commands that take declared flags.
COMMANDS = ("tasks", "rollout", "eval", "serve", "check")


class CommandOption(BaseModel):
    """A command-line flag a domain or pack adds to some of MintGym's commands.

    When a command already has the flag (``eval --allow-internet``), the declaration adds no second one: its
    ``apply`` gets that flag's value too, and its ``help`` joins the flag's help as ``"; <name>: <help>"``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    flag: str = Field(pattern=r"^--[a-z][a-z0-9-]*$")
    help: str
    #: The commands that take it (of :data:`COMMANDS`).
    commands: tuple[Literal["tasks", "rollout", "eval", "serve", "check"], ...]
    #: ``text`` (a string), ``path`` (a file or folder) or ``switch`` (on when given).
    kind: Literal["text", "path", "switch"] = "text"
    #: Called with the flag's value (None, or False for a switch, when not given) before the command runs;
    #: a ValueError is the command's one-line error (exit 2); a callable it returns runs when the command ends.
    apply: Callable[[Any], Callable[[], None] | None] | None = None
    #: ``serve``: a given value becomes this option of the served host (``--serial`` -> ``serial``).
    host_option: str | None = None


class Declaration(BaseModel):
    """What one domain or pack tells the core about itself (every field optional)."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    #: ``module:Class``: the TaskEntry subclass reading this domain's tasks in task files.
    task_entry: str | None = None
    #: Fields that make a task-file entry with no ``domain`` one of this domain's (an OSWorld task JSON's
    #: ``evaluator`` makes it a desktop task).
    task_entry_fields: tuple[str, ...] = ()
    #: The line agent prompts add about this domain's screenshots (reported by its env server).
    screen_hint: str = ""
    #: The screen (width, height) a session shows for a task, given the task and the size the session's options
    #: gave it (``width``/``height``, a viewport); starts nothing. Domains whose tasks bring their own screen
    #: declare it (web tasks carry their viewport); left out, the session's size holds for every task.
    task_screen: Callable[[Any, tuple[int, int]], tuple[int, int]] | None = None
    #: Dotted paths of step-info fields that differ between runs of one seed and action (a reward decayed by
    #: wall-clock time, ``"miniwob.env_reward"``): gymnasium envs leave them out of ``info``, so equal seeds give
    #: equal infos, as gymnasium's checker wants.
    volatile_info: tuple[str, ...] = ()
    #: Why no task of this domain can run on this machine (no device attached), else None; starts nothing.
    unavailable: Callable[[], str | None] | None = None
    #: ``mintgym serve`` starts and stops the host once before serving, so a missing device is one clean
    #: error with the host's advice rather than a failed server start.
    probe_before_serving: bool = False
    #: Flags this domain or pack adds to the commands.
    options: tuple[CommandOption, ...] = ()
    #: The side channels its sessions fill (:mod:`mintgym.observe`: ``som``, ``a11y``, ``dom``, ``text``);
    #: asking for another is refused in one line. None: not declared, so nothing is checked.
    channels: tuple[str, ...] | None = None


_refs: dict[str, str | Declaration] = {}
_loaded: dict[str, Declaration] = {}
_discovered = False


def _discover() -> None:
    global _discovered
    if not _discovered:
        _discovered = True
        for ep in entry_points(group=GROUP):
            _refs.setdefault(ep.name, ep.value)


def declare(name: str, declaration: str | Declaration) -> None:
    """Register the declaration (or ``"module:ATTR"`` naming one) of domain or pack ``name``."""
    _discover()
    _refs[name] = declaration
    _loaded.pop(name, None)


@contextmanager
def declaring(**added: str | Declaration) -> Iterator[None]:
    """Declarations (name -> declaration) that hold only inside the ``with`` block (tests, notebooks)."""
    _discover()
    refs, loaded = dict(_refs), dict(_loaded)
    for name, found in added.items():
        declare(name, found)
    try:
        yield
    finally:
        for table, saved in ((_refs, refs), (_loaded, loaded)):
            table.clear()
            table.update(saved)


def names() -> list[str]:
    """The domains and packs that declare something."""
    _discover()
    return sorted(_refs)


def declaration(name: str) -> Declaration:
    """The declaration of domain or pack ``name`` (an empty one when it declares nothing)."""
    _discover()
    if name not in _loaded:
        ref = _refs.get(name)
        found = load(ref) if isinstance(ref, str) else ref or Declaration()
        if not isinstance(found, Declaration):
            raise RegistrationError(f"the {GROUP} entry point {name!r} ({ref}) is a {type(found).__name__}, "
                                    "not a mintgym.env.declarations.Declaration")
        _loaded[name] = found
    return _loaded[name]


def declarations() -> dict[str, Declaration]:
    """Every declaration, by domain or pack name."""
    return {name: declaration(name) for name in names()}


def load(ref: str) -> Any:
    """The object a ``module:attr`` reference names; RegistrationError saying which part is missing."""
    module, colon, attr = ref.partition(":")
    if not colon or not module or not attr:
        raise RegistrationError(f"a reference is module:attr, got {ref!r}")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as err:
        raise RegistrationError(f"{ref}: cannot import {module!r} ({err})") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise RegistrationError(f"{ref}: {module!r} has no {attr!r}")
        obj = getattr(obj, part)
    return obj


def unavailable(domain: str) -> str | None:
    """Why no task of ``domain`` can run on this machine, as its declaration says, else None. Starts nothing."""
    check = declaration(domain).unavailable
    return check() if check is not None else None


def unsupported_channels(domain: str, observe: Any) -> str | None:
    """Why ``domain`` cannot give an agent the observation channels ``observe``, in one line, else None."""
    from mintgym.observe import unsupported

    return unsupported(observe, domain, declaration(domain).channels)


def task_screen_size(domain: str, task: Any, session_size: tuple[int, int]) -> tuple[int, int]:
    """The (width, height) of the frames a ``domain`` session of ``session_size`` shows for ``task``, as the
    domain declares (:attr:`Declaration.task_screen`); a gymnasium env fixes its observation space to it."""
    declared = declaration(domain).task_screen
    size = declared(task, tuple(session_size)) if declared is not None and task is not None else session_size
    width, height = (int(v) for v in size)
    if width < 1 or height < 1:
        raise RegistrationError(f"domain {domain!r} declares a {width}x{height} screen for task "
                                f"{getattr(task, 'id', task)!r}; a screen is at least 1x1")
    return width, height


def options(command: str) -> list[tuple[str, CommandOption]]:
    """(declaring name, option) of every flag declared for ``command``, in name order."""
    return [(name, option) for name, found in declarations().items() for option in found.options
            if command in option.commands]
