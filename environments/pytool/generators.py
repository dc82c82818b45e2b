"""Procedural task images, drawn with PIL: each generator turns (config, rng) into an :class:`Instance`.

Shapes are drawn without anti-aliasing in flat palette colours, so an image is exactly reproducible
from its seed and analysable with numpy. Every instance also carries the code of a real solution
(:data:`ORACLE_HELPERS` plus a family-specific analysis) that the task's oracle runs in the sandbox.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from PIL import Image, ImageDraw

from mintgym.environments.pytool.canvas import font

PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "green": (40, 160, 60),
    "blue": (40, 80, 220),
    "yellow": (230, 200, 30),
    "purple": (140, 60, 180),
    "orange": (240, 130, 20),
    "cyan": (30, 190, 200),
    "pink": (240, 110, 180),
}
BACKGROUND = (255, 255, 255)
GRID = (205, 205, 205)
SHAPES = ("circle", "square", "triangle")
MONO_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"


@dataclass
class Instance:
    """One generated task instance."""

    image: Image.Image
    instruction: str
    truth: Any
    #: Python code that solves this instance by analysing the image file (the oracle runs it).
    solution: str
    #: How far a numeric answer may be from ``truth`` (bar charts: one pixel's worth, at least 0.5).
    tolerance: float = 0.0


# -------------------------------------------------------------------------------------------- drawing

def _draw_shape(draw: ImageDraw.ImageDraw, kind: str, box: tuple[int, int, int, int], colour) -> None:
    x0, y0, x1, y1 = box
    if kind == "circle":
        draw.ellipse(box, fill=colour)
    elif kind == "square":
        draw.rectangle(box, fill=colour)
    elif kind == "triangle":
        draw.polygon([((x0 + x1) // 2, y0), (x1, y1), (x0, y1)], fill=colour)
    else:
        raise ValueError(f"unknown shape {kind!r}")


def _place(rng: random.Random, size: tuple[int, int], sides: list[int], margin: int = 8) -> list[tuple]:
    """Non-overlapping square boxes (with ``margin`` px between them) of the given side lengths."""
    width, height = size
    boxes: list[tuple[int, int, int, int]] = []
    for side in sides:
        for _ in range(2000):
            x0 = rng.randint(margin, width - side - margin)
            y0 = rng.randint(margin, height - side - margin)
            box = (x0, y0, x0 + side, y0 + side)
            if all(box[0] > b[2] + margin or box[2] < b[0] - margin or box[1] > b[3] + margin
                   or box[3] < b[1] - margin for b in boxes):
                boxes.append(box)
                break
        else:
            raise RuntimeError("could not place the shapes without overlap; the configuration is too dense")
    return boxes


# ---------------------------------------------------------------------------------- shared oracle code

ORACLE_HELPERS = '''
import numpy as np
from collections import deque
from PIL import Image

def load(path):
    return np.asarray(Image.open(path).convert("RGB")).astype(int)

def colour_mask(img, rgb):
    return np.all(img == np.array(rgb), axis=-1)

def components(mask):
    """Connected regions of a boolean mask (4-neighbour): dicts with area, bbox, centre, fill."""
    seen = np.zeros(mask.shape, bool)
    h, w = mask.shape
    found = []
    for y0, x0 in zip(*np.nonzero(mask)):
        if seen[y0, x0]:
            continue
        seen[y0, x0] = True
        queue, pts = deque([(y0, x0)]), []
        while queue:
            y, x = queue.popleft()
            pts.append((y, x))
            for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                if 0 <= ny < h and 0 <= nx < w and mask[ny, nx] and not seen[ny, nx]:
                    seen[ny, nx] = True
                    queue.append((ny, nx))
        ys = np.array([p[0] for p in pts]); xs = np.array([p[1] for p in pts])
        bw, bh = xs.max() - xs.min() + 1, ys.max() - ys.min() + 1
        found.append({"area": len(pts), "bbox": (xs.min(), ys.min(), xs.max(), ys.max()),
                      "centre": ((xs.min() + xs.max()) / 2, (ys.min() + ys.max()) / 2),
                      "fill": len(pts) / float(bw * bh)})
    return found

def shape_of(c):
    f = c["fill"]
    return "square" if f > 0.9 else ("circle" if f > 0.65 else "triangle")
'''


def _solution(body: str, image_path: str, **params: Any) -> str:
    setup = "".join(f"{k} = {v!r}\n" for k, v in params.items())
    return f"{ORACLE_HELPERS}\nimg = load({image_path!r})\n{setup}{body.strip()}\n"


# ------------------------------------------------------------------------------------- count-shapes

COUNT_CONFIGS = [
    # (colours in play, shapes in play, count range of the target, distractors, size, only_shape)
    (("red", "blue"), ("circle",), (2, 6), 4, (480, 360), False),
    (("green", "yellow", "blue"), ("square",), (3, 8), 6, (480, 360), False),
    (("purple", "orange", "red"), ("circle", "square"), (2, 9), 8, (520, 390), False),
    (("blue", "cyan", "green", "pink"), SHAPES, (4, 10), 10, (560, 420), False),
    (("red", "green"), ("circle", "square"), (2, 6), 6, (520, 390), True),
    (("orange", "blue", "purple"), SHAPES, (2, 7), 8, (560, 420), True),
    (("yellow", "pink", "cyan"), ("square", "triangle"), (3, 8), 8, (560, 420), True),
    (("red", "orange", "pink", "purple"), SHAPES, (5, 12), 10, (560, 420), False),
]


def count_shapes(index: int, rng: random.Random, image_path: str) -> Instance:
    colours, shapes, (lo, hi), distractors, size, only_shape = COUNT_CONFIGS[index]
    target = rng.choice(colours)
    target_shape = rng.choice(shapes) if only_shape else None
    n = rng.randint(lo, hi)
    items = [(target, target_shape or rng.choice(shapes)) for _ in range(n)]
    for _ in range(distractors):
        colour, shape = rng.choice(colours), rng.choice(shapes)
        if only_shape:
            if colour == target and shape == target_shape:
                shape = next(s for s in shapes if s != target_shape) if len(shapes) > 1 else shape
                if shape == target_shape:
                    colour = next(c for c in colours if c != target)
        elif colour == target:
            colour = next(c for c in colours if c != target)
        items.append((colour, shape))
    rng.shuffle(items)
    truth = sum(1 for c, s in items if c == target and (target_shape is None or s == target_shape))
    image = Image.new("RGB", size, BACKGROUND)
    draw = ImageDraw.Draw(image)
    boxes = _place(rng, size, [rng.randint(22, 44) for _ in items])
    for (colour, shape), box in zip(items, boxes, strict=True):
        _draw_shape(draw, shape, box, PALETTE[colour])
    what = f"{target} {target_shape}s" if target_shape else f"{target} shapes"
    instruction = (f"How many {what} are there in the image? Answer with a single number, "
                   f"e.g. done(answer=\"3\").")
    body = '''
found = components(colour_mask(img, rgb))
if shape is not None:
    found = [c for c in found if shape_of(c) == shape]
print(len(found))
'''
    return Instance(image, instruction, truth,
                    _solution(body, image_path, rgb=PALETTE[target], shape=target_shape))


# ---------------------------------------------------------------------------------------- bar-chart

BAR_CONFIGS = [
    # (ymax, bars, plot height, tick step)
    (10, 4, 240, 2),
    (20, 5, 260, 5),
    (50, 4, 280, 10),
    (100, 6, 300, 20),
    (10, 7, 300, 1),
    (40, 6, 250, 10),
    (100, 8, 320, 25),
    (200, 5, 300, 50),
]


def bar_chart(index: int, rng: random.Random, image_path: str) -> Instance:
    ymax, bars, plot_h, step = BAR_CONFIGS[index]
    colours = rng.sample(list(PALETTE), bars)
    values = [rng.randint(1, ymax) for _ in range(bars)]
    width, height = 560, plot_h + 90
    left, base = 60, plot_h + 40  # x of the y axis, y of the x axis
    top = base - plot_h
    image = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    small = font(12)
    for tick in range(0, ymax + 1, step):
        y = base - round(tick / ymax * plot_h)
        if tick:
            draw.line([(left + 1, y), (width - 20, y)], fill=GRID)
        draw.line([(left - 5, y), (left, y)], fill=(0, 0, 0))
        label = str(tick)
        draw.text((left - 8 - small.getlength(label), y - 7), label, font=small, fill=(0, 0, 0))
    slot = (width - 20 - left) // bars
    bar_w = int(slot * 0.6)
    for i, (colour, value) in enumerate(zip(colours, values, strict=True)):
        x0 = left + i * slot + (slot - bar_w) // 2
        y0 = base - round(value / ymax * plot_h)
        draw.rectangle([x0, y0, x0 + bar_w, base - 1], fill=PALETTE[colour])
        draw.text((x0 + bar_w / 2 - small.getlength(colour) / 2, base + 6), colour, font=small, fill=(0, 0, 0))
    draw.line([(left, top - 10), (left, base)], fill=(0, 0, 0))
    draw.line([(left, base), (width - 20, base)], fill=(0, 0, 0))
    target = rng.randrange(bars)
    instruction = (f"In the bar chart, what is the value of the {colours[target]} bar? The y axis runs from 0 "
                   f"to {ymax}. Answer with a number.")
    body = '''
black = colour_mask(img, (0, 0, 0))
base = int(np.argmax(black.sum(axis=1)))             # the x axis: the longest black row
grid_rows = np.nonzero(colour_mask(img, (205, 205, 205)).sum(axis=1) > img.shape[1] // 3)[0]
top = int(grid_rows.min())                            # the highest gridline is ymax
bar_rows = np.nonzero(colour_mask(img, rgb).sum(axis=1) > 3)[0]
value = (base - bar_rows.min()) / (base - top) * ymax
print(round(value, 2))
'''
    return Instance(image, instruction, values[target],
                    _solution(body, image_path, rgb=PALETTE[colours[target]], ymax=ymax),
                    tolerance=max(0.5, ymax / plot_h * 1.5))


# ---------------------------------------------------------------------------------------- table-sum

TABLE_CONFIGS = [
    # (rows, columns, max value, font size)
    (4, 2, 99, 20),
    (5, 3, 99, 18),
    (6, 3, 999, 18),
    (4, 4, 999, 20),
    (7, 2, 500, 16),
    (8, 3, 99, 16),
    (5, 4, 9999, 18),
    (6, 2, 2000, 22),
]
HEADERS = ("A", "B", "C", "D")


def table_sum(index: int, rng: random.Random, image_path: str) -> Instance:
    rows, cols, vmax, size = TABLE_CONFIGS[index]
    from PIL import ImageFont

    mono = ImageFont.truetype(MONO_FONT, size)
    cell_w, cell_h = size * 5, size * 2
    width, height = cols * cell_w + 41, (rows + 1) * cell_h + 41
    image = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.fontmode = "1"  # crisp glyphs: the same text always gives the same pixels
    values = [[rng.randint(0, vmax) for _ in range(cols)] for _ in range(rows)]
    x0, y0 = 20, 20
    for r in range(rows + 2):
        draw.line([(x0, y0 + r * cell_h), (x0 + cols * cell_w, y0 + r * cell_h)], fill=(0, 0, 0))
    for c in range(cols + 1):
        draw.line([(x0 + c * cell_w, y0), (x0 + c * cell_w, y0 + (rows + 1) * cell_h)], fill=(0, 0, 0))
    for c in range(cols):
        draw.text((x0 + c * cell_w + 8, y0 + size // 2), HEADERS[c], font=mono, fill=(90, 90, 90))
        for r in range(rows):
            draw.text((x0 + c * cell_w + 8, y0 + (r + 1) * cell_h + size // 2), str(values[r][c]), font=mono,
                      fill=(0, 0, 0))
    column = rng.randrange(cols)
    truth = sum(row[column] for row in values)
    instruction = (f"What is the sum of the numbers in column {HEADERS[column]} of the table "
                   f"(column {column + 1} from the left, below the header row)? Answer with a number.")
    body = '''
from PIL import ImageDraw, ImageFont
ink = np.all(img == 0, axis=-1)
rows_at = [y for y in range(ink.shape[0]) if ink[y].sum() > ink.shape[1] // 2]
cols_at = [x for x in range(ink.shape[1]) if ink[:, x].sum() > ink.shape[0] // 2]
def runs(idx):  # collapse neighbouring line pixels into one line
    out = []
    for i in idx:
        if not out or i > out[-1] + 1: out.append(i)
    return out
rows_at, cols_at = runs(rows_at), runs(cols_at)
def glyphs(cell):
    xs = np.nonzero(cell.any(axis=0))[0]
    groups, start = [], None
    for x in range(cell.shape[1] + 1):
        on = x < cell.shape[1] and cell[:, x].any()
        if on and start is None: start = x
        if not on and start is not None: groups.append(cell[:, start:x]); start = None
    out = []
    for g in groups:
        ys = np.nonzero(g.any(axis=1))[0]
        out.append(g[ys.min():ys.max() + 1])
    return out
def templates(size):
    f = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf", size)
    t = {}
    for d in "0123456789":
        im = Image.new("L", (size * 2, size * 2), 255); dr = ImageDraw.Draw(im); dr.fontmode = "1"
        dr.text((4, 4), d, font=f, fill=0)
        a = np.asarray(im) == 0
        ys, xs = np.nonzero(a.any(axis=1))[0], np.nonzero(a.any(axis=0))[0]
        t[d] = a[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
    return t
cells = []
left, right = cols_at[column] + 1, cols_at[column + 1]
for top, bottom in zip(rows_at[1:-1], rows_at[2:]):
    cells.append(glyphs(ink[top + 1:bottom, left:right]))
best = None
for size in range(8, 48):
    t = templates(size)
    hits = sum(any(g.shape == a.shape and (g == a).all() for a in t.values()) for c in cells for g in c)
    if best is None or hits > best[0]: best = (hits, t)
t = best[1]
def read(c):
    digits = ""
    for g in c:
        scores = {d: (abs(g.shape[0] - a.shape[0]) + abs(g.shape[1] - a.shape[1])) * 1000
                  + (0 if g.shape != a.shape else int((g != a).sum())) for d, a in t.items()}
        digits += min(scores, key=scores.get)
    return int(digits)
print(sum(read(c) for c in cells))
'''
    return Instance(image, instruction, truth, _solution(body, image_path, column=column))


# ------------------------------------------------------------------------------------ locate-marker

LOCATE_CONFIGS = [
    # (distractor count, target side range, size, target colour unique?)
    (4, (30, 40), (480, 360), True),
    (8, (24, 36), (520, 390), True),
    (12, (20, 30), (560, 420), True),
    (6, (30, 44), (560, 420), False),
    (10, (22, 34), (560, 420), False),
    (16, (18, 26), (560, 420), True),
    (14, (26, 36), (560, 420), False),
    (3, (14, 20), (480, 360), True),
]
LOCATE_TOLERANCE = 8.0


def locate_marker(index: int, rng: random.Random, image_path: str) -> Instance:
    distractors, (lo, hi), size, unique = LOCATE_CONFIGS[index]
    colours = list(PALETTE)
    target_colour, target_shape = rng.choice(colours), rng.choice(SHAPES)
    items = [(target_colour, target_shape)]
    for _ in range(distractors):
        colour, shape = rng.choice(colours), rng.choice(SHAPES)
        if colour == target_colour and (unique or shape == target_shape):
            colour = rng.choice([c for c in colours if c != target_colour])
        items.append((colour, shape))
    sides = [rng.randint(lo, hi)] + [rng.randint(18, 40) for _ in range(distractors)]
    boxes = _place(rng, size, sides)
    image = Image.new("RGB", size, BACKGROUND)
    draw = ImageDraw.Draw(image)
    for (colour, shape), box in zip(items, boxes, strict=True):
        _draw_shape(draw, shape, box, PALETTE[colour])
    x0, y0, x1, y1 = boxes[0]
    truth = ((x0 + x1) / 2, (y0 + y1) / 2)
    instruction = (f"Where is the {target_colour} {target_shape}? Answer with the pixel coordinates of its centre "
                   f"in the task image (origin top-left, x right, y down), e.g. done(answer=\"(120, 48)\"); "
                   f"within {LOCATE_TOLERANCE:g} px counts.")
    body = '''
found = [c for c in components(colour_mask(img, rgb)) if shape_of(c) == shape]
x, y = found[0]["centre"]
print(f"({x:.0f}, {y:.0f})")
'''
    return Instance(image, instruction, truth,
                    _solution(body, image_path, rgb=PALETTE[target_colour], shape=target_shape))


# ------------------------------------------------------------------------------------- largest-area

AREA_CONFIGS = [
    # (colours, shape, largest or smallest, size)
    (3, "square", "largest", (480, 360)),
    (4, "circle", "largest", (480, 360)),
    (5, "square", "smallest", (520, 390)),
    (4, "triangle", "largest", (520, 390)),
    (6, "circle", "smallest", (560, 420)),
    (5, None, "largest", (560, 420)),
    (6, "square", "largest", (560, 420)),
    (4, None, "smallest", (520, 390)),
]


def largest_area(index: int, rng: random.Random, image_path: str) -> Instance:
    import numpy as np

    n, shape, which, size = AREA_CONFIGS[index]
    colours = rng.sample(list(PALETTE), n)
    for _ in range(100):  # redraw until the answer is clear: the top two areas differ by 15 %
        sides = rng.sample(range(20, 110, 12), n)
        shapes = [shape or rng.choice(SHAPES) for _ in range(n)]
        boxes = _place(rng, size, sides, margin=10)
        image = Image.new("RGB", size, BACKGROUND)
        draw = ImageDraw.Draw(image)
        for colour, kind, box in zip(colours, shapes, boxes, strict=True):
            _draw_shape(draw, kind, box, PALETTE[colour])
        pixels = np.asarray(image)
        areas = {c: int(np.all(pixels == PALETTE[c], axis=-1).sum()) for c in colours}
        ranked = sorted(areas.values(), reverse=(which == "largest"))
        if (max(ranked[0], ranked[1]) / max(1, min(ranked[0], ranked[1]))) >= 1.15:
            break
    pick = max if which == "largest" else min
    truth = pick(areas, key=areas.get)
    noun = f"{shape}" if shape else "shape"
    instruction = (f"Each {noun} in the image has a different colour. Which colour is the {which} {noun} (by "
                   f"area)? Answer with the colour name, one of: {', '.join(colours)}.")
    body = '''
areas = {name: int(colour_mask(img, rgb).sum()) for name, rgb in palette.items()}
areas = {k: v for k, v in areas.items() if v > 0}
print((max if which == "largest" else min)(areas, key=areas.get))
'''
    return Instance(image, instruction, truth,
                    _solution(body, image_path, palette={c: PALETTE[c] for c in colours}, which=which))


FAMILIES = {
    "count-shapes": (count_shapes, len(COUNT_CONFIGS)),
    "bar-chart": (bar_chart, len(BAR_CONFIGS)),
    "table-sum": (table_sum, len(TABLE_CONFIGS)),
    "locate-marker": (locate_marker, len(LOCATE_CONFIGS)),
    "largest-area": (largest_area, len(AREA_CONFIGS)),
}
