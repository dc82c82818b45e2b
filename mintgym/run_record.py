"""Layer 0: a run folder is keyed by what made it: ``<out>/run.json`` records the settings that make a run's
episodes, and a later run may add to the folder only when it would make the same episodes.

Used by ``mintgym eval``, ``mintgym rollout`` and the data-suite harnesses (ScreenSpot, Mind2Web,
Online-Mind2Web); ``mintgym train`` keeps its own record (:mod:`mintgym.rl.run_folder`) with the same diff
helpers. :func:`check_folder` decides, without touching the folder, what a run may do with its ``--out``:

- missing, empty, or holding only a record (nothing ran under it): start there;
- a record of the same kind with the same key: resume (finished episodes are kept, not re-run);
- a record of another run (another kind or key): refused in one line naming the first difference, unless
  ``force``, which moves the whole folder aside to ``<out>.before-<timestamp>`` and starts afresh;
- episodes without a record (a folder made before records existed, recognised by the caller's ``markers``):
  refused the same way, since nothing tells what made them; ``force`` moves them aside;
- anything else (a model checkpoint, a training run, a home folder): refused, ``force`` or not.

:meth:`FolderCheck.apply` then does what was decided. Nothing is ever deleted.

    >>> from pathlib import Path; import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "e"
    >>> check_folder(out, "eval", {"agent": "scripted"}).apply()
    >>> (out / "an-episode").mkdir()
    >>> check_folder(out, "eval", {"agent": "scripted"}).action
    'resume'
    >>> check_folder(out, "eval", {"agent": "random"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    mintgym.errors.MintGymError: .../e was made by --agent scripted; this run is --agent random: give another --out, ...
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mintgym.errors import MintGymError

#: The record's file name inside a run folder.
RECORD = "run.json"
RECORD_SCHEMA = 1
#: What a refusal tells the user to do.
ADVICE = "give another --out, or --force to start over (the old {what} are moved to {out}.before-<timestamp>)"


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"train": {"lr": 1}}`` as ``{"train.lr": 1}``, in the mapping's order; lists stay whole values."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Every dotted key whose value differs between two configs, sorted: key -> (before, after)."""
    old, new = flatten(before), flatten(after)
    return {key: (old.get(key), new.get(key)) for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)}


