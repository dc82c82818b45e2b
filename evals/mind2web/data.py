"""Multimodal-Mind2Web (``osunlp/Multimodal-Mind2Web``) read from a local copy in its published layout.

One row per action of a task, in parquet files per split (``data/test_task-*.parquet``,
``data/test_website-*.parquet``, ``data/test_domain-*.parquet``, ``data/train-*.parquet``) or a
``save_to_disk`` folder. The columns used: ``annotation_id``, ``action_uid``, ``confirmed_task``,
``website``, ``domain``, ``subdomain``, ``operation`` (JSON ``{op, original_op, value}``),
``pos_candidates``/``neg_candidates`` (lists of JSON objects whose ``attributes`` JSON holds
``bounding_box_rect`` = "x,y,w,h" in page pixels), ``action_reprs`` (every action of the task as text),
``target_action_index`` (this row's position in it) and ``screenshot`` (the full page, 1280 wide).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SPLITS = ("test_task", "test_website", "test_domain")
REQUIRED = ("annotation_id", "action_uid", "confirmed_task", "operation", "pos_candidates", "neg_candidates",
            "action_reprs", "target_action_index", "screenshot")


@dataclass(frozen=True)
class Candidate:
    """A candidate element of the page: its id, tag and box (x1, y1, x2, y2) in page pixels."""

    backend_node_id: str
    tag: str
    box: tuple[float, float, float, float] | None
    positive: bool

    def contains(self, x: float, y: float) -> bool:
        if self.box is None:
            return False
        x1, y1, x2, y2 = self.box
        return x1 <= x <= x2 and y1 <= y <= y2

    @property
    def area(self) -> float:
        x1, y1, x2, y2 = self.box or (0, 0, 0, 0)
        return (x2 - x1) * (y2 - y1)


@dataclass
class Mind2WebStep:
    """One action of a task, with what the harness needs to show it and score it."""

    annotation_id: str
    action_uid: str
    task: str
    website: str
    domain: str
    subdomain: str
    op: str
    original_op: str
    value: str
    candidates: list[Candidate]
    #: The gold actions before this one (teacher forcing), as the dataset writes them.
    previous_actions: list[str]
    step_index: int
    #: The full-page screenshot (PIL), decoded on demand.
    screenshot: Any = field(repr=False, default=None)

    @property
    def key(self) -> str:
        return f"{self.annotation_id}_{self.action_uid}"

    @property
    def positives(self) -> list[Candidate]:
        return [c for c in self.candidates if c.positive]


def parse_box(rect: Any) -> tuple[float, float, float, float] | None:
    """``"x,y,w,h"`` to (x1, y1, x2, y2), or None for a missing or empty box."""
    if not isinstance(rect, str):
        return None
    try:
        x, y, w, h = (float(v) for v in rect.split(","))
    except ValueError:
        return None
    if w <= 0 or h <= 0:
        return None
    return x, y, x + w, y + h


def _json(value: Any, what: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as err:
            raise ValueError(f"{what} is not valid JSON ({err})") from None
    return value


def parse_candidates(value: Any, positive: bool, where: str) -> list[Candidate]:
    """The candidate list of one row (a list of JSON strings or dicts, or one JSON list)."""
    items = _json(value, f"{where}: candidates")
    if not isinstance(items, list):
        raise ValueError(f"{where}: candidates must be a list, got {type(items).__name__}")
    out = []
    for item in items:
        item = _json(item, f"{where}: candidate")
        attrs = _json(item.get("attributes", {}), f"{where}: candidate attributes") or {}
        node = str(item.get("backend_node_id") or attrs.get("backend_node_id") or "")
        if not node:
            raise ValueError(f"{where}: a candidate has no backend_node_id")
        out.append(Candidate(node, str(item.get("tag", "")), parse_box(attrs.get("bounding_box_rect")), positive))
    return out


def step_from_row(row: dict[str, Any], where: str = "row") -> Mind2WebStep:
    """A :class:`Mind2WebStep` from one dataset row (the published columns)."""
    missing = [c for c in REQUIRED if c not in row]
    if missing:
        raise ValueError(f"{where}: not a Multimodal-Mind2Web row, missing columns {missing}")
    op = _json(row["operation"], f"{where}: operation")
    if not isinstance(op, dict) or "op" not in op:
        raise ValueError(f"{where}: operation must hold 'op', got {row['operation']!r}")
    try:
        index = int(row["target_action_index"])
    except (TypeError, ValueError):
        raise ValueError(f"{where}: target_action_index must be an integer, got {row['target_action_index']!r}") from None
    reprs = list(row["action_reprs"] or [])
    return Mind2WebStep(
        annotation_id=str(row["annotation_id"]), action_uid=str(row["action_uid"]), task=str(row["confirmed_task"]),
        website=str(row.get("website", "")), domain=str(row.get("domain", "")), subdomain=str(row.get("subdomain", "")),
        op=str(op["op"]).upper(), original_op=str(op.get("original_op", op["op"])), value=str(op.get("value", "")),
        candidates=parse_candidates(row["pos_candidates"], True, where)
        + parse_candidates(row["neg_candidates"], False, where),
        previous_actions=reprs[:index], step_index=index, screenshot=row["screenshot"])


def open_split(path: str | Path, split: str):
    """The split as a ``datasets.Dataset`` (lazy: screenshots are decoded row by row)."""
    import datasets

    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"no Multimodal-Mind2Web data at {root}")
    if (root / "dataset_dict.json").is_file():
        dd = datasets.load_from_disk(str(root))
        if split not in dd:
            raise ValueError(f"{root} has no split {split!r}; it has {', '.join(dd)}")
        return dd[split]
    if (root / "dataset_info.json").is_file():
        return datasets.load_from_disk(str(root))
    files = sorted(str(p) for p in root.rglob(f"{split}-*.parquet")) if root.is_dir() else [str(root)]
    if not files:
        raise FileNotFoundError(f"{root} holds no {split}-*.parquet files (the dataset's data/ layout)")
    return datasets.load_dataset("parquet", data_files={split: files}, split=split)


def iter_steps(path: str | Path, split: str) -> Iterator[Mind2WebStep]:
    """Every step of ``split`` in dataset order."""
    ds = open_split(path, split)
    for i in range(len(ds)):
        yield step_from_row(ds[i], f"{split} row {i}")
