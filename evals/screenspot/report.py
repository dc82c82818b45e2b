"""Tables of a grounding run in ScreenSpot's own form, as text (the CLI) and as report.html.

``rows_to_text`` and ``rows_to_html`` render any list of rows; the Mind2Web and Online-Mind2Web reports
use them too.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mintgym.evals.report import STYLE


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{100 * value:.1f}"
    return "-" if value is None else str(value)


def rows_to_text(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table; floats are shown as percentages with one decimal."""
    cells = [list(header)] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in cells]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths)] + lines[1:])


def rows_to_html(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def page(title: str, sections: Sequence[tuple[str, str]]) -> str:
    """A self-contained HTML page: a title and (heading, html) sections."""
    parts = "".join(f"<h2>{html.escape(h)}</h2>{body}" for h, body in sections)
    return (f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{parts}</body></html>")


METRIC_HEADER = ("", "correct", "total", "wrong_format", "accuracy", "text", "icon")


def metric_rows(groups: dict[str, dict[str, Any]]) -> list[list[Any]]:
    return [[name, m["num_correct_action"], m["num_total"], m["wrong_format_num"], m["action_acc"], m["text_acc"],
             m["icon_acc"]] for name, m in groups.items()]


def tables(results: dict[str, Any]) -> list[tuple[str, Sequence[str], list[list[Any]]]]:
    """(title, header, rows) of each table of ``results['metrics']``, in the benchmark's own form."""
    m = results["metrics"]
    out = []
    if "leaderboard_simple_style" in m:
        out.append(("Per group (ScreenSpot-Pro leaderboard)", METRIC_HEADER,
                    metric_rows(m["leaderboard_simple_style"])))
        out.append(("Per application", METRIC_HEADER, metric_rows(m["leaderboard_detailed_style"])))
        out.append(("Per platform, instruction style and ground truth", METRIC_HEADER,
                    metric_rows(m["seeclick_style"])))
    if "split_table" in m:
        t = m["split_table"]
        cols = [k for k in t if k not in ("seeclick_average", "average", "wrong_format_num")]
        title = ("Accuracy per platform (ScreenSpot table; SeeClick's Average is the mean of the cells, "
                 "MintGym's the mean over all samples)")
        out.append((title, [*cols, "average (SeeClick)", "average (all samples)", "wrong_format"],
                    [[*(t[c] for c in cols), t["seeclick_average"], t["average"], t["wrong_format_num"]]]))
    out.append(("Overall", METRIC_HEADER, metric_rows({"overall": m["overall"]})))
    return out


def render_text(results: dict[str, Any]) -> str:
    return "\n\n".join(f"{title}\n{rows_to_text(header, rows)}" for title, header, rows in tables(results))


def write_report(path: Path, results: dict[str, Any]) -> None:
    sections = [(title, rows_to_html(header, rows)) for title, header, rows in tables(results)]
    frames = ", ".join(results.get("frames") or []) or "not recorded"
    sections.insert(0, ("Run", (f"<p>benchmark {html.escape(str(results.get('benchmark')))}; coordinate frame(s): "
                                f"{html.escape(frames)}</p>")))
    Path(path).write_text(page(f"{results.get('benchmark', 'ScreenSpot')} results", sections))
