"""Read OSWorld task JSON files into typed specs; malformed files fail with the file and field named.

Where the tasks come from, first match wins:

* ``$MINTGYM_OSWORLD_ROOT`` (set by ``--osworld-root`` and :func:`use_root`): OSWorld's own
  ``evaluation_examples/`` folder exactly as OSWorld ships it (``examples/<app>/<id>.json`` and the
  ``test_*.json`` lists); a wrong path is an error, never a silent fall-back;
* ``$MINTGYM_DATA/osworld`` or ``<repo>/../shared/data/osworld`` (the same layout).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class OSWorldFormatError(ValueError):
    """A task file that is not valid OSWorld task JSON; the message names the file and the field."""


@dataclass(frozen=True)
class Step:
    """One config/postconfig step: ``{"type": "launch", "parameters": {...}}``."""

    type: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Evaluator:
    funcs: tuple[str, ...]
    results: tuple[dict[str, Any] | None, ...]
    expected: tuple[dict[str, Any] | None, ...]
    options: tuple[dict[str, Any], ...]
    conj: str = "and"
    postconfig: tuple[Step, ...] = ()

    @property
    def infeasible(self) -> bool:
        return self.funcs == ("infeasible",)


@dataclass(frozen=True)
class OSWorldSpec:
    id: str
    app: str
    instruction: str
    snapshot: str
    config: tuple[Step, ...]
    evaluator: Evaluator
    related_apps: tuple[str, ...] = ()
    source: str = ""
    proxy: bool = False
    path: Path = field(default=Path(), compare=False)


ROOT_VARIABLE = "MINTGYM_OSWORLD_ROOT"


class OSWorldRootError(ValueError):
    """A path given as OSWorld's evaluation_examples folder that is not one; the message says what was expected."""


def check_root(path: str | Path) -> Path:
    """``path`` as an OSWorld ``evaluation_examples`` folder, or :class:`OSWorldRootError` naming what is missing."""
    root = Path(path).expanduser()
    expected = "OSWorld's evaluation_examples folder (examples/<app>/<id>.json, test_all.json ...)"
    if not root.is_dir():
        raise OSWorldRootError(f"--osworld-root {root}: no such folder; expected {expected}")
    if root.name == "examples" and not (root / "examples").is_dir() and any(root.glob("*/*.json")):
        raise OSWorldRootError(f"--osworld-root {root}: this is the examples/ folder; give its parent, {expected}")
    if not (root / "examples").is_dir():
        raise OSWorldRootError(f"--osworld-root {root}: has no examples/ folder; expected {expected}")
    if not any((root / "examples").glob("*/*.json")):
        raise OSWorldRootError(f"--osworld-root {root}: examples/ holds no <app>/<id>.json task file")
    return root.resolve()


def use_root(path: str | Path) -> Path:
    """Read OSWorld tasks from ``path`` (an ``evaluation_examples`` folder) from now on, in this process and
    in the env servers it starts; the registry's ``osworld`` pack is reloaded."""
    root = check_root(path)
    os.environ[ROOT_VARIABLE] = str(root)
    from mintgym.env import registration

    registration.reload_pack("osworld")
    return root


def root_option(path: str | Path | None) -> None:
    """``--osworld-root``: use ``path`` from now on (:func:`use_root`); without one, check ``$MINTGYM_OSWORLD_ROOT``
    if it is set, so a wrong one fails before anything starts. :class:`OSWorldRootError` names the problem."""
    if path is not None:
        use_root(path)
    elif os.environ.get(ROOT_VARIABLE):
        check_root(os.environ[ROOT_VARIABLE])


def osworld_root() -> Path | None:
    """The evaluation_examples folder in use (see the module docstring); None when there is none."""
    explicit = os.environ.get(ROOT_VARIABLE)
    if explicit:
        return check_root(explicit)
    data = data_root()
    return data / "osworld" if data else None


def task_lists(root: Path | None = None) -> dict[str, dict[str, list[str]]]:
    """OSWorld's task lists of a root (``test_all``, ``test_small``, ``test_nogdrive``, ``test_infeasible`` ...):
    name -> {app: [task ids]}. A malformed list names its file."""
    root = root or osworld_root()
    found: dict[str, dict[str, list[str]]] = {}
    for file in sorted(Path(root).glob("test_*.json")) if root else []:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise OSWorldFormatError(f"{file}: not valid JSON ({err})") from None
        if not isinstance(data, dict) or not all(isinstance(v, list) and all(isinstance(i, str) for i in v)
                                                 for v in data.values()):
            raise OSWorldFormatError(f"{file}: a test list must map each app to a list of task ids")
        found[file.stem] = {str(app): list(ids) for app, ids in data.items()}
    return found


