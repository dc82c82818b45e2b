"""report.html of an evaluation: summary tables, a bar plot of success per task family (inline SVG, with
the 95% Wilson interval as whiskers), errors, skipped tasks and tasks without an oracle, and a link to every
trajectory's page.

It reads only the results document (:func:`mintgym.evals.harness.build_results`), so a report can be
rebuilt from ``results.json`` alone. All text is HTML-escaped.
"""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Any

STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;background:#fafafa;color:#222}
table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
th{background:#eee}td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#087f23;font-weight:600}.err{color:#b00020;font-weight:600}.muted{color:#777}
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _ci(interval: list[float] | None, pct: bool = True) -> str:
    if not interval:
        return "–"
    lo, hi = interval
    return f"[{_pct(lo)}, {_pct(hi)}]" if pct else f"[{lo:.3f}, {hi:.3f}]"


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def summary_row(name: str, s: dict[str, Any], link: str | None = None) -> str:
    label = f'<a href="{_e(link)}">{_e(name)}</a>' if link else _e(name)
    errors = s["errors"]
    reasons = "; ".join(f"{n}× {r}" for r, n in errors["reasons"].items())
    return (f"<tr><td>{label}</td><td class=num>{s['episodes']}</td><td class=num>{_pct(s['success_rate'])}</td>"
            f"<td class=num>{_ci(s['success_ci95'])}</td><td class=num>{_num(s['mean_reward'])}</td>"
            f"<td class=num>{_ci(s['reward_ci95'], pct=False)}</td><td class=num>{_num(s['mean_steps'], 1)}</td>"
            f"<td class=num>{s['invalid_steps']}</td><td class=num>{errors['count']}</td>"
            f"<td class=num>{s['wall_seconds']:.1f}</td><td>{_e(reasons)}</td></tr>")


_HEAD = ("<tr><th>{what}</th><th>episodes</th><th>success</th><th>95% CI</th><th>mean reward</th><th>95% CI</th>"
         "<th>mean steps</th><th>invalid steps</th><th>errors</th><th>seconds</th><th>error reasons</th></tr>")


def summary_table(what: str, groups: dict[str, dict[str, Any]], links: dict[str, str] | None = None) -> str:
    rows = "".join(summary_row(name, s, (links or {}).get(name)) for name, s in groups.items())
    return f"<table>{_HEAD.format(what=_e(what))}{rows}</table>"


def success_bars_svg(groups: dict[str, dict[str, Any]], width: int = 720) -> str:
    """A horizontal bar per group: success rate, with its 95% interval as a whisker."""
    if not groups:
        return ""
    label_w, bar_h, gap, top = 220, 18, 8, 24
    plot_w = width - label_w - 120
    height = top + len(groups) * (bar_h + gap) + 24
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
              f'viewBox="0 0 {width} {height}" role="img" aria-label="success rate per task family">'),
             f'<text x="{label_w}" y="14" font-size="12">success rate per task family (whiskers: 95% Wilson CI)</text>']
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + tick * plot_w
        parts.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 20}" stroke="#ddd"/>'
                     f'<text x="{x:.1f}" y="{height - 6}" font-size="10" text-anchor="middle">'
                     f'{int(tick * 100)}%</text>')
    for i, (name, s) in enumerate(groups.items()):
        y = top + i * (bar_h + gap)
        rate = s["success_rate"] or 0.0
        parts.append(f'<text x="{label_w - 6}" y="{y + bar_h - 4}" font-size="12" text-anchor="end">{_e(name)}</text>'
                     f'<rect x="{label_w}" y="{y}" width="{rate * plot_w:.1f}" height="{bar_h}" fill="#4caf50">'
                     f'<title>{_e(name)}: {_pct(s["success_rate"])} of {s["episodes"]}</title></rect>')
        if s.get("success_ci95"):
            lo, hi = s["success_ci95"]
            x1, x2, mid = label_w + lo * plot_w, label_w + hi * plot_w, y + bar_h / 2
            parts.append(f'<line x1="{x1:.1f}" y1="{mid}" x2="{x2:.1f}" y2="{mid}" stroke="#222" stroke-width="1.5"/>'
                         f'<line x1="{x1:.1f}" y1="{y + 4}" x2="{x1:.1f}" y2="{y + bar_h - 4}" stroke="#222"/>'
                         f'<line x1="{x2:.1f}" y1="{y + 4}" x2="{x2:.1f}" y2="{y + bar_h - 4}" stroke="#222"/>')
        parts.append(f'<text x="{label_w + plot_w + 8}" y="{y + bar_h - 4}" font-size="12">'
                     f'{_pct(s["success_rate"])} (n={s["episodes"]})</text>')
    parts.append("</svg>")
    return "".join(parts)


