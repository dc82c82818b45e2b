"""The pixel contract of the pytool domain: one fixed-size RGB frame per observation.

Layout (default 1024x768): a title bar; on the left the task image (or the image the last cell saved
as ``out.png`` via ``show(img)``), drawn 1:1 when it fits and scaled down otherwise; on the right the
last cell's code and its output, in a monospace font, truncated to what fits.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

WIDTH, HEIGHT = 1024, 768
TITLE_H = 28
LEFT_W = 592
PAD = 8
BG = (246, 246, 243)
PANEL = (255, 255, 255)
INK = (20, 20, 20)
MUTED = (105, 105, 105)
CODE_BG = (240, 243, 250)
ERROR = (170, 20, 20)

_FONT_DIRS = ("/usr/share/fonts/truetype/dejavu",)


@lru_cache(maxsize=8)
def font(size: int, mono: bool = False) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    """DejaVu (Sans or Sans Mono) at ``size`` px, or PIL's default font when DejaVu is missing."""
    name = "DejaVuSansMono.ttf" if mono else "DejaVuSans.ttf"
    for folder in _FONT_DIRS:
        try:
            return ImageFont.truetype(f"{folder}/{name}", size)
        except OSError:
            continue
    try:
        return ImageFont.truetype(name, size)
    except OSError:
        return ImageFont.load_default()


@dataclass
class CanvasState:
    """Everything the frame shows."""

    title: str = "pytool"
    task_image: Image.Image | None = None
    shown_image: Image.Image | None = None
    code: str = ""
    output: str = ""
    failed: bool = False
    step: int = 0


def render(state: CanvasState, size: tuple[int, int] = (WIDTH, HEIGHT)) -> np.ndarray:
    """The frame for ``state`` as RGB uint8 of shape (height, width, 3)."""
    width, height = size
    frame = Image.new("RGB", (width, height), BG)
    draw = ImageDraw.Draw(frame)
    draw.rectangle([0, 0, width, TITLE_H], fill=(40, 44, 52))
    draw.text((PAD, 6), f"{state.title}   step {state.step}", font=font(14), fill=(235, 235, 235))
    left_w = min(LEFT_W, width // 2 + 80)
    _draw_image_panel(frame, draw, state, (0, TITLE_H, left_w, height))
    _draw_text_panel(draw, state, (left_w, TITLE_H, width, height))
    return np.asarray(frame, dtype=np.uint8).copy()


def _draw_image_panel(frame: Image.Image, draw: ImageDraw.ImageDraw, state: CanvasState, box) -> None:
    x0, y0, x1, y1 = box
    image, label = state.task_image, "task image (/task/image.png)"
    if state.shown_image is not None:
        image, label = state.shown_image, "out.png (shown by your code)"
    area_w, area_h = x1 - x0 - 2 * PAD, y1 - y0 - 2 * PAD - 22
    if image is None:
        draw.text((x0 + PAD, y0 + PAD), "no image", font=font(13), fill=MUTED)
        return
    scale = min(1.0, area_w / image.width, area_h / image.height)
    shown = image.convert("RGB")
    if scale < 1.0:
        shown = shown.resize((max(1, int(image.width * scale)), max(1, int(image.height * scale))),
                             Image.Resampling.LANCZOS)
    frame.paste(shown, (x0 + PAD, y0 + PAD))
    note = f"{label}: {image.width}x{image.height} px" + (f", shown at {scale:.2f}x" if scale < 1.0 else "")
    draw.text((x0 + PAD, y0 + PAD + shown.height + 4), note, font=font(12), fill=MUTED)


def _draw_text_panel(draw: ImageDraw.ImageDraw, state: CanvasState, box) -> None:
    x0, y0, x1, y1 = box
    mono = font(12, mono=True)
    char_w = max(1, round(mono.getlength("M"))) if hasattr(mono, "getlength") else 7
    line_h = 15
    cols = max(10, (x1 - x0 - 2 * PAD - 8) // char_w)
    draw.rectangle([x0, y0, x1, y1], fill=PANEL)
    y = y0 + PAD
    draw.text((x0 + PAD, y), "last code", font=font(13), fill=MUTED)
    y += 20
    code_lines = _wrap(state.code or "(no code run yet)", cols)
    max_code = 16
    if len(code_lines) > max_code:
        code_lines = code_lines[: max_code - 1] + [f"... ({len(code_lines) - max_code + 1} more lines)"]
    code_h = len(code_lines) * line_h + 8
    draw.rectangle([x0 + PAD - 2, y - 2, x1 - PAD, y + code_h], fill=CODE_BG)
    for line in code_lines:
        draw.text((x0 + PAD + 2, y + 2), line, font=mono, fill=INK)
        y += line_h
    y += 20
    draw.text((x0 + PAD, y), "output" + (" (error)" if state.failed else ""), font=font(13),
              fill=ERROR if state.failed else MUTED)
    y += 20
    rows = max(1, (y1 - PAD - y) // line_h)
    out_lines = _wrap(state.output if state.output else "(no output)", cols)
    if len(out_lines) > rows:  # keep the end: the traceback and the last prints matter most
        out_lines = [f"... ({len(out_lines) - rows + 1} earlier lines)"] + out_lines[-(rows - 1):]
    for line in out_lines:
        draw.text((x0 + PAD + 2, y), line, font=mono, fill=ERROR if state.failed else INK)
        y += line_h


def _wrap(text: str, cols: int) -> list[str]:
    lines: list[str] = []
    for raw in text.expandtabs(4).splitlines() or [""]:
        printable = "".join(ch if ch.isprintable() else "?" for ch in raw)
        lines.extend(textwrap.wrap(printable, cols, replace_whitespace=False, drop_whitespace=False,
                                   break_long_words=True) or [""])
    return lines