def data_root() -> Path | None:
    """The shared data folder: $MINTGYM_DATA, else <repo>/../shared/data; None when neither exists."""
    env = os.environ.get("MINTGYM_DATA")
    candidates = [Path(env)] if env else []
    repo = Path(__file__).resolve().parents[3]
    candidates.append(repo.parent / "shared" / "data")
    for cand in candidates:
        if (cand / "osworld").is_dir():
            return cand
    return None


def examples_dir() -> Path | None:
    root = osworld_root()
    return root / "examples" if root else None


def _need(obj: dict, key: str, kind: type | tuple[type, ...], where: str, file: Path) -> Any:
    if key not in obj:
        raise OSWorldFormatError(f"{file}: missing field {where + key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise OSWorldFormatError(f"{file}: field {where + key!r} must be {names}, got {type(value).__name__}")
    return value


def _steps(raw: Any, where: str, file: Path) -> tuple[Step, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise OSWorldFormatError(f"{file}: field {where!r} must be a list of steps, got {type(raw).__name__}")
    steps = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise OSWorldFormatError(f"{file}: field '{where}[{i}]' must be an object")
        kind = _need(item, "type", str, f"{where}[{i}].", file)
        params = item.get("parameters", {})
        if not isinstance(params, dict):
            raise OSWorldFormatError(f"{file}: field '{where}[{i}].parameters' must be an object")
        steps.append(Step(kind, params))
    return tuple(steps)


def _listify(value: Any, n: int, where: str, file: Path, allow_none: bool = True) -> tuple:
    if isinstance(value, list):
        if len(value) != n:
            raise OSWorldFormatError(f"{file}: field {where!r} has {len(value)} entries for {n} funcs")
        items = value
    else:
        items = [value] * n if n == 1 or value is None else [value] * n
    for i, item in enumerate(items):
        if item is None and allow_none:
            continue
        if not isinstance(item, dict):
            raise OSWorldFormatError(f"{file}: field '{where}[{i}]' must be an object")
    return tuple(items)


def parse_task(data: Any, file: Path, app: str | None = None) -> OSWorldSpec:
    """Validate one task's JSON object."""
    if not isinstance(data, dict):
        raise OSWorldFormatError(f"{file}: a task file must hold a JSON object, got {type(data).__name__}")
    task_id = _need(data, "id", str, "", file)
    instruction = _need(data, "instruction", str, "", file)
    ev = _need(data, "evaluator", dict, "", file)
    func = _need(ev, "func", (str, list), "evaluator.", file)
    funcs = (func,) if isinstance(func, str) else tuple(func)
    if not funcs or not all(isinstance(f, str) and f for f in funcs):
        raise OSWorldFormatError(f"{file}: field 'evaluator.func' must name one or more metric functions")
    n = len(funcs)
    if funcs == ("infeasible",):
        results = expected = (None,)
        options: tuple = ({},)
    else:
        results = _listify(_need(ev, "result", (dict, list), "evaluator.", file), n, "evaluator.result", file)
        expected = _listify(ev.get("expected"), n, "evaluator.expected", file)
        raw_options = ev.get("options", {})
        options = tuple(o or {} for o in _listify(raw_options, n, "evaluator.options", file))
    conj = ev.get("conj", "and")
    if conj not in ("and", "or"):
        raise OSWorldFormatError(f"{file}: field 'evaluator.conj' must be 'and' or 'or', got {conj!r}")
    evaluator = Evaluator(funcs, results, expected, options, conj,
                          _steps(ev.get("postconfig"), "evaluator.postconfig", file))
    apps = data.get("related_apps", [])
    if not isinstance(apps, list):
        raise OSWorldFormatError(f"{file}: field 'related_apps' must be a list")
    return OSWorldSpec(
        id=task_id, app=app or file.parent.name, instruction=instruction, snapshot=str(data.get("snapshot", "")),
        config=_steps(data.get("config", []), "config", file), evaluator=evaluator,
        related_apps=tuple(str(a) for a in apps), source=str(data.get("source", "")),
        proxy=bool(data.get("proxy", False)), path=file,
    )


def load_file(file: Path) -> OSWorldSpec:
    try:
        data = json.loads(Path(file).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise OSWorldFormatError(f"{file}: not valid JSON ({err.msg} at line {err.lineno} "
                                 f"column {err.colno})") from None
    return parse_task(data, Path(file))


def load_examples(root: Path | None = None) -> list[OSWorldSpec]:
    """Every ``<app>/<id>.json`` under the examples folder (template.json is not a task)."""
    root = root or examples_dir()
    if root is None:
        return []
    return [load_file(f) for f in sorted(Path(root).glob("*/*.json"))]
