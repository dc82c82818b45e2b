"""An observation's text channels as prompt text: the accessibility listing, the page's HTML, the text output.

The ``a11y`` listing (:mod:`mintgym.grounding`) gives each element's click point and box in screenshot
pixels; :func:`a11y_in_frame` rewrites them in the coordinate frame the model answers in, so a model that
writes ``click(x=..., y=...)`` in ``normalized_1000`` can copy an element's point as it is listed. Lines that
are not element lines (another domain's listing, the "... more elements" notes) are kept as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from mintgym import grounding
from mintgym.action_spaces.frames import Absolute, CoordinateFrame
from mintgym.types import Observation

#: What the system prompt says about each channel the agent is given.
ABOUT_CHANNELS = {
    "a11y": "Each turn lists the screen's elements, one per line: [id] role \"name\" (x,y) [x1,y1][x2,y2] and "
            "states; (x,y) is where a click on the element lands and the boxes are in your coordinates.",
    "som": "Numbered boxes drawn on the screenshot mark the interactive elements; each number is the [id] of "
           "an element in the listing.",
    "dom": "Each turn gives the page's HTML (pruned; elements carry their listing id as mg-id).",
}
NO_PIXELS = "You are not shown the screen: act from the text you are given."


def channel_intro(observe: Iterable[str]) -> str:
    """The system prompt's lines about the channels ``observe`` gives (empty for the screenshot alone)."""
    observe = tuple(observe)
    lines = [ABOUT_CHANNELS[name] for name in ("a11y", "som", "dom") if name in observe
             or (name == "a11y" and "som" in observe)]
    if "screenshot" not in observe and "som" not in observe:
        lines.append(NO_PIXELS)
    return " ".join(lines)


def a11y_in_frame(text: str, frame: CoordinateFrame, screen_size: tuple[int, int]) -> str:
    """The ``a11y`` listing with its points and boxes in ``frame``'s coordinates (as is for ``absolute``)."""
    if isinstance(frame, Absolute):
        return text

    def convert(x: int, y: int) -> tuple:  # the frame clamps a point off the screen to its edge
        a, b = frame.from_screen(x, y, screen_size)
        return (round(a, 4), round(b, 4)) if frame.float_coordinates else (int(a), int(b))

    lines = []
    for line in text.split("\n"):
        try:
            [element] = grounding.parse(line) if line.strip() and not line.startswith("... ") else [None]
        except ValueError:
            element = None
        if element is None:
            lines.append(line)
            continue
        x1, y1, x2, y2 = element.box
        point = convert(*element.point) if element.point is not None else None
        box = (*convert(x1, y1), *convert(x2 - 1, y2 - 1))
        lines.append(grounding.render_element(dataclasses.replace(element, point=point, box=box)))
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters cut)"


def channel_text(observation: Observation, frame: CoordinateFrame, limit: int = 8000) -> list[str]:
    """The prompt paragraphs for the observation's ``a11y`` and ``dom`` channels (each cut to ``limit``
    characters), the listing in ``frame``'s coordinates."""
    parts = []
    if observation.a11y is not None:
        listing = a11y_in_frame(observation.a11y, frame, observation.screen_size) or "(no elements)"
        parts.append(f"Elements on screen:\n{_cut(listing, limit)}")
    if observation.dom is not None:
        parts.append(f"Page HTML:\n{_cut(observation.dom, limit)}")
    return parts
