"""Mind2Web steps read from either published layout, plus the candidate ranker's ranks.

* **Multimodal-Mind2Web** (``osunlp/Multimodal-Mind2Web``): one row per action, in parquet files per split
  (``data/test_task-*.parquet`` ...) or a ``save_to_disk`` folder. Columns used: ``annotation_id``,
  ``action_uid``, ``confirmed_task``, ``website``, ``domain``, ``subdomain``, ``operation`` (JSON
  ``{op, original_op, value}``), ``pos_candidates``/``neg_candidates`` (JSON objects whose ``attributes`` JSON
  holds ``bounding_box_rect`` = "x,y,w,h" in page pixels), ``action_reprs``, ``target_action_index`` and
  ``screenshot`` (the full page, 1280 wide).
* **The original Mind2Web JSON** (``data/test_task/*.json`` ...): each file a list of tasks, each with
  ``actions`` (``action_uid``, ``operation``, ``pos_candidates``, ``neg_candidates``, ``cleaned_html``) and
  ``action_reprs``; a step's previous actions are ``action_reprs[:i]``, as OSU-NLP-Group/Mind2Web
  ``src/action_prediction/dataloader.py:221-249`` (``get_data_split``) flattens them. It has no screenshots:
  its steps can be scored, not shown.

Ranks: a candidate's ``rank`` key when the data carry one (SeeAct's query rows do), or the candidate
generator's ``scores_all_data.pkl`` (``{"scores": {step: {node: score}}, "ranks": {step: {node: rank}}}``,
steps keyed ``<annotation_id>_<action_uid>``), applied as ``dataloader.py:259-275`` does: every candidate of
every step must have one.
"""

from __future__ import annotations

import io
import json
import pickle
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

SPLITS = ("test_task", "test_website", "test_domain")
REQUIRED = ("annotation_id", "action_uid", "confirmed_task", "operation", "pos_candidates", "neg_candidates",
            "action_reprs", "target_action_index", "screenshot")


@dataclass(frozen=True)
class Candidate:
    """A candidate element: its id, tag, box (x1, y1, x2, y2) in page pixels and ranker rank (None: unranked)."""

    backend_node_id: str
    tag: str
    box: tuple[float, float, float, float] | None
    positive: bool
    rank: float | None = None

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
    #: The gold ``operation`` fields as the data give them (``op`` is not upper-cased: the official reader
    #: matches ``CLICK|SELECT|TYPE`` case-sensitively); ``value`` is ``str()`` of the JSON value.
    op: str
    original_op: str
    value: str
    candidates: list[Candidate]
    #: The gold actions before this one (teacher forcing), as the dataset writes them.
    previous_actions: list[str]
    step_index: int
    #: The full-page screenshot (PIL), decoded on demand; None in the original JSON layout.
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
        raise ValueError(f"{where}: candidates must be a list, got {type(items).__name__}")  # noqa: TRY004 - bad data
    out = []
    for item in items:
        item = _json(item, f"{where}: candidate")
        attrs = _json(item.get("attributes", {}), f"{where}: candidate attributes") or {}
        node = item.get("backend_node_id")
        if not isinstance(node, str) or not node:
            raise ValueError(f"{where}: a candidate has no backend_node_id (a non-empty string), got {node!r}")
        rank = item.get("rank")
        if rank is not None and not isinstance(rank, (int, float)):
            raise ValueError(f"{where}: candidate {node} has a rank that is not a number: {rank!r}")
        out.append(Candidate(node, str(item.get("tag", "")), parse_box(attrs.get("bounding_box_rect")), positive,
                             rank))
    return out


def parse_operation(value: Any, where: str) -> tuple[str, str, str]:
    """(op, original_op, value) of an ``operation``; op and value are required (``dataloader.py:119-120``)."""
    op = _json(value, f"{where}: operation")
    if not isinstance(op, dict) or "op" not in op or "value" not in op:
        raise ValueError(f"{where}: operation must hold 'op' and 'value', got {value!r}")
    return str(op["op"]), str(op.get("original_op", op["op"])), f"{op['value']}"


def _step(row: Mapping[str, Any], where: str, previous: list[str], index: int, screenshot: Any,
          task: Mapping[str, Any] | None = None) -> Mind2WebStep:
    task = task or row
    op, original_op, value = parse_operation(row["operation"], where)
    return Mind2WebStep(
        annotation_id=str(task["annotation_id"]), action_uid=str(row["action_uid"]),
        task=str(task["confirmed_task"]), website=str(task.get("website", "")), domain=str(task.get("domain", "")),
        subdomain=str(task.get("subdomain", "")), op=op, original_op=original_op, value=value,
        candidates=parse_candidates(row["pos_candidates"], True, where)
        + parse_candidates(row["neg_candidates"], False, where),
        previous_actions=previous, step_index=index, screenshot=screenshot)


def step_from_row(row: dict[str, Any], where: str = "row") -> Mind2WebStep:
    """A :class:`Mind2WebStep` from one Multimodal-Mind2Web row (the published columns)."""
    missing = [c for c in REQUIRED if c not in row]
    if missing:
        raise ValueError(f"{where}: not a Multimodal-Mind2Web row, missing columns {missing}")
    try:
        index = int(row["target_action_index"])
    except (TypeError, ValueError):
        raise ValueError(f"{where}: target_action_index must be an integer, "
                         f"got {row['target_action_index']!r}") from None
    reprs = list(row["action_reprs"] or [])
    return _step(row, where, reprs[:index], index, row["screenshot"])


