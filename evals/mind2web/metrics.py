"""Mind2Web's step metrics exactly as the official multiple-choice evaluation computes them.

Follows OSU-NLP-Group/Mind2Web at commit 1b7c32322d91f164e38d3e59211f9dc574d90a47 (read from the fork
ScottLinnn/Mind2Web, whose HEAD is that upstream commit), ``src/action_prediction/metric.py``
(``ActionEvaluatorMultiChoice``, lines 53-283) and ``dataloader.py`` (``format_input_multichoice``, 73-124).
Line numbers below are of those files.

* **Top-k cut** (metric.py:120-123, 139-141): only candidates ranked below ``top_k`` (50) by the candidate
  generator take part. A step none of whose positives is in the top k scores 0 on everything and has no
  prediction. Unranked candidates (no ranks given) all take part.
* **Tournament** (metric.py:142-209): the model is asked while more than one candidate is left, so a step with
  fewer than two candidates in the top k (duplicates counted) has no prediction either.
* **No element, no score** (metric.py:213-219): a step whose model named no element of the top k (answered
  "None of the above") scores 0 on element, operation F1 and step. A pixel agent names an element with its
  click (:func:`element_at`).
* **Element accuracy** (metric.py:221-224): the predicted element's id is one of the top-k positives' ids:
  identity is by ``backend_node_id``, so an id listed among positives and negatives is correct.
* **Operation F1** (metric.py:65-81): token-set F1 of ``"OP value"`` strings, case-sensitive, split on
  whitespace. Both strings are read from answer text as metric.py:53-63 reads them: the operation is the first
  ``Action: (CLICK|SELECT|TYPE)`` match and the value the first line after ``Value: ``. The gold text is
  ``Action: <op>`` then, unless op is ``CLICK``, ``Value: <value>`` (dataloader.py:119-123); so only the first
  line of a gold value counts, a gold op in another case or spelling contributes no token, and the model's
  own operation (CLICK, TYPE or SELECT) and value are compared.
* **Step success** (metric.py:228): element correct and operation F1 exactly 1.
* **Averages** (metric.py:236-275): micro over steps; macro per ``annotation_id`` then over tasks
  (``marco_*``, the official spelling), with ``error_ratio`` and ``acc_per_website``. The official code
  updates the macro figures only after a step that reached the model (the cut ``continue`` at :133 skips
  them), so cut steps at the end of a split are left out of them; a split whose every step is cut has no
  result (the official code fails). MintGym does the same.
* **Task success** (the paper's SR; not in the official code): every step of the task succeeded.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from mintgym.evals.mind2web.data import Candidate, Mind2WebStep

#: metric.py:88 (``evaluate_dataset(top_k=50)``), the paper's candidate budget.
TOP_K = 50
OPERATIONS = ("CLICK", "TYPE", "SELECT")
_ACTION = re.compile(r"Action: (CLICK|SELECT|TYPE)")
_VALUE = re.compile(r"Value: (.*)$", re.MULTILINE)


def op_f1(pred: str, label: str) -> float:
    """Token-set F1 of two operation strings (metric.py:65-81)."""
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


def read_answer(op: str, value: str) -> str:
    """``"OP value"`` as metric.py:53-63 reads it back from ``Action: op`` / ``Value: value`` text."""
    text = f"X.\nAction: {op}\n" + (f"Value: {value}" if op != "CLICK" else "")
    text = text.strip()
    action, val = _ACTION.search(text), _VALUE.search(text)
    return (action.group(1) if action else "").strip() + " " + (val.group(1) if val else "").strip()


def in_cut(candidate: Candidate, top_k: int) -> bool:
    return candidate.rank is None or candidate.rank < top_k


def element_at(candidates: Sequence[Candidate], x: float, y: float, top_k: int = TOP_K) -> Candidate | None:
    """The top-k candidate whose box holds page point (x, y); the smallest box when several do; None if none.

    No official code maps a point to an element (the official model names one by letter). The innermost
    (smallest) box is what a browser's hit test (``document.elementFromPoint``) returns for nested elements;
    at equal areas the first in data order (positives first) is taken. Points on a box's edge are inside.
    """
    hits = [c for c in candidates if in_cut(c, top_k) and c.contains(x, y)]
    return min(hits, key=lambda c: c.area) if hits else None


@dataclass
class StepScore:
    """The verdict on one step; ``official_prediction`` is the step's line of the official predictions file."""

    key: str
    annotation_id: str
    website: str
    element_correct: bool
    op_f1: float
    step_success: bool
    #: False when no positive is in the top k (the step then leaves the macro figures unchanged).
    reached_model: bool
    predicted_element: str | None
    predicted_operation: str
    gold_operation: str
    official_prediction: list[str]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def score_step(step: Mind2WebStep, element: str | None, op: str | None, value: str = "",
               top_k: int = TOP_K) -> StepScore:
    """Score a prediction (the element id it named or None; its operation and value) against ``step``."""
    if op is not None and op not in OPERATIONS:
        raise ValueError(f"a predicted operation is one of {', '.join(OPERATIONS)}, got {op!r}")
    return score_answer(step, element if op is not None else None, read_answer(op, value) if op else "", top_k)


