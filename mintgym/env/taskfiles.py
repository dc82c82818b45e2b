"""Layer 1: task files -- tasks written as YAML or JSON, no Python packaging (reference: docs/task-files.md).

A task file holds one task (an object), a list of tasks, or ``{"tasks": [...]}``. Every task has the
common fields of :class:`TaskEntry` (``id``, ``domain``, ``instruction``, ``max_steps``, ``tags``,
``oracle``) and its domain's own (a web page and scorers, a pytool question and its checked answer, a
desktop task's OSWorld ``config`` and ``evaluator``). Each domain's fields are a pydantic model with
``extra="forbid"`` that the domain declares (``Declaration.task_entry``, by ``module:Class``, see
:mod:`mintgym.env.declarations`; :func:`register_kind` adds one at run time), so this module names no domain;
a mistake is one :class:`TaskFileError` line naming the file, the task and the field.

The oracle is a list of steps: a shared action written as its JSON (``{"type": "click", "x": 10, "y": 20}``)
or one of the domain's declarative helpers (web: ``{"click": "#submit"}``). A task without ``oracle`` has
none, and ``mintgym check`` says so.

Loading: :func:`load_tasks` (a file or a folder of them) is what ``--packs path/to/tasks.yaml``, a
``mintgym.tasks`` entry point (``def tasks(): return load_tasks(Path(__file__).with_name("tasks.yaml"))``)
and ``$MINTGYM_PACKS`` use.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mintgym.action_spaces import ACTION_ADAPTER, ActionModel, action_set_for
from mintgym.env import declarations
from mintgym.env.core import Environment, Task
from mintgym.env.ids import parse_task_id
from mintgym.errors import RegistrationError

SUFFIXES = (".yaml", ".yml", ".json")
#: Domain -> the TaskEntry subclass (or ``module:Class``) added by :func:`register_kind`, over the declared ones.
_registered: dict[str, str | type[TaskEntry]] = {}


class TaskFileError(RegistrationError):
    """A task file that does not read, parse or validate (one line: file, task, field, what is wrong)."""


@dataclass(frozen=True)
class TaskSource:
    """Where a task was written: its file (pages and images are resolved beside it) and its place there."""

    file: Path
    index: int

    @property
    def folder(self) -> Path:
        return self.file.parent

    def resolve(self, name: str, field_name: str, task: str) -> Path:
        """A file named in the task, relative to the task file's folder; it must exist."""
        path = (self.folder / name).resolve()
        if not path.is_file():
            raise TaskFileError(f"{self.file}: task {task!r}: field {field_name!r}: no file {name!r} beside the "
                                f"task file (looked for {path})")
        return path


class OracleHelper(BaseModel):
    """A declarative oracle step of one domain that expands to shared actions when it runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def actions(self, env: Environment) -> AsyncIterator[ActionModel]:
        raise NotImplementedError


class TaskEntry(BaseModel):
    """The fields every task in a task file has; each domain's subclass adds its own and builds the Task."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="domain/pack/name[-vN], e.g. web/mine/sign-up-v1")
    domain: str
    instruction: str = Field(min_length=1, description="what the agent is asked to do")
    max_steps: int = Field(15, ge=1, le=10_000)
    family: str = ""
    tags: tuple[str, ...] = ()
    #: Shared actions (``{"type": ...}``) and the domain's helpers; None: the task has no oracle.
    oracle: list[dict[str, Any]] | None = None

    #: The declarative oracle helpers of this domain: the key that names one -> its model.
    helpers: ClassVar[dict[str, type[OracleHelper]]] = {}

    def build(self, source: TaskSource, oracle: list[ActionModel | OracleHelper] | None) -> Task:
        """The Task this entry describes."""
        raise NotImplementedError

    def referenced_files(self, source: TaskSource) -> list[Path]:
        """Files beside the task file this task reads (pages, images, OSWorld JSON): forwarded with it."""
        return []


def register_kind(domain: str, entry: str | type[TaskEntry]) -> None:
    """Let task files hold tasks of ``domain``, read by ``entry`` (a TaskEntry subclass or ``module:Class``)."""
    _registered[domain] = entry


