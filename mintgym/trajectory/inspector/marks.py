"""Actions drawn over the frame they were chosen on, and their one-line captions.

Clicks are rings at the pixel (double clicks two rings, right clicks blue, moves dashed), drags and swipes
arrows, scrolls an arrow in the scroll direction, zooms the region's rectangle. Marks are SVG in screen
pixels laid over the image, so they sit exactly where the action landed at any display scale; the SVG
does not clip, so a ring at the edge stays whole. Captions are plain text shown beside the frame (never
drawn into it, so a small frame cannot clip them); code keeps its real newlines (see :func:`action_code`).
"""

from __future__ import annotations

import html
import json

_COLORS = {"left": "#ff1744", "right": "#2979ff", "middle": "#ff9100"}
ARROW_DEFS = ('<defs><marker id="head" markerWidth="8" markerHeight="8" refX="6" refY="4" orient="auto">'
              '<path d="M0,0 L8,4 L0,8 z" fill="#ff1744"/></marker></defs>')


def _arrow(x1, y1, x2, y2, color: str, width: float) -> str:
    return (f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{color}" stroke-width="{width}" '
            f'marker-end="url(#head)"/><circle cx="{x1}" cy="{y1}" r="{width * 2}" fill="{color}"/>')


def _ring(x, y, r: float, sw: float, color: str, clicks: int) -> str:
    svg = (f'<circle cx="{x}" cy="{y}" r="{r}" stroke="{color}" stroke-width="{sw}" fill="none"/>'
           f'<line x1="{x - 2 * r}" y1="{y}" x2="{x + 2 * r}" y2="{y}" stroke="{color}" stroke-width="{sw / 2}"/>'
           f'<line x1="{x}" y1="{y - 2 * r}" x2="{x}" y2="{y + 2 * r}" stroke="{color}" stroke-width="{sw / 2}"/>')
    if clicks > 1:
        svg += f'<circle cx="{x}" cy="{y}" r="{r * 1.7}" stroke="{color}" stroke-width="{sw}" fill="none"/>'
    return svg


def action_caption(action: dict | None) -> str:
    """One line saying what the action did (code: its first line, the rest is shown formatted)."""
    if not action:
        return ""
    kind = action.get("type")
    if kind in ("click", "tap", "long_press", "move"):
        extra = f" {action.get('button', 'left')} x{action.get('clicks', 1)}" if kind == "click" else ""
        return f"{kind} ({action['x']}, {action['y']}){extra}"
    if kind in ("drag", "swipe"):
        return f"{kind} ({action['x1']}, {action['y1']}) → ({action['x2']}, {action['y2']})"
    if kind == "scroll":
        return f"scroll at ({action['x']}, {action['y']}) by dx={action.get('dx', 0)}, dy={action.get('dy', 0)}"
    if kind == "zoom":
        return f"zoom ({action['x1']}, {action['y1']})-({action['x2']}, {action['y2']})"
    if kind == "type":
        return f"type {action['text']!r}"
    if kind == "key":
        return "key " + "+".join(action["keys"])
    if kind == "goto":
        return f"goto {action['url']}"
    if kind == "python":
        lines = [line for line in action["code"].splitlines() if line.strip()]
        return "python: " + (lines[0].strip()[:80] if lines else "") + (" …" if len(lines) > 1 else "")
    if kind == "done":
        return "done" + (f" answer={action.get('answer')!r}" if action.get("answer") is not None else "")
    return json.dumps(action)


def action_code(action: dict | None) -> str | None:
    """The source of a code action, with its real newlines (None for other actions)."""
    if action and action.get("type") == "python":
        return str(action.get("code", ""))
    return None


def action_svg(action: dict | None, screen_size: tuple[int, int]) -> str:
    """SVG elements marking where the action landed, in screen pixels."""
    if not action:
        return ""
    w, h = screen_size
    r = max(4.0, min(w, h) / 40)
    sw = max(1.5, r / 3)
    kind = action.get("type")
    if kind in ("click", "tap", "long_press"):
        color = _COLORS.get(action.get("button", "left"), "#ff1744")
        return _ring(action["x"], action["y"], r, sw, color, int(action.get("clicks", 1)))
    if kind == "move":
        return (f'<circle cx="{action["x"]}" cy="{action["y"]}" r="{r}" stroke="#aa00ff" stroke-width="{sw}" '
                f'stroke-dasharray="4" fill="none"/>')
    if kind in ("drag", "swipe"):
        return _arrow(action["x1"], action["y1"], action["x2"], action["y2"], "#ff1744", sw)
    if kind == "scroll":
        x, y, dx, dy = action["x"], action["y"], action.get("dx", 0), action.get("dy", 0)
        norm = max(1.0, (dx * dx + dy * dy) ** 0.5)
        return _arrow(x, y, x + dx / norm * 4 * r, y + dy / norm * 4 * r, "#00b0ff", sw)
    if kind == "zoom":
        x1, y1, x2, y2 = action["x1"], action["y1"], action["x2"], action["y2"]
        return (f'<rect x="{x1}" y="{y1}" width="{x2 - x1}" height="{y2 - y1}" stroke="#ffd600" '
                f'stroke-width="{sw}" fill="none"/>')
    return ""


def action_marks(action: dict | None, screen_size: tuple[int, int]) -> tuple[str, str]:
    """(SVG elements, caption text) for one action in screen pixels."""
    return action_svg(action, screen_size), action_caption(action)


def display_scale(screen_size: tuple[int, int], min_width: int = 480) -> int:
    """The whole-number factor a frame is enlarged by so a small one (MiniWoB's 160x210) is readable."""
    width = max(1, screen_size[0])
    return max(1, -(-min_width // width)) if width < min_width else 1


def frame_html(src: str, screen_size: tuple[int, int], action: dict | None, alt: str, css: str = "frame") -> str:
    """The image at ``src`` (page-relative) with the action's marks over it, small frames enlarged."""
    w, h = screen_size
    scale = display_scale(screen_size)
    svg = action_svg(action, screen_size)
    return (f'<div class="{css}" style="width:{w * scale}px"><img src="{html.escape(src)}" width="{w}" '
            f'height="{h}" alt="{html.escape(alt)}" loading="lazy"'
            f'{" class=pix" if scale > 1 else ""}><svg viewBox="0 0 {w} {h}" preserveAspectRatio="none">'
            f"{ARROW_DEFS}{svg}</svg></div>")
