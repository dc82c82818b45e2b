"""Mind2Web tables, one per protocol, each titled with the protocol it follows.

* ``official``: the paper's columns (Ele. Acc, Op. F1, Step SR macro over tasks, as the official code's
  ``marco_*`` figures; SR = task success).
* ``seeclick``: the figures SeeClick's ``mind2web_test.py`` logs (Op. F1 averaged over the three op types,
  Ele. Acc, Step SR and Ep. SR over steps and episodes, and the macro ones).

A document is MintGym's ``results.json``, an official ``<split>_results_top<k>.json``, or an official
``<split>_predictions_top<k>.json`` scored on the data (:func:`score_predictions_file`).
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mintgym.evals.mind2web.data import iter_steps, load_ranks
from mintgym.evals.mind2web.metrics import aggregate, score_predictions
from mintgym.evals.screenspot.report import page, rows_to_html, rows_to_text

PROTOCOLS = ("official", "seeclick")
PAPER_HEADER = ("split", "tasks", "steps", "Ele. Acc", "Op. F1", "Step SR", "SR")
SEECLICK_HEADER = ("split", "Op. F1", "Ele. Acc", "Step SR", "Ep. SR", "Macro Ele. Acc", "Macro Op. F1",
                   "Macro Step SR")
TITLES = {"official": "Mind2Web, official multiple-choice protocol (OSU-NLP-Group/Mind2Web metric.py)",
          "seeclick": "Mind2Web, SeeClick's protocol (njucckevin/SeeClick agent_tasks/mind2web_test.py)"}


def is_official_results(doc: dict[str, Any]) -> bool:
    """An official ``..._results_top<k>.json`` (its own keys, ``marco_*`` spelling included)."""
    return "marco_step_acc" in doc and "metrics" not in doc


def paper_rows(docs: Sequence[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for d in docs:
        if is_official_results(d):
            rows.append([d.get("split", "(official file)"), None, None, d["marco_element_acc"],
                         d["marco_action_f1"], d["marco_step_acc"], None])
            continue
        m = d.get("metrics") or {}
        rows.append([d.get("split"), m.get("tasks", 0), m.get("steps", 0), m.get("element_acc"), m.get("op_f1"),
                     m.get("step_sr"), m.get("task_sr")])
    return rows


def seeclick_rows(docs: Sequence[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for d in docs:
        if "seeclick" not in d:
            raise ValueError(f"split {d.get('split')!r}: this results file has no SeeClick figures")
        s = d["seeclick"] or {}
        rows.append([d.get("split"), *(s.get(k) for k in ("Operation F1", "Element Acc", "Step Success",
                                                          "Episode Success", "Macro Ele Acc", "Macro Op F1",
                                                          "Macro Step SR"))])
    return rows


def paper_table(docs: Sequence[dict[str, Any]], protocol: str = "official") -> str:
    """Text table of one or more split results under ``protocol`` (in percent), titled with the protocol."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown Mind2Web protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    if protocol == "seeclick":
        table = rows_to_text(SEECLICK_HEADER, seeclick_rows(docs))
        errors = [(d.get("split"), (d.get("seeclick") or {}).get("error")) for d in docs]
    else:
        table = rows_to_text(PAPER_HEADER, paper_rows(docs))
        errors = [(d.get("split"), (d.get("metrics") or {}).get("error")) for d in docs]
    notes = "".join(f"\nno result for {split}: {error}" for split, error in errors if error)
    return TITLES[protocol] + "\n" + table + notes


def score_predictions_file(predictions: Path, data: Path, split: str, scores: Path | None = None,
                           top_k: int = 50) -> dict[str, Any]:
    """An official predictions file scored on ``split`` of ``data``, as a results document (official protocol)."""
    try:
        lines = json.loads(Path(predictions).read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{predictions} is not valid JSON ({err})") from None
    if not isinstance(lines, list):
        raise ValueError(f"{predictions}: an official predictions file is a list of [step, element, action] lines")  # noqa: TRY004
    steps = list(iter_steps(data, split, load_ranks(scores) if scores is not None else None))
    return {"split": split, "metrics": aggregate(score_predictions(steps, lines, top_k))}


def write_report(path: Path, results: dict[str, Any]) -> None:
    steps = [[r["key"], r["gold_operation"], r["predicted_operation"], r["predicted_element"],
              "yes" if r["element_correct"] else "no", r["op_f1"], "yes" if r["step_success"] else "no",
              "skipped" if r.get("seeclick") is None else "yes" if r["seeclick"]["Ele_match"] else "no"]
             for r in results["steps"]]
    frames = ", ".join(results.get("frames") or [])
    sections = [
        ("Run", (f"<p>split {html.escape(str(results['split']))}; viewport {results.get('viewport')}; "
                 f"coordinate frame(s): {html.escape(frames)}; ranks: {html.escape(str(results.get('ranks')))}"
                 "</p>")),
        (TITLES["official"], rows_to_html(PAPER_HEADER, paper_rows([results]))),
        (TITLES["seeclick"], rows_to_html(SEECLICK_HEADER, seeclick_rows([results]))),
        ("Steps", rows_to_html(("step", "gold", "predicted", "element", "element ok", "op F1", "step ok",
                                "SeeClick click in box"), steps)),
    ]
    Path(path).write_text(page(f"Mind2Web {results['split']}", sections))
