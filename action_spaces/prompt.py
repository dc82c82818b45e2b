"""The prompt section of an action set, generated from the action models.

Signatures come from the pydantic fields (names, types, constraints, defaults), descriptions from each
model's ``summary``, and every example is an action built from the fields' ``examples`` and rendered by
:func:`~mintgym.action_spaces.parser.render_action`, so the prompt and the parser cannot drift apart.
"""

from __future__ import annotations

import types
import typing
from typing import Any

import annotated_types
from pydantic.fields import FieldInfo

from mintgym.action_spaces.actions import ActionModel
from mintgym.action_spaces.frames import Absolute, CoordinateFrame
from mintgym.action_spaces.keys import NAMED_KEYS
from mintgym.action_spaces.sets import ActionSet

#: The screen the examples are placed on when the caller does not give one.
EXAMPLE_SCREEN = (1280, 800)
#: Where the i-th point of an example sits, as fractions of the screen.
_EXAMPLE_POINTS = ((0.3, 0.4), (0.6, 0.7))


def describe_action_set(action_set: ActionSet, frame: CoordinateFrame | None = None,
                        screen_size: tuple[int, int] | None = None) -> str:
    """The prompt text: output rule, coordinate frame, every action with its fields and one example."""
    frame = Absolute() if frame is None else frame
    screen = screen_size or EXAMPLE_SCREEN
    from mintgym.action_spaces.parser import render_action

    examples = [render_action(example_action(t, screen), frame, screen) for t in action_set.types]
    lines = []
    if action_set.description:
        lines.append(action_set.description)
    lines.append(
        "Answer with exactly one action per turn, written as a function call with keyword arguments, "
        f"e.g. {examples[0]}. You may think first, but end your reply with the action: when a reply holds "
        "several actions, only the last one is executed."
    )
    if any(t.points for t in action_set.types):
        lines.append(frame.describe(screen_size))
    lines.append("")
    lines.append("Actions:")
    for cls, example in zip(action_set.types, examples, strict=True):
        lines.append(f"- {signature(cls, frame)}")
        lines.append(f"    {cls.summary}")
        lines.append(f"    Example: {example}")
    if any("keys" in t.model_fields for t in action_set.types):
        lines.append("")
        lines.append("Key names: a single character, or one of " + ", ".join(NAMED_KEYS) + ".")
    if action_set.notes:
        lines.append("")
        lines.extend(f"Note: {note}" for note in action_set.notes)
    return "\n".join(lines)


def signature(cls: type[ActionModel], frame: CoordinateFrame | None = None) -> str:
    """``click(x: int, y: int, button: "left" | "right" | "middle" = "left", clicks: int 1..3 = 1)``."""
    frame = Absolute() if frame is None else frame
    coordinates = {f for pair in cls.points for f in pair}
    params = []
    for name, info in cls.model_fields.items():
        if name == "type":
            continue
        if name in coordinates:
            text = f"{name}: {'float' if frame.float_coordinates else 'int'}"
        else:
            text = f"{name}: {type_text(info.annotation)}{_bounds(info)}"
        if not info.is_required():
            from mintgym.action_spaces.parser import render_value

            text += f" = {render_value(info.default)}"
        params.append(text)
    return f"{cls.model_fields['type'].default}({', '.join(params)})"


def type_text(annotation: Any) -> str:
    """A short, model-readable spelling of a field's type."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        from mintgym.action_spaces.parser import render_value

        return " | ".join(render_value(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join("None" if a is type(None) else type_text(a) for a in args)
    if origin in (tuple, list):
        inner = args[0] if args else Any
        return f"list[{type_text(inner)}]"
    if origin is typing.Annotated:
        return type_text(args[0])
    return getattr(annotation, "__name__", str(annotation))


def _bounds(info: FieldInfo) -> str:
    low = high = None
    for m in info.metadata:
        if isinstance(m, (annotated_types.Ge, annotated_types.Gt)):
            low = getattr(m, "ge", getattr(m, "gt", None))
            low_strict = isinstance(m, annotated_types.Gt)
        elif isinstance(m, (annotated_types.Le, annotated_types.Lt)):
            high = getattr(m, "le", getattr(m, "lt", None))
    if low is None or high is None:
        return ""
    return f" ({'more than ' if low_strict else ''}{low} to {high})"


def example_action(cls: type[ActionModel], screen_size: tuple[int, int] = EXAMPLE_SCREEN) -> ActionModel:
    """The example of ``cls``: points laid out on the screen, other values from the fields' examples."""
    width, height = screen_size
    values: dict[str, Any] = {}
    for i, (fx, fy) in enumerate(cls.points):
        px, py = _EXAMPLE_POINTS[i % len(_EXAMPLE_POINTS)]
        values[fx], values[fy] = int(px * width), int(py * height)
    for name, info in cls.model_fields.items():
        if name == "type" or name in values:
            continue
        if info.examples:
            values[name] = info.examples[0]
        elif info.is_required():
            raise TypeError(f"{cls.__name__}.{name} is required but declares no examples for the prompt")
    return cls(**values)