def score_answer(step: Mind2WebStep, element: str | None, said: str, top_k: int = TOP_K) -> StepScore:
    """Score an answer already read as ``"OP value"`` (a line of an official predictions file) against ``step``."""
    pool = [c for c in step.candidates if in_cut(c, top_k)]
    positives = {c.backend_node_id for c in pool if c.positive}
    gold = read_answer(step.op, step.value)
    named = element is not None and len(pool) > 1 and any(c.backend_node_id == element for c in pool)
    if not positives or not named:
        return StepScore(step.key, step.annotation_id, step.website, False, 0.0, False, bool(positives), element,
                         said.strip(), gold.strip(), [step.key, "", ""])
    correct = element in positives
    f1 = op_f1(said, gold)
    return StepScore(step.key, step.annotation_id, step.website, correct, f1, correct and f1 == 1.0, True, element,
                     said.strip(), gold.strip(), [step.key, element, said])


def score_predictions(steps: Sequence[Mind2WebStep], lines: Sequence[Sequence[str]], top_k: int = TOP_K
                      ) -> list[StepScore]:
    """Score an official ``<split>_predictions_top<k>.json`` (``[step, element, "OP value"]`` lines) on ``steps``."""
    by_step: dict[str, tuple[str, str]] = {}
    for line in lines:
        if not (isinstance(line, (list, tuple)) and len(line) == 3 and all(isinstance(v, str) for v in line)):
            raise ValueError(f"an official prediction line is [step, element, action] (strings), got {line!r}")
        by_step[line[0]] = (line[1], line[2])
    missing = [s.key for s in steps if s.key not in by_step]
    if missing:
        raise ValueError(f"the predictions have no line for step {missing[0]} ({len(missing)} steps missing)")
    return [score_answer(s, by_step[s.key][0] or None, by_step[s.key][1], top_k) for s in steps]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def official_results(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The official ``<split>_results_top<k>.json`` of scored steps in split order (metric.py:236-275)."""
    reached = [i for i, r in enumerate(rows) if r["reached_model"]]
    if not reached:
        raise ValueError("no step has a positive candidate in the top k: the official evaluation has no result")
    counted = rows[: reached[-1] + 1]
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    website: dict[str, str] = {}
    for r in counted:
        by_task[r["annotation_id"]].append(r)
        website[r["annotation_id"]] = r["website"]
    errors: dict[str, int] = defaultdict(int)
    per_site: dict[str, list[float]] = defaultdict(list)
    for task, rs in by_task.items():
        per_site[website[task]].append(_mean([float(r["step_success"]) for r in rs]))
        wrong = sum(not r["step_success"] for r in rs)
        errors[str(wrong) if wrong <= 3 else ">3"] += 1

    def macro(field: str) -> float:
        return _mean([_mean([float(r[field]) for r in rs]) for rs in by_task.values()])

    def micro(field: str) -> float:
        return _mean([float(r[field]) for r in rows])

    return {"element_acc": micro("element_correct"), "action_f1": micro("op_f1"), "step_acc": micro("step_success"),
            "marco_element_acc": macro("element_correct"), "marco_action_f1": macro("op_f1"),
            "marco_step_acc": macro("step_success"),
            "error_ratio": {k: v / len(by_task) for k, v in errors.items()},
            "acc_per_website": {k: [_mean(v), len(v)] for k, v in per_site.items()}}


def aggregate(scores: Sequence[StepScore | dict[str, Any]]) -> dict[str, Any]:
    """The paper's figures (macro over tasks as the official code computes them; task SR) and the official file."""
    rows = [s.to_json() if isinstance(s, StepScore) else s for s in scores]
    if not rows:
        return {"tasks": 0, "steps": 0}
    tasks: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        tasks[r["annotation_id"]].append(bool(r["step_success"]))
    out: dict[str, Any] = {"tasks": len(tasks), "steps": len(rows),
                           "task_sr": sum(all(v) for v in tasks.values()) / len(tasks)}
    try:
        official = official_results(rows)
    except ValueError as err:
        return {**out, "element_acc": None, "op_f1": None, "step_sr": None, "official": None, "error": str(err)}
    return {**out, "element_acc": official["marco_element_acc"], "op_f1": official["marco_action_f1"],
            "step_sr": official["marco_step_acc"],
            "micro": {"element_acc": official["element_acc"], "op_f1": official["action_f1"],
                      "step_sr": official["step_acc"]},
            "official": official}
