"""Mind2Web's step-level metrics, computed as the paper (Deng et al., 2023) and its evaluation code do.

* **Element accuracy**: the predicted element is one of the row's ``pos_candidates``. A pixel agent
  names an element by clicking: the element is the candidate (positive or negative) whose box contains
  the click, the smallest such box when several do (the innermost element).
* **Operation F1**: token-level F1 between the predicted and the gold operation strings, ``"CLICK"`` or
  ``"TYPE <value>"`` / ``"SELECT <value>"`` (the gold ``op``, not ``original_op``), each taken as a set of
  whitespace-separated tokens; two empty strings score 1, one empty string 0.
* **Step success**: element correct and operation F1 equal to 1.
* **Task success**: every step of the task succeeded (teacher forcing: each step is shown after the gold
  previous actions).

All four are macro-averaged: first over the steps of each task (``annotation_id``), then over tasks, as
the paper's tables report them. Micro (per step) averages are given too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from mintgym.evals.mind2web.data import Candidate, Mind2WebStep


def op_f1(pred: str, label: str) -> float:
    """Token-set F1 of two operation strings."""
    p, t = set(pred.strip().split()), set(label.strip().split())
    if not p and not t:
        return 1.0
    if not p or not t:
        return 0.0
    tp = len(p & t)
    if tp == 0:
        return 0.0
    precision, recall = tp / len(p), tp / len(t)
    return 2 * precision * recall / (precision + recall)


def operation_string(op: str, value: str = "") -> str:
    """``CLICK`` or ``TYPE value`` / ``SELECT value``: the form the F1 compares."""
    op = op.upper()
    return op if op == "CLICK" else f"{op} {value}".strip()


def element_at(candidates: Sequence[Candidate], x: float, y: float) -> Candidate | None:
    """The candidate whose box contains (x, y) in page pixels; the smallest one when several do."""
    hits = [c for c in candidates if c.contains(x, y)]
    return min(hits, key=lambda c: c.area) if hits else None


@dataclass
class StepScore:
    """The verdict on one step."""

    key: str
    annotation_id: str
    element_correct: bool
    op_f1: float
    step_success: bool
    predicted_element: str | None
    predicted_operation: str
    gold_operation: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def score_step(step: Mind2WebStep, element: Candidate | None, op: str | None, value: str = "") -> StepScore:
    """Score a prediction (the element it picked, or None; its operation and value) against ``step``."""
    pred = operation_string(op, value) if op else ""
    gold = operation_string(step.op, step.value)
    correct = element is not None and element.positive
    f1 = op_f1(pred, gold)
    return StepScore(step.key, step.annotation_id, correct, f1, correct and f1 == 1.0,
                     element.backend_node_id if element else None, pred, gold)


def aggregate(scores: Sequence[StepScore | dict[str, Any]]) -> dict[str, Any]:
    """Macro (per task, then over tasks) and micro averages of element accuracy, op F1, step and task success."""
    rows = [s.to_json() if isinstance(s, StepScore) else s for s in scores]
    if not rows:
        return {"tasks": 0, "steps": 0}
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_task[r["annotation_id"]].append(r)

    def macro(field: str) -> float:
        return sum(sum(float(r[field]) for r in rs) / len(rs) for rs in by_task.values()) / len(by_task)

    def micro(field: str) -> float:
        return sum(float(r[field]) for r in rows) / len(rows)

    return {"tasks": len(by_task), "steps": len(rows),
            "element_acc": macro("element_correct"), "op_f1": macro("op_f1"), "step_sr": macro("step_success"),
            "task_sr": sum(all(r["step_success"] for r in rs) for rs in by_task.values()) / len(by_task),
            "micro": {"element_acc": micro("element_correct"), "op_f1": micro("op_f1"),
                      "step_sr": micro("step_success")}}
