"""Read OSWorld task JSON files into typed specs; malformed files fail with the file and field named.

The data lives outside the repository: ``$MINTGYM_DATA/osworld/examples`` or
``<repo>/../shared/data/osworld/examples``.
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


def data_root() -> Path | None:
    """The shared data folder: $MINTGYM_DATA, else <repo>/../shared/data; None when neither exists."""
    env = os.environ.get("MINTGYM_DATA")
    candidates = [Path(env)] if env else []
    repo = Path(__file__).resolve().parents[2]
    candidates.append(repo.parent / "shared" / "data")
    for cand in candidates:
        if (cand / "osworld").is_dir():
            return cand
    return None


def examples_dir() -> Path | None:
    root = data_root()
    return root / "osworld" / "examples" if root else None


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
    evaluator = Evaluator(funcs, results, expected, options, conj, _steps(ev.get("postconfig"), "evaluator.postconfig", file))
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
        raise OSWorldFormatError(f"{file}: not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    return parse_task(data, Path(file))


def load_examples(root: Path | None = None) -> list[OSWorldSpec]:
    """Every ``<app>/<id>.json`` under the examples folder (template.json is not a task)."""
    root = root or examples_dir()
    if root is None:
        return []
    return [load_file(f) for f in sorted(Path(root).glob("*/*.json"))]
