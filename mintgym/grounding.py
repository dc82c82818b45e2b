"""The grounded ``a11y`` observation format every domain shares: elements with ids, roles, names, states and boxes.

A domain fills it from its own source (web: the page's DOM through CDP, see
``mintgym.environments.web.grounding``; desktop: the AT-SPI tree, see
``mintgym.environments.desktop.accessibility``). Boxes and points are in the pixels of the screenshot the
agent sees. The text form (the ``a11y`` side channel), one line per element, indented two spaces per kept
ancestor::

    [12] button "Submit" (80,105) [50,95][110,115] focused
    [13] textbox "Name" value="Ada" (80,140) [20,130][140,150]
    [14] checkbox "Remember me" (12,170) [5,163][19,177] unchecked disabled

``point`` is the centre of the part of the box inside the frame (where a click lands); ``offscreen``
elements keep their box and have no point. :func:`parse` reads the text back (an exact inverse of
:func:`render`), :func:`click_point` turns an id (a set-of-marks number) into the pixel to click, and
:func:`draw_marks` draws the set-of-marks overlay. Agents may import this module (it imports no domain).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

#: Roles a set-of-marks overlay draws a mark for (plus any element flagged ``clickable``).
INTERACTIVE_ROLES = frozenset({
    "button", "link", "checkbox", "radio", "switch", "textbox", "searchbox", "combobox", "listbox", "option",
    "slider", "spinbutton", "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "treeitem", "gridcell",
    "date", "time", "datetime-local", "month", "week", "color", "file",
})
#: Every flag word a line may carry, in the order they are written.
FLAGS = ("focused", "checked", "unchecked", "mixed", "selected", "expanded", "collapsed", "disabled", "readonly",
         "required", "clickable", "offscreen", "covered")
NAME_CHARS = 100


@dataclass(frozen=True)
class Element:
    """One element of a snapshot; ``box`` and ``point`` are in screenshot pixels."""

    id: int
    role: str
    name: str = ""
    value: str | None = None
    #: (x1, y1, x2, y2), x2/y2 exclusive.
    box: tuple[int, int, int, int] = (0, 0, 0, 0)
    #: Where a click lands on the visible part of the box (None when no part of it is on screen).
    point: tuple[int, int] | None = None
    flags: frozenset[str] = field(default_factory=frozenset)
    #: Kept ancestors above this element (indentation of the text form).
    depth: int = 0
    level: int | None = None

    @property
    def visible(self) -> bool:
        return "offscreen" not in self.flags

    @property
    def interactive(self) -> bool:
        return self.role in INTERACTIVE_ROLES or "clickable" in self.flags


@dataclass(frozen=True)
class Snapshot:
    """The elements of one frame and, when asked for, the pruned HTML of the page."""

    elements: tuple[Element, ...]
    #: Kept elements beyond the limit (not listed).
    omitted: int = 0
    html: str | None = None
    #: Why the page gave no snapshot (it was navigating, or did not answer); the listing is then empty.
    error: str | None = None

    def marks(self) -> list[Element]:
        """The elements a set-of-marks overlay numbers: interactive ones with a point on screen."""
        return [e for e in self.elements if e.interactive and e.point is not None]


# ---- the text form ------------------------------------------------------------------------------------------

def _quote(text: str) -> str:
    out = json.dumps(text, ensure_ascii=False)
    for ch in ("\u2028", "\u2029", "\x85"):  # line breaks for str.splitlines(): keep one element per line
        out = out.replace(ch, f"\\u{ord(ch):04x}")
    return out


def short_text(text: str) -> str:
    """``text`` cut to :data:`NAME_CHARS` characters (an ellipsis marks the cut)."""
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "\u2026"


def render_element(e: Element) -> str:
    parts = [f"{'  ' * e.depth}[{e.id}]", e.role if e.level is None else f"{e.role} level={e.level}"]
    if e.name:
        parts.append(_quote(e.name))
    if e.value is not None:
        parts.append(f"value={_quote(e.value)}")
    if e.point is not None:
        parts.append(f"({e.point[0]},{e.point[1]})")
    x1, y1, x2, y2 = e.box
    parts.append(f"[{x1},{y1}][{x2},{y2}]")
    parts.extend(f for f in FLAGS if f in e.flags)
    return " ".join(parts)


def render(snapshot: Snapshot) -> str:
    """The compact text of a snapshot (the ``a11y`` side channel)."""
    lines = [render_element(e) for e in snapshot.elements]
    if snapshot.error:
        lines.append(f"... no elements: {snapshot.error}")
    if snapshot.omitted:
        lines.append(f"... {snapshot.omitted} more elements not listed")
    return "\n".join(lines)


_STRING = r'"(?:[^"\\]|\\.)*"'
_LINE = re.compile(
    rf"^(?P<indent>(?:  )*)\[(?P<id>\d+)\] (?P<role>[a-z][a-z-]*)(?: level=(?P<level>\d+))?"
    rf"(?: (?P<name>{_STRING}))?(?: value=(?P<value>{_STRING}))?(?: \((?P<px>-?\d+),(?P<py>-?\d+)\))?"
    r" \[(?P<x1>-?\d+),(?P<y1>-?\d+)\]\[(?P<x2>-?\d+),(?P<y2>-?\d+)\](?P<flags>(?: [a-z]+)*)$"
)


def parse(text: str) -> list[Element]:
    """The elements of an ``a11y`` text, as :func:`render` wrote them; a line it cannot read is a ValueError."""
    elements = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip() or line.startswith("... "):
            continue
        m = _LINE.match(line)
        if m is None:
            raise ValueError(f"a11y line {number} is not an element line: {line[:80]!r}")
        flags = frozenset(m["flags"].split())
        unknown = flags - set(FLAGS)
        if unknown:
            raise ValueError(f"a11y line {number} has unknown flags {sorted(unknown)}")
        point = (int(m["px"]), int(m["py"])) if m["px"] is not None else None
        elements.append(Element(
            id=int(m["id"]), role=m["role"], name=json.loads(m["name"]) if m["name"] else "",
            value=json.loads(m["value"]) if m["value"] else None,
            box=(int(m["x1"]), int(m["y1"]), int(m["x2"]), int(m["y2"])), point=point, flags=flags,
            depth=len(m["indent"]) // 2, level=int(m["level"]) if m["level"] else None))
    return elements


def click_point(a11y: str | Snapshot | Iterable[Element], element_id: int) -> tuple[int, int]:
    """The screenshot pixel to ``click`` for element (or set-of-marks number) ``element_id``.

    Accepts the ``a11y`` text of an observation, a :class:`Snapshot` or parsed elements. The point is the
    centre of the part of the element's box that is on screen. Raises KeyError for an unknown id and
    ValueError for an element that is entirely off screen (scroll first).
    """
    if isinstance(a11y, str):
        elements: Iterable[Element] = parse(a11y)
    elif isinstance(a11y, Snapshot):
        elements = a11y.elements
    else:
        elements = a11y
    for element in elements:
        if element.id == element_id:
            if element.point is None:
                raise ValueError(f"element [{element_id}] is off screen (box {list(element.box)}); scroll to it first")
            return element.point
    raise KeyError(f"no element [{element_id}] in the a11y listing")


# ---- set-of-marks ---------------------------------------------------------------------------------------------

_COLORS = ((230, 25, 75), (0, 130, 200), (60, 180, 75), (145, 30, 180), (245, 130, 48), (0, 128, 128),
           (170, 110, 40), (128, 0, 0))


def draw_marks(shot: np.ndarray, snapshot: Snapshot) -> np.ndarray:
    """``shot`` with a numbered box drawn around every mark of ``snapshot`` (a new array).

    The number is the element's id in the ``a11y`` listing; it sits at the box's top-left corner (inside
    the frame), in a small filled label.
    """
    from PIL import Image, ImageDraw

    height, width = shot.shape[:2]
    image = Image.fromarray(shot)
    draw = ImageDraw.Draw(image)
    font = _font(9 if min(width, height) < 400 else 11)
    for element in snapshot.marks():
        color = _COLORS[element.id % len(_COLORS)]
        x1, y1, x2, y2 = element.box
        x1, y1 = max(0, x1), max(0, y1)
        x2, y2 = min(width, x2) - 1, min(height, y2) - 1
        if x2 < x1 or y2 < y1:
            continue
        draw.rectangle((x1, y1, x2, y2), outline=color, width=1)
        label = str(element.id)
        left, top, right, bottom = draw.textbbox((0, 0), label, font=font)
        lw, lh = right - left + 2, bottom - top + 2
        lx, ly = min(x1, width - lw), max(0, min(y1, height - lh))
        draw.rectangle((lx, ly, lx + lw - 1, ly + lh - 1), fill=color)
        draw.text((lx + 1 - left, ly + 1 - top), label, fill=(255, 255, 255), font=font)
    return np.asarray(image, dtype=np.uint8)


_FONTS: dict[int, object] = {}


def _font(size: int):
    from PIL import ImageFont

    if size not in _FONTS:
        _FONTS[size] = ImageFont.load_default(size=size)
    return _FONTS[size]
