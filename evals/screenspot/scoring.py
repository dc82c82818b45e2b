"""Point-in-box verdicts and the accuracy tables of the official ScreenSpot evaluations, as their code computes them.

Official code followed (see docs/evaluate.md for the commits):

* ScreenSpot v1/v2: njucckevin/SeeClick ``pretrain/screenspot_test.py``;
* ScreenSpot-Pro: likaixin2000/ScreenSpot-Pro-GUI-Grounding ``eval_screenspot_pro.py``.

Both test the model's point in coordinates normalized by the image size: the box is divided by the image
size (screenspot_test.py:69-71, eval_screenspot_pro.py:138-142) and the point is what the model wrapper
made of the model's own numbers (0-1 fractions as written, a 0-1000 grid / 1000, resized pixels / the
resized size, pixels / the image size). ``x1 <= x <= x2 and y1 <= y <= y2`` is ``correct``, anything else
with a point ``wrong`` (a point off the image too), no point ``wrong_format``. Nothing is rounded first.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

CORRECT, WRONG, WRONG_FORMAT = "correct", "wrong", "wrong_format"
#: The frames a model's numbers can be written in (mintgym.action_spaces.frames names).
FRAME_KINDS = ("absolute", "resized_absolute", "normalized_1000", "relative")


def normalized_point(point: Sequence[float], frame: str, img_size: Sequence[int]) -> tuple[float, float]:
    """The model's ``point`` (written in ``frame``) as the official model wrappers normalize it.

    Pro ``models/qwen2_5vl.py:208`` divides by the resized size, ``models/cogagent24.py:78`` and
    ``models/osatlas7b.py:180`` by 1000, ``models/uground.py:132`` by the image size; SeeClick's 0-1 answers
    are used as written (screenspot_test.py:86; its <box> answers / 1000, :84).
    """
    kind, _, arg = str(frame).partition(":")
    x, y = float(point[0]), float(point[1])
    if kind == "relative":
        return x, y
    if kind == "normalized_1000":
        return x / 1000, y / 1000
    if kind == "resized_absolute":
        try:
            rw, rh = (int(v) for v in arg.lower().split("x"))
        except ValueError:
            raise ValueError(f"frame {frame!r} lacks its resized size (resized_absolute:WxH)") from None
        return x / rw, y / rh
    if kind == "absolute":
        return x / img_size[0], y / img_size[1]
    raise ValueError(f"unknown coordinate frame {frame!r}; known: {', '.join(FRAME_KINDS)}")


def point_verdict(point: Sequence[float] | None, bbox: Sequence[float], img_size: Sequence[int]) -> str:
    """The verdict of a normalized ``point`` on the pixel box [x1, y1, x2, y2] of an image of ``img_size``.

    eval_screenspot_pro.py:137-152 (screenspot_test.py:69-71 and 87 likewise): the box is divided by the
    image size, edges count as inside, no point is ``wrong_format``.
    """
    if point is None:
        return WRONG_FORMAT
    w, h = img_size
    x1, y1, x2, y2 = bbox[0] / w, bbox[1] / h, bbox[2] / w, bbox[3] / h
    return CORRECT if x1 <= point[0] <= x2 and y1 <= point[1] <= y2 else WRONG


def classify(point: Sequence[float] | None, bbox: Sequence[float], img_size: Sequence[int],
             frame: str = "absolute") -> str:
    """The official verdict of the model's own numbers ``point`` in ``frame`` on a pixel box [x1, y1, x2, y2]."""
    if point is None:
        return WRONG_FORMAT
    if len(point) != 2 or len(bbox) != 4 or len(img_size) != 2:
        raise ValueError(f"point must be (x, y), bbox (x1, y1, x2, y2) and img_size (w, h), got {point!r}, "
                         f"{bbox!r} and {img_size!r}")
    return point_verdict(normalized_point(point, frame, img_size), bbox, img_size)


def negative_verdict(result: str | None) -> str:
    """A negative-ground-truth sample: ``correct`` when the model said the target is absent
    (eval_screenspot_pro.py:154-160)."""
    return CORRECT if result == "negative" else WRONG if result == "positive" else WRONG_FORMAT


# -- rescoring a stored pixel point ---------------------------------------------------------------------------

_EPS = 2.0 ** -53