def kinds() -> dict[str, str | type[TaskEntry]]:
    """Domain -> the TaskEntry subclass (or ``module:Class``) reading its tasks: declared, then registered."""
    declared = {name: d.task_entry for name, d in declarations.declarations().items() if d.task_entry}
    return {**declared, **_registered}


def kind(domain: str) -> type[TaskEntry]:
    """The TaskEntry subclass reading ``domain``'s tasks; KeyError when task files cannot hold them."""
    ref = kinds()[domain]
    return declarations.load(ref) if isinstance(ref, str) else ref


def _claiming_domain(raw: dict) -> str | None:
    """The one domain whose declared ``task_entry_fields`` this entry (with no ``domain``) has, else None."""
    claims = [name for name, d in declarations.declarations().items()
              if d.task_entry and set(d.task_entry_fields) & set(raw)]
    return claims[0] if len(claims) == 1 else None


def is_task_file_ref(ref: str) -> bool:
    """Whether a pack ref names a task file or folder (a path) rather than ``module:function``."""
    return ref.endswith(SUFFIXES) or "/" in ref or ref in (".", "..")


def task_files(path: str | Path) -> list[Path]:
    """The task files ``path`` names: itself, or the ``*.yaml``/``*.yml``/``*.json`` files of a folder."""
    path = Path(path)
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in SUFFIXES)
        if not found:
            raise TaskFileError(f"{path}: a folder of task files holds no *.yaml, *.yml or *.json file")
        return found
    if not path.is_file():
        raise TaskFileError(f"{path}: no such task file or folder")
    if path.suffix not in SUFFIXES:
        raise TaskFileError(f"{path}: a task file ends in .yaml, .yml or .json")
    return [path]


def load_tasks(path: str | Path) -> list[Task]:
    """Every task of a task file or a folder of task files (validated; a mistake raises TaskFileError)."""
    found: list[Task] = []
    seen: dict[str, Path] = {}
    for file in task_files(path):
        for task in load_file(file):
            if task.id in seen:
                raise TaskFileError(f"{file}: task {task.id!r}: field 'id': also defined in {seen[task.id]}")
            seen[task.id] = file
            found.append(task)
    return found


def pack_files(path: str | Path) -> list[Path]:
    """The task files of ``path`` and every file their tasks read (what forwarding a file pack must carry)."""
    files: list[Path] = []
    for file in task_files(path):
        files.append(file.resolve())
        for index, raw in enumerate(read_entries(file)):
            entry, source = _entry(raw, file, index)
            files.extend(entry.referenced_files(source))
    return list(dict.fromkeys(files))


def load_file(file: Path) -> list[Task]:
    return [build(raw, file, index) for index, raw in enumerate(read_entries(file))]