def render_report(results: dict[str, Any]) -> str:
    bench, overall = results["benchmark"], results["overall"]
    config = results.get("config", {})
    setup = " · ".join(f"{_e(k)}={_e(v)}" for k, v in config.items() if v not in (None, "", {}))
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(results.get("ended", 0)))
    parts = [f"<!doctype html><meta charset=utf-8><title>MintGym eval: {_e(bench['name'])}</title>"
             f"<style>{STYLE}</style>",
             f"<h1>Evaluation: {_e(bench['name'])}</h1>",
             (f"<p>{_e(bench.get('description', ''))}</p><p class=muted>{setup}<br>finished {when}, "
              f"{overall['wall_seconds']:.1f}s wall · <a href=\"results.json\">results.json</a> · "
              f"<a href=\"trajectories/index.html\">all trajectories</a></p>"),
             "<h2>Overall</h2>", summary_table("run", {"all": overall})]
    if results.get("interrupted"):
        stop = results["interrupted"]
        parts.insert(3, f"<p class=err>Interrupted: {stop['finished']} episodes finished (shown here), "
                        f"{stop['pending']} not played; run the same command again to resume.</p>")
    parts += ["<h2>Per domain</h2>", summary_table("domain", results["domains"])]
    if results.get("osworld"):
        from mintgym.evals.osworld.results import render_table

        parts.append(render_table(results["osworld"]))
    parts += ["<h2>Per task family</h2>", success_bars_svg(results["families"]),
              summary_table("family", results["families"])]
    parts += ["<h2>Per task</h2>", summary_table("task", results["tasks"])]
    if results["skipped"]:
        rows = "".join(f"<tr><td>{_e(s['task_id'])}</td><td>{_e(s['reason'])}</td></tr>" for s in results["skipped"])
        parts.append(f"<h2>Skipped here ({len(results['skipped'])})</h2><table><tr><th>task</th><th>reason</th></tr>"
                     f"{rows}</table>")
    if results.get("no_oracle"):
        rows = "".join(f"<tr><td>{_e(s['task_id'])}</td></tr>" for s in results["no_oracle"])
        parts.append(f"<h2>No oracle ({len(results['no_oracle'])})</h2><p class=muted>The agent plays task oracles; "
                     f"these tasks ship none, so they were not run (not errors).</p><table><tr><th>task</th></tr>"
                     f"{rows}</table>")
    rows = []
    for ep in results["episodes"]:
        cls = "ok" if ep["status"] == "success" else "err"
        rows.append(f'<tr><td><a href="{_e(ep["path"])}/index.html">{_e(ep["task_id"])}</a></td>'
                    f"<td class=num>{_e(ep['seed'])}</td><td class={cls}>{_e(ep['status'])}</td>"
                    f"<td class=num>{ep['reward']:.3f}</td><td class=num>{ep['steps']}</td>"
                    f"<td class=num>{ep['invalid_steps']}</td><td class=num>{ep['wall_seconds']:.1f}</td>"
                    f"<td style='white-space:pre-wrap'>{_e(ep['error'] or '')}</td></tr>")
    parts.append(f"<h2>Episodes ({len(rows)})</h2><table><tr><th>task (trajectory)</th><th>seed</th><th>status</th>"
                 "<th>reward</th><th>steps</th><th>invalid</th><th>seconds</th><th>error</th></tr>"
                 f"{''.join(rows)}</table>")
    return "".join(parts)


def write_report(out: str | Path, results: dict[str, Any]) -> Path:
    path = Path(out) / "report.html"
    path.write_text(render_report(results))
    return path
