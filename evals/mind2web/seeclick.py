"""SeeClick's Mind2Web protocol, scored exactly as SeeClick scores it: the click against the gold box.

Follows njucckevin/SeeClick at commit 0ef37ac4d7aaf37ba7b990e3e3c3ca77e1fb8f93,
``agent_tasks/mind2web_test.py`` (line numbers below are of that file):

* The gold action type comes from ``original_op`` (:22-23): CLICK, HOVER and ENTER are 4, SELECT 2, TYPE 3;
  any other op fails the evaluation (its ``assert``).
* A step without a gold box is skipped (:106-108). The gold is written as a Python literal by text
  substitution and read back with ``ast.literal_eval`` (:39-47, :126-130): a value holding a double quote or a
  newline or ending in a backslash makes the step skipped, escapes in it are decoded, and a value can even
  rewrite the literal's keys. MintGym builds and reads the same literal.
* Element match (:144-147): the click, as a fraction of the image size, lies in the gold box divided by the
  image size and rounded to 3 decimals (edges inside).
* Operation F1 (:149-160): Mind2Web's token-set F1 of ``"<type> <value>"`` with both values lower-cased;
  no click or no answer: no element match and F1 0.
* Figures (:172-228): Element Acc and Step Success over steps; Episode Success over episodes (an episode
  whose steps were all skipped counts as a success); Operation F1 the mean of the per-type means over the
  three types (NaN when a type has no step); the three macro figures over episodes (NaN when an episode has
  no scored step). No scored step at all fails the evaluation (a division by zero), as it does there.

MintGym's agent clicks in screen pixels: the point SeeClick compares is that pixel divided by the size of
the image the agent was shown.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from mintgym.evals.mind2web.metrics import op_f1

ACTION_TYPES = {"CLICK": 4, "HOVER": 4, "ENTER": 4, "SELECT": 2, "TYPE": 3}
PREDICTED_TYPES = {"CLICK": 4, "SELECT": 2, "TYPE": 3}


class Box(BaseModel):
    """A gold box in image pixels, as SeeClick's data give it."""

    model_config = ConfigDict(extra="forbid")
    x: float
    y: float
    width: float
    height: float


class Prediction(BaseModel):
    """What the agent did: its operation, its click in image pixels (None: no click) and its value."""

    model_config = ConfigDict(extra="forbid")
    op: str
    click: tuple[float, float] | None = None
    value: str = ""


def reference(operation: dict[str, Any], box: Box, image_size: tuple[int, int]) -> tuple[dict, list[float]] | None:
    """The gold action as SeeClick reads it and its box in image fractions; None when SeeClick skips the step."""
    op = operation.get("original_op")
    if op not in ACTION_TYPES:
        raise ValueError(f"SeeClick's protocol takes original_op CLICK, TYPE, SELECT, HOVER or ENTER, got {op!r}")
    w, h = image_size
    point = [round(v, 3) for v in ((box.x + box.width / 2) / w, (box.y + box.height / 2) / h)]
    literal = f'{{"action_type": {ACTION_TYPES[op]}, "click_point": ({point[0]:.2f},{point[1]:.2f})'
    if ACTION_TYPES[op] != 4:
        if "value" not in operation:
            raise ValueError(f"a {op} step has no value")
        literal += f', "value": "{operation["value"]}"'
    try:
        gold = ast.literal_eval(literal + "}")
    except Exception:  # noqa: BLE001 - any failure skips the step, as mind2web_test.py:127-130 does
        return None
    bbox = [round(v, 3) for v in (box.x / w, box.y / h, (box.x + box.width) / w, (box.y + box.height) / h)]
    return gold, bbox


def score_step(gold: dict, bbox: Sequence[float], pred: Prediction | None, image_size: tuple[int, int]
               ) -> dict[str, Any]:
    """``Ele_match``, ``Op_match`` and ``Op_F1`` = [f1, gold type] of one step (mind2web_test.py:136-163)."""
    result: dict[str, Any] = {"Ele_match": False, "Op_match": False, "Op_F1": [0, gold["action_type"]]}
    if pred is None:
        return result
    kind = PREDICTED_TYPES[pred.op]
    result["Op_match"] = kind == gold["action_type"]
    if pred.click is None:
        return result
    x, y = pred.click[0] / image_size[0], pred.click[1] / image_size[1]
    result["Ele_match"] = bbox[0] <= x <= bbox[2] and bbox[1] <= y <= bbox[3]
    said = str(kind) + (" " + pred.value.lower() if kind in (2, 3) else "")
    try:
        gold_str = str(gold["action_type"])
        if gold["action_type"] in (2, 3):
            gold_str += " " + gold["value"].lower()
    except (KeyError, AttributeError, TypeError):  # a value that rewrote the literal; SeeClick's bare except
        return result
    result["Op_F1"][0] = op_f1(said, gold_str)
    return result


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def aggregate(episodes: Sequence[Sequence[dict[str, Any]]]) -> dict[str, Any]:
    """SeeClick's logged figures over episodes of scored steps (mind2web_test.py:172-228); NaN as None."""
    steps = [s for ep in episodes for s in ep]
    if not steps:
        raise ValueError("no step was scored (SeeClick skips steps without a box): its evaluation has no result")
    by_type: dict[int, list[float]] = {4: [], 2: [], 3: []}
    for s in steps:
        if s["Op_F1"][1] in by_type:
            by_type[s["Op_F1"][1]].append(s["Op_F1"][0])
    success = [s["Op_F1"][0] == 1.0 and s["Ele_match"] for s in steps]
    per_type = [_mean(v) for v in by_type.values()]
    figures = {
        "Operation F1": _mean(per_type) if not any(math.isnan(v) for v in per_type) else math.nan,
        "Element Acc": sum(s["Ele_match"] for s in steps) / len(steps),
        "Step Success": sum(success) / len(steps),
        "Episode Success": sum(all(s["Op_F1"][0] == 1.0 and s["Ele_match"] for s in ep) for ep in episodes)
        / len(episodes),
        "Operation F1 cate": per_type,
        "Macro Ele Acc": _macro([[float(s["Ele_match"]) for s in ep] for ep in episodes]),
        "Macro Op F1": _macro([[float(s["Op_F1"][0]) for s in ep] for ep in episodes]),
        "Macro Step SR": _macro([[float(s["Op_F1"][0] == 1.0 and s["Ele_match"]) for s in ep] for ep in episodes]),
    }
    return _nan_to_none(figures)


def _macro(per_episode: list[list[float]]) -> float:
    means = [_mean(v) for v in per_episode]
    return math.nan if any(math.isnan(m) for m in means) else _mean(means)


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    return value