def _axis_inside(pred: float, low: float, high: float, extent: int | None) -> set[bool]:
    """Whether the official normalized test could have put the point inside [low, high] on one axis.

    A results file stores ``pred = p * extent`` (eval_screenspot_pro.py:401), not the normalized ``p`` the
    test used. With ``extent`` known every float ``p`` that stores as ``pred`` is tried; without it, a
    ``pred`` within float rounding of an edge could have been either side of it.
    """
    if extent is not None:
        start = pred / extent
        candidates = {start}
        for direction in (-math.inf, math.inf):
            q = start
            for _ in range(8):
                q = math.nextafter(q, direction)
                if q * extent == pred:
                    candidates.add(q)
        candidates = {q for q in candidates if q * extent == pred} or {start}
        return {low / extent <= q <= high / extent for q in candidates}
    def near(edge: float) -> bool:
        return abs(pred - edge) <= 4 * _EPS * max(abs(pred), abs(edge))

    above_low = {True, False} if near(low) else {pred > low}
    below_high = {True, False} if near(high) else {pred < high}
    return {a and b for a in above_low for b in below_high}


def stored_verdicts(pred: Sequence[float] | None, bbox: Sequence[float], img_size: Sequence[int] | None) -> set[str]:
    """Every verdict the official test could have given a record whose stored pixel point is ``pred``."""
    if not pred:
        return {WRONG_FORMAT}
    w, h = (None, None) if img_size is None else img_size
    xs = _axis_inside(float(pred[0]), float(bbox[0]), float(bbox[2]), w)
    ys = _axis_inside(float(pred[1]), float(bbox[1]), float(bbox[3]), h)
    return {CORRECT if x and y else WRONG for x in xs for y in ys}