def read_entries(file: Path) -> list[dict]:
    """The raw task objects of one file."""
    file = Path(file).resolve()
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise TaskFileError(f"{file}: cannot read it ({err})") from None
    if file.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise TaskFileError(f"{file}: not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
            problem = getattr(err, "problem", None) or type(err).__name__
            raise TaskFileError(f"{file}: not valid YAML ({problem}{where})") from None
    if isinstance(data, dict) and "tasks" in data:
        extra = sorted(set(data) - {"tasks"})
        if extra:
            raise TaskFileError(f"{file}: unknown top-level field {extra[0]!r} beside 'tasks'")
        data = data["tasks"]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise TaskFileError(f"{file}: a task file holds a task object, a list of them or {{tasks: [...]}}, "
                            f"got {type(data).__name__ if data is not None else 'nothing'}")
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            raise TaskFileError(f"{file}: task #{index + 1}: a task is an object, got {type(item).__name__}")
    return data


def _entry(raw: dict, file: Path, index: int) -> tuple[TaskEntry, TaskSource]:
    source = TaskSource(Path(file).resolve(), index)
    name = raw.get("id") if isinstance(raw.get("id"), str) else f"#{index + 1}"
    domain = raw.get("domain")
    if domain is None and (claimed := _claiming_domain(raw)):  # e.g. an OSWorld task JSON under a MintGym id
        domain, raw = claimed, {**raw, "domain": claimed}
    known = kinds()
    if not isinstance(domain, str):
        raise TaskFileError(f"{source.file}: task {name!r}: field 'domain': missing; one of {', '.join(sorted(known))}")
    try:
        model = kind(domain)
    except KeyError:
        raise TaskFileError(f"{source.file}: task {name!r}: field 'domain': task files hold {', '.join(sorted(known))} "
                            f"tasks, not {domain!r}") from None
    try:
        entry = model.model_validate(raw, context={"source": source})
    except ValidationError as err:
        raise TaskFileError(f"{source.file}: task {name!r}: {_first_error(err, raw)}") from None
    try:
        parsed = parse_task_id(entry.id, known)
    except RegistrationError as err:
        raise TaskFileError(f"{source.file}: task {name!r}: field 'id': {err}") from None
    if parsed.domain != domain:
        raise TaskFileError(f"{source.file}: task {name!r}: field 'id': ids in task files are "
                            f"domain/pack/name[-vN] with the task's domain first, e.g. "
                            f"{domain}/{parsed.pack if parsed.domain else 'mypack'}/{parsed.versioned_name}")
    return entry, source


def build(raw: dict, file: Path, index: int) -> Task:
    """One validated Task from one raw task object."""
    entry, source = _entry(raw, file, index)
    oracle = None if entry.oracle is None else [_step(entry, source, i, step) for i, step in enumerate(entry.oracle)]
    return entry.build(source, oracle)


def _step(entry: TaskEntry, source: TaskSource, i: int, step: dict) -> ActionModel | OracleHelper:
    where = f"{source.file}: task {entry.id!r}: field 'oracle[{i}]'"
    if "type" in step:
        try:
            action = ACTION_ADAPTER.validate_python(step)
        except ValidationError as err:
            raise TaskFileError(f"{where}: {_first_error(err, step, with_field=False)}") from None
        allowed = action_set_for(entry.domain)
        if action.type not in allowed:
            raise TaskFileError(f"{where}: {action.type!r} is not an action of the {entry.domain} set "
                                f"({', '.join(allowed.type_names)})")
        return action
    named = [key for key in step if key in type(entry).helpers]
    if len(named) != 1:
        helpers = ", ".join(type(entry).helpers) or "none"
        raise TaskFileError(f"{where}: a step is a shared action ({{type: ...}}) or one helper of the "
                            f"{entry.domain} domain ({helpers}), got keys {sorted(step)}")
    try:
        return type(entry).helpers[named[0]].model_validate(step)
    except ValidationError as err:
        raise TaskFileError(f"{where}: {_first_error(err, step)}") from None


def _first_error(err: ValidationError, raw: Any = None, with_field: bool = True) -> str:
    """A validation error as ``field 'a.b[0].c': what is wrong``, the path as the user wrote it (pydantic's
    union and tag steps left out)."""
    first = err.errors()[0]
    node: Any = raw
    parts: list[str] = []
    for part in first["loc"]:
        if isinstance(part, int):
            if isinstance(node, dict):
                continue  # one object where a list may stand (a single scorer)
            parts.append(f"[{part}]")
            node = node[part] if isinstance(node, list) and part < len(node) else None
            continue
        if isinstance(node, dict) and part not in node and (node.get("type") == part or "[" in part):
            continue  # a tagged union's tag or a union member's name: not a field the user wrote
        if "[" in part or part.startswith(("function-", "tagged-union")):
            continue
        parts.append(f".{part}")
        node = node.get(part) if isinstance(node, dict) else None
    loc = "".join(parts).lstrip(".")
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown field"
    elif first["type"] == "missing":
        message = "missing"
    if not with_field:
        return f"{loc}: {message}" if loc else message
    return f"field {loc!r}: {message}"


class DeclaredOracle:
    """Mixin for the Tasks of task files: the oracle is the file's ``steps`` (None: the task has none)."""

    id: str
    steps: list | None

    def has_oracle(self) -> bool:
        return self.steps is not None

    def oracle(self, env: Environment) -> AsyncIterator[ActionModel]:
        if self.steps is None:
            raise NotImplementedError(f"task {self.id!r} ships no oracle")
        return run_oracle(self.steps, env)


async def run_oracle(steps: list[ActionModel | OracleHelper], env: Environment) -> AsyncIterator[ActionModel]:
    """Yield an oracle's shared actions, expanding helpers against the live environment."""
    for step in steps:
        if isinstance(step, OracleHelper):
            async for action in step.actions(env):
                yield action
        else:
            yield step
