"""HTML pages for trajectories: every screenshot with its action drawn on it.

Clicks are marked by rings at the pixel (double clicks two rings, right clicks in blue), drags and swipes by
arrows, scrolls by an arrow in the scroll direction, zooms by the region's rectangle, and typed text, key
combos, URLs and code as a caption over the frame. Marks are SVG in screen pixels over the image, so
they sit exactly where the action landed. All text is HTML-escaped.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

from mintgym.trajectory.store import iter_run, load_trajectory
from mintgym.trajectory.types import StepRecord, Trajectory

STYLE = """
body{font-family:system-ui,sans-serif;margin:20px;background:#fafafa;color:#222}
.step{background:#fff;border:1px solid #ddd;border-radius:6px;margin:14px 0;padding:10px}
.frame{position:relative;display:inline-block;max-width:100%}
.frame img{display:block;max-width:100%;height:auto}
.frame svg{position:absolute;left:0;top:0;width:100%;height:100%}
.err{color:#b00020;font-weight:600}.ok{color:#087f23;font-weight:600}
pre{white-space:pre-wrap;background:#f3f3f3;padding:6px;border-radius:4px;max-height:240px;overflow:auto}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
"""

_COLORS = {"left": "#ff1744", "right": "#2979ff", "middle": "#ff9100"}


def _arrow(x1, y1, x2, y2, color: str, width: float) -> str:
    return (f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{color}" stroke-width="{width}" '
            f'marker-end="url(#head)"/><circle cx="{x1}" cy="{y1}" r="{width * 2}" fill="{color}"/>')


def action_marks(action: dict | None, screen_size: tuple[int, int]) -> tuple[str, str]:
    """(SVG elements, caption text) for one action in screen pixels."""
    if not action:
        return "", ""
    w, h = screen_size
    r = max(6.0, min(w, h) / 60)
    sw = max(2.0, r / 3)
    kind = action.get("type")
    svg, caption = "", ""
    if kind in ("click", "tap", "long_press", "move"):
        x, y = action["x"], action["y"]
        color = _COLORS.get(action.get("button", "left"), "#ff1744")
        fill = "none"
        svg = (f'<circle cx="{x}" cy="{y}" r="{r}" stroke="{color}" stroke-width="{sw}" fill="{fill}"/>'
               f'<line x1="{x - 2 * r}" y1="{y}" x2="{x + 2 * r}" y2="{y}" stroke="{color}" stroke-width="{sw / 2}"/>'
               f'<line x1="{x}" y1="{y - 2 * r}" x2="{x}" y2="{y + 2 * r}" stroke="{color}" stroke-width="{sw / 2}"/>')
        if action.get("clicks", 1) > 1:
            svg += f'<circle cx="{x}" cy="{y}" r="{r * 1.7}" stroke="{color}" stroke-width="{sw}" fill="none"/>'
        if kind == "move":
            svg = f'<circle cx="{x}" cy="{y}" r="{r}" stroke="#aa00ff" stroke-width="{sw}" stroke-dasharray="4" fill="none"/>'
        caption = f"{kind} ({x}, {y})" + (f" {action.get('button')} x{action.get('clicks')}" if kind == "click" else "")
    elif kind in ("drag", "swipe"):
        svg = _arrow(action["x1"], action["y1"], action["x2"], action["y2"], "#ff1744", sw)
        caption = f"{kind} ({action['x1']}, {action['y1']}) → ({action['x2']}, {action['y2']})"
    elif kind == "scroll":
        x, y, dx, dy = action["x"], action["y"], action.get("dx", 0), action.get("dy", 0)
        norm = max(1.0, (dx * dx + dy * dy) ** 0.5)
        length = 4 * r
        svg = _arrow(x, y, x + dx / norm * length, y + dy / norm * length, "#00b0ff", sw)
        caption = f"scroll at ({x}, {y}) by dx={dx}, dy={dy}"
    elif kind == "zoom":
        x1, y1, x2, y2 = action["x1"], action["y1"], action["x2"], action["y2"]
        svg = f'<rect x="{x1}" y="{y1}" width="{x2 - x1}" height="{y2 - y1}" stroke="#ffd600" stroke-width="{sw}" fill="none"/>'
        caption = f"zoom ({x1}, {y1})-({x2}, {y2})"
    elif kind == "type":
        caption = f"type {action['text']!r}"
    elif kind == "key":
        caption = "key " + "+".join(action["keys"])
    elif kind == "goto":
        caption = f"goto {action['url']}"
    elif kind == "python":
        lines = [line for line in action["code"].splitlines() if line.strip()]
        caption = "python: " + (lines[0].strip()[:80] if lines else "") + (" …" if len(lines) > 1 else "")
    elif kind == "done":
        caption = "done" + (f" answer={action.get('answer')!r}" if action.get("answer") is not None else "")
    else:
        caption = json.dumps(action)
    if caption:
        size = max(14.0, h / 36)
        svg += (f'<text x="{size / 2}" y="{h - size / 2}" font-size="{size}" fill="#fff" stroke="#000" '
                f'stroke-width="{size / 10}" paint-order="stroke" font-family="monospace">{html.escape(caption)}</text>')
    return svg, caption


def _frame(src: str, step: StepRecord) -> str:
    w, h = step.screen_size
    svg, _ = action_marks(step.action, step.screen_size)
    defs = ('<defs><marker id="head" markerWidth="8" markerHeight="8" refX="6" refY="4" orient="auto">'
            '<path d="M0,0 L8,4 L0,8 z" fill="#ff1744"/></marker></defs>')
    return (f'<div class="frame"><img src="{html.escape(src)}" width="{w}" height="{h}" alt="step {step.index}">'
            f'<svg viewBox="0 0 {w} {h}" preserveAspectRatio="none">{defs}{svg}</svg></div>')


def render_trajectory(traj: Trajectory) -> str:
    status_cls = "ok" if traj.success else "err"
    rows = [f"<h1>{html.escape(traj.task_id)}</h1>",
            f"<p><b>Instruction:</b> {html.escape(traj.instruction)}</p>",
            f'<p>agent <b>{html.escape(traj.agent)}</b> · seed {traj.seed} · <span class="{status_cls}">'
            f"{traj.status}</span> · reward {traj.total_reward:.3f} · {len(traj.steps)} steps · "
            f"{traj.wall_seconds:.1f}s</p>"]
    if traj.error:
        rows.append(f'<p class="err">{html.escape(traj.error)}</p>')
    for step in traj.steps:
        _, caption = action_marks(step.action, step.screen_size)
        parts = [f'<div class="step"><h3>Step {step.index}: {html.escape(caption or "no action")}</h3>',
                 _frame(step.screenshot, step)]
        if step.error:
            parts.append(f'<p class="err">error: {html.escape(step.error)}</p>')
        if step.text:
            parts.append(f"<pre>{html.escape(step.text)}</pre>")
        details = [f"reward {step.reward}"]
        if step.policy_version is not None:
            details.append(f"policy v{step.policy_version}")
        if step.response_token_ids:
            details.append(f"{len(step.response_token_ids)} response tokens")
        if step.zoom:
            details.append(f"frame zoomed on {step.zoom}")
        parts.append(f"<p>{' · '.join(details)}</p></div>")
        rows.append("".join(parts))
    if traj.final_screenshot:
        rows.append(f'<div class="step"><h3>Final screen</h3><img src="{html.escape(traj.final_screenshot)}" '
                    f'style="max-width:100%"></div>')
    return f"<!doctype html><meta charset=utf-8><title>{html.escape(traj.task_id)}</title><style>{STYLE}</style>" + "".join(rows)


def write_trajectory_page(traj_dir: str | Path) -> Path:
    traj_dir = Path(traj_dir)
    page = traj_dir / "index.html"
    page.write_text(render_trajectory(load_trajectory(traj_dir)))
    return page


def write_run_pages(run_dir: str | Path) -> Path:
    """An index.html per trajectory under ``run_dir`` and a run index linking them; returns the index."""
    run_dir = Path(run_dir)
    rows = []
    count = 0
    for path, traj in iter_run(run_dir):
        (path / "index.html").write_text(render_trajectory(traj))
        count += 1
        link = os.path.relpath(path / "index.html", run_dir)
        cls = "ok" if traj.success else "err"
        rows.append(f'<tr><td><a href="{html.escape(link)}">{html.escape(traj.task_id)}</a></td><td>{traj.seed}</td>'
                    f'<td class="{cls}">{traj.status}</td><td>{traj.total_reward:.3f}</td><td>{len(traj.steps)}</td>'
                    f"<td>{html.escape(traj.agent)}</td><td>{html.escape(traj.error or '')}</td></tr>")
    if count == 0:
        raise FileNotFoundError(f"no trajectories under {run_dir}")
    index = run_dir / "index.html"
    index.write_text(f"<!doctype html><meta charset=utf-8><title>MintGym run</title><style>{STYLE}</style>"
                     f"<h1>{count} trajectories</h1><table><tr><th>task</th><th>seed</th><th>status</th><th>reward</th>"
                     f"<th>steps</th><th>agent</th><th>error</th></tr>{''.join(rows)}</table>")
    return index