def rescore(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each record scored again; copies carry ``correctness`` (recomputed) and ``stored_correctness``.

    A record with the model's own numbers (``model_point``, ``frame``, ``img_size``: MintGym's results) is
    scored exactly; one with only the stored pixel point (``pred``: the Pro repository's results) keeps its
    stored verdict where the float rounding of that point leaves both verdicts possible (``tie`` is then
    True). A negative-ground-truth record is scored from its ``result`` when it has one, else keeps its verdict.
    """
    out = []
    for r in records:
        row = dict(r)
        stored = r.get("correctness")
        row["stored_correctness"] = stored
        if r.get("gt_type", "positive") == "negative":
            row["correctness"] = negative_verdict(r["result"]) if "result" in r else stored
        elif r.get("model_point") is not None and r.get("frame") and r.get("img_size"):
            row["correctness"] = classify(r["model_point"], r["bbox"], r["img_size"], r["frame"])
        else:
            possible = stored_verdicts(r.get("pred"), r["bbox"], r.get("img_size"))
            row["tie"] = len(possible) > 1
            row["correctness"] = stored if stored in possible and len(possible) > 1 else min(possible)
        out.append(row)
    return out


def with_image_sizes(records: Sequence[dict[str, Any]], sizes: dict[str, tuple[int, int]]) -> list[dict[str, Any]]:
    """Copies of ``records`` given their image size from ``sizes`` (by id, else by the image path's last parts).

    Official results files keep no image size; with it, a stored point is rescored exactly except where two
    normalized points store as the same pixel value on either side of an edge.
    """
    out = []
    for r in records:
        row = dict(r)
        if row.get("img_size") is None:
            parts = Path(str(r.get("img_path", ""))).parts
            names = [str(r.get("id")), "/".join(parts[-2:]), "/".join(parts[-1:])]
            row["img_size"] = next((list(sizes[n]) for n in names if n in sizes), None)
        out.append(row)
    return out


def agreement(rescored: Sequence[dict[str, Any]]) -> tuple[int, list[int]]:
    """How many recomputed verdicts equal the stored ones, and the indices of those that do not."""
    differ = [i for i, r in enumerate(rescored)
              if r.get("stored_correctness") is not None and r["stored_correctness"] != r["correctness"]]
    checked = sum(1 for r in rescored if r.get("stored_correctness") is not None)
    return checked - len(differ), differ


# -- tables ---------------------------------------------------------------------------------------------------


def metrics(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The official per-list figures: counts, overall accuracy and text/icon accuracy
    (eval_screenspot_pro.py:112-134)."""
    total = len(records)

    def acc(rows: list[dict[str, Any]]) -> float:
        return sum(r["correctness"] == CORRECT for r in rows) / len(rows) if rows else 0

    correct = sum(r["correctness"] == CORRECT for r in records)
    return {"num_correct_action": correct, "num_total": total,
            "wrong_format_num": sum(r["correctness"] == WRONG_FORMAT for r in records),
            "action_acc": correct / total if total else 0,
            "text_acc": acc([r for r in records if r.get("ui_type") == "text"]),
            "icon_acc": acc([r for r in records if r.get("ui_type") == "icon"])}


def _by(records: Sequence[dict[str, Any]], keys: Sequence[str], label: Sequence[str]) -> dict[str, Any]:
    """Metrics per combination of the values of ``keys``, as eval_screenspot_pro.py:64-110 and 38-61 build them.

    As there, a value of None filters nothing: the ``group:None`` row of records without a group covers every
    record (collect_results_to_eval treats None as "include all").
    """
    values = [sorted({r.get(k) for r in records}, key=str) for k in keys]
    out = {}
    for combo in itertools.product(*values):
        rows = [r for r in records if all(v is None or r.get(k) == v for k, v in zip(keys, combo, strict=True))]
        if rows:
            out[" ".join(f"{name}:{v}" for name, v in zip(label, combo, strict=True))] = metrics(rows)
    return out


def pro_breakdowns(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The five metric groups ScreenSpot-Pro's evaluation writes (eval_screenspot_pro.py:313-331)."""
    return {
        "fine_grained": _by(records, ("platform", "application", "instruction_style", "gt_type"),
                            ("plat", "app", "inst_style", "gt_type")),
        "seeclick_style": _by(records, ("platform", "instruction_style", "gt_type"), ("plat", "inst_style", "gt_type")),
        "leaderboard_simple_style": _by(records, ("group",), ("group",)),
        "leaderboard_detailed_style": _by(records, ("application",), ("app",)),
        "overall": metrics(records),
    }


SPLITS = ("mobile", "desktop", "web")


def split_table(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """SeeClick's ScreenSpot table: text and icon accuracy per split, and two averages.

    As screenspot_test.py:89-107 and 116-118 count them, every sample whose type is not ``text`` is an icon and an
    empty cell is 0. ``seeclick_average`` is the mean of the cells, the Average of SeeClick's paper;
    ``average`` is MintGym's, over all samples.
    """
    table: dict[str, Any] = {}
    for split in SPLITS:
        rows = [r for r in records if r.get("platform") == split]
        if not rows:
            continue
        for ui, cell in (("text", [r for r in rows if r.get("ui_type") == "text"]),
                         ("icon", [r for r in rows if r.get("ui_type") != "text"])):
            table[f"{split}_{ui}"] = sum(r["correctness"] == CORRECT for r in cell) / len(cell) if cell else 0
    cells = list(table.values())
    table["seeclick_average"] = sum(cells) / len(cells) if cells else 0
    overall = metrics(records)
    table["average"] = overall["action_acc"]
    table["wrong_format_num"] = overall["wrong_format_num"]
    return table


def breakdowns(records: Sequence[dict[str, Any]], benchmark: str) -> dict[str, Any]:
    """The breakdowns of ``benchmark``'s own evaluation (Pro's groups, or v1/v2's split table)."""
    if benchmark == "screenspot-pro":
        return pro_breakdowns(records)
    return {"split_table": split_table(records), "overall": metrics(records)}


# -- results files ----------------------------------------------------------------------------------------------


def record_key(record: dict[str, Any]) -> tuple[Any, ...]:
    """What makes a record one sample: its id (else image and prompt), instruction style, ground truth and language."""
    ident = record.get("id")
    base = (ident,) if ident is not None else (record.get("img_path"), record.get("prompt_to_evaluate"))
    return (*base, record.get("instruction_style"), record.get("gt_type"), record.get("lang"))


def check_unique(records: Sequence[dict[str, Any]], where: str) -> None:
    """ValueError naming the first two records that are the same sample (one verdict per sample)."""
    seen: dict[tuple[Any, ...], int] = {}
    for i, r in enumerate(records):
        key = record_key(r)
        if key in seen:
            raise ValueError(f"{where}: records {seen[key]} and {i} are the same sample {key!r}; "
                             "keep one record per sample")
        seen[key] = i


def read_results(path: str | Path) -> tuple[str, list[dict[str, Any]]]:
    """The benchmark and per-sample records of a results file (``{"details": [...]}`` or a list of records).

    The benchmark is the file's own ``benchmark`` when it names one, else ScreenSpot-Pro when the records
    name applications (every Pro record does, eval_screenspot_pro.py:408), else ScreenSpot.
    """
    from mintgym.evals.screenspot.data import read_json

    file = Path(path)
    data = read_json(file, "predictions file")
    details = data.get("details") if isinstance(data, dict) else data
    if not isinstance(details, list) or not all(isinstance(r, dict) for r in details):
        raise ValueError(f"{file}: expected a list of records, or an object with a 'details' list")
    for i, r in enumerate(details):
        if r.get("gt_type", "positive") not in ("positive", "negative"):
            raise ValueError(f"{file}: record {i} has gt_type {r.get('gt_type')!r}; expected positive or negative")
        if r.get("gt_type", "positive") == "positive" and ("bbox" not in r or "pred" not in r):
            raise ValueError(f"{file}: record {i} lacks 'bbox' or 'pred'")
    check_unique(details, str(file))
    named = data.get("benchmark") if isinstance(data, dict) else None
    benchmark = named or ("screenspot-pro" if any(r.get("application") is not None for r in details)
                          else "screenspot")
    return str(benchmark), details
