"""Point-in-box scoring and the accuracy breakdowns of the official ScreenSpot evaluations.

A prediction is one click point. It is ``correct`` when it lies in the target box, edges included
(``x1 <= x <= x2 and y1 <= y <= y2``), ``wrong`` when it lies outside, and ``wrong_format`` when the answer
gave no point. ScreenSpot-Pro's script compares in coordinates normalized by the image size; when the
image size is known this module does the same, otherwise it compares in pixels (the stored ``pred`` of a
Pro results file is the normalized point times the image size).

Breakdowns:

* Pro (``eval_screenspot_pro.py``): ``fine_grained`` (platform x application x instruction style x
  ground-truth type), ``seeclick_style`` (platform x style x type), ``leaderboard_simple_style`` (group),
  ``leaderboard_detailed_style`` (application) and ``overall``; each with ``num_correct_action``,
  ``num_total``, ``wrong_format_num``, ``action_acc``, ``text_acc`` and ``icon_acc``.
* v1/v2 (SeeClick's table): accuracy per split (mobile, desktop, web) and ``ui_type`` (text, icon), and
  the average over all samples.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

CORRECT, WRONG, WRONG_FORMAT = "correct", "wrong", "wrong_format"
CORRECTNESS = (CORRECT, WRONG, WRONG_FORMAT)


def classify(point: Sequence[float] | None, bbox: Sequence[float],
             img_size: Sequence[int] | None = None) -> str:
    """``correct``, ``wrong`` or ``wrong_format`` for a click ``point`` (pixels) and a box [x1, y1, x2, y2]."""
    if point is None:
        return WRONG_FORMAT
    if len(point) != 2 or len(bbox) != 4:
        raise ValueError(f"point must be (x, y) and bbox (x1, y1, x2, y2), got {point!r} and {bbox!r}")
    x, y = float(point[0]), float(point[1])
    x1, y1, x2, y2 = (float(v) for v in bbox)
    if img_size is not None:
        w, h = float(img_size[0]), float(img_size[1])
        x, y, x1, y1, x2, y2 = x / w, y / h, x1 / w, y1 / h, x2 / w, y2 / h
    return CORRECT if x1 <= x <= x2 and y1 <= y <= y2 else WRONG


def metrics(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The official per-list figures: counts, overall accuracy and text/icon accuracy."""
    total = len(records)

    def acc(rows: list[dict[str, Any]]) -> float:
        return sum(r["correctness"] == CORRECT for r in rows) / len(rows) if rows else 0.0

    correct = sum(r["correctness"] == CORRECT for r in records)
    return {"num_correct_action": correct, "num_total": total,
            "wrong_format_num": sum(r["correctness"] == WRONG_FORMAT for r in records),
            "action_acc": correct / total if total else 0.0,
            "text_acc": acc([r for r in records if r.get("ui_type") == "text"]),
            "icon_acc": acc([r for r in records if r.get("ui_type") == "icon"])}


def _by(records: Sequence[dict[str, Any]], keys: Sequence[str], label: Sequence[str]) -> dict[str, Any]:
    values = [sorted({str(r.get(k)) for r in records}) for k in keys]
    out = {}
    for combo in itertools.product(*values):
        rows = [r for r in records if all(str(r.get(k)) == v for k, v in zip(keys, combo))]
        if rows:
            out[" ".join(f"{name}:{v}" for name, v in zip(label, combo))] = metrics(rows)
    return out


def pro_breakdowns(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The five metric groups ScreenSpot-Pro's evaluation writes."""
    return {
        "fine_grained": _by(records, ("platform", "application", "instruction_style", "gt_type"),
                            ("plat", "app", "inst_style", "gt_type")),
        "seeclick_style": _by(records, ("platform", "instruction_style", "gt_type"), ("plat", "inst_style", "gt_type")),
        "leaderboard_simple_style": _by(records, ("group",), ("group",)),
        "leaderboard_detailed_style": _by(records, ("application",), ("app",)),
        "overall": metrics(records),
    }


def split_table(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """SeeClick's ScreenSpot table: accuracy per split and ui type, and the average over all samples."""
    table: dict[str, Any] = {}
    for split in ("mobile", "desktop", "web"):
        for ui in ("text", "icon"):
            rows = [r for r in records if r.get("platform") == split and r.get("ui_type") == ui]
            if rows:
                table[f"{split}_{ui}"] = metrics(rows)["action_acc"]
    table["average"] = metrics(records)["action_acc"]
    table["wrong_format_num"] = metrics(records)["wrong_format_num"]
    return table


def breakdowns(records: Sequence[dict[str, Any]], benchmark: str) -> dict[str, Any]:
    """The breakdowns of ``benchmark``'s own evaluation (Pro's groups, or v1/v2's split table)."""
    if benchmark == "screenspot-pro":
        return pro_breakdowns(records)
    return {"split_table": split_table(records), "overall": metrics(records)}


def read_results(path: str | Path) -> list[dict[str, Any]]:
    """The per-sample records of a results file in the Pro repository's layout (``{"details": [...]}``)."""
    from mintgym.evals.screenspot.data import read_json

    file = Path(path)
    data = read_json(file, "predictions file")
    details = data.get("details") if isinstance(data, dict) else data
    if not isinstance(details, list) or not all(isinstance(r, dict) for r in details):
        raise ValueError(f"{file}: expected a list of records, or an object with a 'details' list")
    for i, r in enumerate(details):
        if "bbox" not in r or "pred" not in r:
            raise ValueError(f"{file}: record {i} lacks 'bbox' or 'pred'")
    return details


def rescore(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each positive-ground-truth record scored again from its ``pred`` and ``bbox``.

    The returned copies carry ``correctness`` (recomputed) and ``stored_correctness`` (the file's). A
    negative-ground-truth record has no point to score; it keeps its stored verdict.
    """
    out = []
    for r in records:
        row = dict(r)
        row["stored_correctness"] = r.get("correctness")
        if r.get("gt_type", "positive") == "positive":
            pred = r.get("pred")
            row["correctness"] = classify(pred if pred else None, r["bbox"], r.get("img_size"))
        out.append(row)
    return out


def agreement(rescored: Sequence[dict[str, Any]]) -> tuple[int, list[int]]:
    """How many recomputed verdicts equal the stored ones, and the indices of those that do not."""
    differ = [i for i, r in enumerate(rescored)
              if r.get("stored_correctness") is not None and r["stored_correctness"] != r["correctness"]]
    checked = sum(1 for r in rescored if r.get("stored_correctness") is not None)
    return checked - len(differ), differ
