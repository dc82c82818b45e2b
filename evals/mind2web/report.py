"""Mind2Web tables in the paper's form: one row per split, columns Ele. Acc, Op. F1, Step SR, SR."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mintgym.evals.screenspot.report import page, rows_to_html, rows_to_text

PAPER_HEADER = ("split", "tasks", "steps", "Ele. Acc", "Op. F1", "Step SR", "SR")


def paper_rows(docs: Sequence[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for d in docs:
        m = d.get("metrics") or {}
        if not m.get("steps"):
            rows.append([d.get("split"), 0, 0, None, None, None, None])
            continue
        rows.append([d.get("split"), m["tasks"], m["steps"], m["element_acc"], m["op_f1"], m["step_sr"], m["task_sr"]])
    return rows


def paper_table(docs: Sequence[dict[str, Any]]) -> str:
    """Text table of one or more split results (macro-averaged over tasks, in percent)."""
    return rows_to_text(PAPER_HEADER, paper_rows(docs))


def write_report(path: Path, results: dict[str, Any]) -> None:
    steps = [[r["key"], r["gold_operation"], r["predicted_operation"], r["predicted_element"],
              "yes" if r["element_correct"] else "no", r["op_f1"], "yes" if r["step_success"] else "no"]
             for r in results["steps"]]
    frames = ", ".join(results.get("frames") or [])
    sections = [
        ("Run", f"<p>split {html.escape(str(results['split']))}; viewport {results.get('viewport')}; "
                f"coordinate frame(s): {html.escape(frames)}</p>"),
        ("Mind2Web metrics (macro over tasks)", rows_to_html(PAPER_HEADER, paper_rows([results]))),
        ("Steps", rows_to_html(("step", "gold", "predicted", "element", "element ok", "op F1", "step ok"), steps)),
    ]
    Path(path).write_text(page(f"Multimodal-Mind2Web {results['split']}", sections))