def steps_from_task(task: dict[str, Any], where: str) -> list[Mind2WebStep]:
    """The steps of one task of the original JSON layout (``dataloader.py:221-249``)."""
    missing = [k for k in ("annotation_id", "confirmed_task", "actions", "action_reprs") if k not in task]
    if missing:
        raise ValueError(f"{where}: not a Mind2Web task, missing fields {missing}")
    out = []
    for i, action in enumerate(task["actions"]):
        at = f"{where} action {i}"
        absent = [k for k in ("action_uid", "operation", "pos_candidates", "neg_candidates") if k not in action]
        if absent:
            raise ValueError(f"{at}: missing fields {absent}")
        out.append(_step(action, at, list(task["action_reprs"][:i]), i, None, task))
    return out


def _json_files(root: Path, split: str) -> list[Path]:
    if root.is_file() and root.suffix == ".json":
        return [root]
    for folder in (root / "data" / split, root / split):
        if folder.is_dir() and not (folder / "state.json").is_file():  # state.json: a save_to_disk split
            return sorted(folder.glob("*.json"))
    return []


def open_split(path: str | Path, split: str):
    """The Multimodal split as a ``datasets.Dataset`` (lazy: screenshots are decoded row by row)."""
    import datasets

    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"no Mind2Web data at {root}")
    if (root / "dataset_dict.json").is_file():
        dd = datasets.load_from_disk(str(root))
        if split not in dd:
            raise ValueError(f"{root} has no split {split!r}; it has {', '.join(dd)}")
        return dd[split]
    if (root / "dataset_info.json").is_file():
        return datasets.load_from_disk(str(root))
    files = sorted(str(p) for p in root.rglob(f"{split}-*.parquet")) if root.is_dir() else [str(root)]
    if not files:
        raise FileNotFoundError(f"{root} holds no {split}-*.parquet files (the Multimodal data/ layout) and no "
                                f"{split}/*.json files (the original layout)")
    return datasets.load_dataset("parquet", data_files={split: files}, split=split)


def iter_steps(path: str | Path, split: str, ranks: Mapping[str, Mapping[str, float]] | None = None
               ) -> Iterator[Mind2WebStep]:
    """Every step of ``split`` in dataset order, from either layout; with ``ranks``, each candidate ranked."""
    files = _json_files(Path(path), split)
    if files:
        steps: Iterator[Mind2WebStep] = (
            step for f in files for i, task in enumerate(_read_tasks(f))
            for step in steps_from_task(task, f"{f.name} task {i}"))
    else:
        ds = open_split(path, split)
        steps = (step_from_row(ds[i], f"{split} row {i}") for i in range(len(ds)))
    for step in steps:
        yield with_ranks(step, ranks) if ranks is not None else step


def _read_tasks(path: Path) -> list[dict[str, Any]]:
    try:
        tasks = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON ({err})") from None
    if not isinstance(tasks, list):  # bad data, a ValueError like every other
        raise ValueError(f"{path}: a Mind2Web split file holds a list of tasks, got {type(tasks).__name__}")  # noqa: TRY004
    return tasks


def with_ranks(step: Mind2WebStep, ranks: Mapping[str, Mapping[str, float]]) -> Mind2WebStep:
    """``step`` with each candidate's rank from ``ranks[step.key][node]`` (all must be there)."""
    mine = ranks.get(step.key)
    if mine is None:
        raise ValueError(f"the ranks have no step {step.key}")
    missing = [c.backend_node_id for c in step.candidates if c.backend_node_id not in mine]
    if missing:
        raise ValueError(f"the ranks of step {step.key} have no candidate {missing[0]}")
    return replace(step, candidates=[replace(c, rank=float(mine[c.backend_node_id])) for c in step.candidates])


class _PlainUnpickler(pickle.Unpickler):
    """Unpickles plain containers and numbers only: a ranks file must not run code when read."""

    ALLOWED: ClassVar = {("numpy", "dtype"), ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar")}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a ranks file")


def load_ranks(path: str | Path) -> dict[str, dict[str, float]]:
    """The ``ranks`` of a candidate generator's ``scores_all_data.pkl`` (or of a JSON file in that layout)."""
    path = Path(path).expanduser()
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ValueError(f"cannot read the ranks file {path}: {err.strerror}") from None
    try:
        data = json.loads(raw) if path.suffix == ".json" else _PlainUnpickler(io.BytesIO(raw)).load()
    except (pickle.UnpicklingError, json.JSONDecodeError, EOFError, ValueError) as err:
        raise ValueError(f"{path} is not a candidate ranks file ({err})") from None
    ranks = data.get("ranks") if isinstance(data, dict) else None
    if not isinstance(ranks, dict) or not all(isinstance(v, dict) for v in ranks.values()):
        raise ValueError(f"{path} has no 'ranks' mapping of step -> {{node: rank}} (the scores_all_data.pkl layout)")
    return {str(k): {str(n): float(r) for n, r in v.items()} for k, v in ranks.items()}