def short(value: Any) -> str:
    """A value as JSON, cut to 60 characters."""
    text = json.dumps(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _normal(key: Mapping[str, Any]) -> dict[str, Any]:
    """The key as it reads back from JSON (tuples as lists, paths as strings), so a resume compares like with like."""
    return json.loads(json.dumps(dict(key), default=str))


def read_record(out: Path) -> dict[str, Any] | None:
    """``out``'s record, or None when it has none (or a ``run.json`` that is not a run record)."""
    try:
        data = json.loads((out / RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str) or not isinstance(data.get("key"), dict):
        return None
    return data


def _label(name: str, labels: Mapping[str, str]) -> str:
    head, _, rest = name.partition(".")
    if name in labels:
        return labels[name]
    if rest and head in labels:
        return f"{labels[head]} {rest}"
    return "--" + name.replace("_", "-")


def _show(label: str, value: Any) -> str:
    if value is None:
        return f"{label} (not given)".strip()
    if isinstance(value, list):
        items = [v if isinstance(v, str) else json.dumps(v) for v in value]
        listed = ", ".join(items[:3]) + (", ..." if len(items) > 3 else "")
        return f"{len(items)} {label} ({listed})" if len(items) > 3 else f"{label} {listed or '(none)'}"
    if isinstance(value, bool):
        return f"{label} {'on' if value else 'off'}"
    return f"{label} {value if isinstance(value, str) else short(value)}".strip()


def difference(out: Path, record: Mapping[str, Any], kind: str, key: Mapping[str, Any],
               labels: Mapping[str, str] | None = None) -> str | None:
    """``"<out> was made by X; this run is Y"`` for the first setting that differs (in the key's order), with a
    count of the others; None when the record matches this run."""
    if record["kind"] != kind:
        return f"{out} was made by mintgym {record['kind']}; this run is mintgym {kind}"
    old, new = flatten(record["key"]), flatten(_normal(key))
    names = [*new, *(n for n in old if n not in new)]
    differ = [n for n in names if old.get(n) != new.get(n)]
    if not differ:
        return None
    first = differ[0]
    label = _label(first, labels or {})
    said = f"{out} was made by {_show(label, old.get(first))}; this run is {_show(label, new.get(first))}"
    if len(differ) > 1:
        others = ", ".join(_label(n, labels or {}) for n in differ[1:4]) + (", ..." if len(differ) > 4 else "")
        said += f" (and {len(differ) - 1} more: {others})"
    return said


@dataclass
class FolderCheck:
    """What a run may do with its folder: ``new`` (start there), ``resume`` or ``restart`` (move the old
    folder aside first); :meth:`apply` does it."""

    out: Path
    action: str
    record: dict[str, Any]

    def apply(self) -> Path | None:
        """Make the folder this run's; returns where the old one was moved (``restart``), else None."""
        moved = None
        if self.action == "restart":
            moved = _aside(self.out)
            os.rename(self.out, moved)
        if self.action in ("new", "restart"):
            self.out.mkdir(parents=True, exist_ok=True)
            tmp = self.out / f".{RECORD}.tmp"
            tmp.write_text(json.dumps(self.record, indent=1))
            os.replace(tmp, self.out / RECORD)
        return moved


def _aside(out: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = out.with_name(f"{out.name}.before-{stamp}")
    n = 2
    while target.exists():
        target = out.with_name(f"{out.name}.before-{stamp}-{n}")
        n += 1
    return target


def _holds_only_record(out: Path) -> bool:
    return all(entry.name in (RECORD, f".{RECORD}.tmp") for entry in out.iterdir())


def check_folder(out: Path, kind: str, key: Mapping[str, Any], *, force: bool = False,
                 labels: Mapping[str, str] | None = None, markers: Sequence[str] = (), what: str = "episodes",
                 about: Mapping[str, Any] | None = None) -> FolderCheck:
    """Decide what a run of ``kind`` keyed by ``key`` may do with ``out`` (see the module docstring); raises
    :class:`MintGymError` (one line) when it may not, having touched nothing.

    Args:
        out: The run folder (``--out``).
        kind: The command or harness (``eval``, ``rollout``, ``screenspot``...); runs of two kinds never share.
        key: Every setting that changes what an episode is (tasks, seeds, agent, model, limits), JSON values.
        force: Start over when the folder holds another run's episodes, after moving them aside.
        labels: How the user gives a key's setting, for messages (default ``--name-with-dashes``).
        markers: Glob patterns, relative to ``out``, of what this kind of run leaves behind: a folder with
            no record that matches one holds episodes made before records existed.
        what: What the folder holds, in messages (``episodes``, ``predictions``...).
        about: Settings recorded for people but not compared (the suite's name).
    """
    out = Path(out)
    record = {"schema": RECORD_SCHEMA, "kind": kind, "key": _normal(key), "about": _normal(about or {}),
              "made": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if out.exists() and not out.is_dir():
        raise MintGymError(f"--out {out} is a file; give a folder for the run")
    if not out.is_dir() or _holds_only_record(out):
        return FolderCheck(out, "new", record)
    advice = ADVICE.format(what=what, out=out)
    saved = read_record(out)
    if saved is not None:
        said = difference(out, saved, kind, key, labels)
        if said is None and not force:
            return FolderCheck(out, "resume", saved)
        if said is not None and not force:
            raise MintGymError(f"{said}: {advice}")
    elif not any(next(out.glob(pattern), None) is not None for pattern in markers):
        raise MintGymError(f"--out {out} is not empty and holds no {kind} run (no {RECORD}, no {what}); give a new or "
                           "empty folder (nothing was written there; --force moves only a run's folder aside)")
    elif not force:
        raise MintGymError(f"{out} holds {what} from before run folders recorded what made them (no {RECORD}), so "
                           f"they cannot be told from this run's: {advice}")
    if Path.cwd().resolve().is_relative_to(out.resolve()):
        raise MintGymError(f"--force cannot move {out} aside: it holds the current folder; give another --out")
    return FolderCheck(out, "restart", record)
