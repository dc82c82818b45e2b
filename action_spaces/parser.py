"""THE parser: model text -> one validated action, and its inverse, :func:`render_action`.

Every agent calls :func:`parse_action` (or ``ActionSet.parse``); nobody writes a regex for actions.

Accepted forms (see :mod:`~mintgym.action_spaces.forms`): the canonical call ``click(x=120, y=48)``
(keyword or positional arguments), JSON objects, and pyautogui calls. The action may sit inside
chatter: code fences, ``Action: ...`` lines, a ``Thought: ... Action: ...`` layout. When the text holds
several candidate actions, **the last complete one is taken** (a model that thinks aloud ends with
its decision); earlier pyautogui statements only tell where the pointer is for ``dragTo``.

Coordinates go through the declared :class:`~mintgym.action_spaces.frames.CoordinateFrame` (default
:class:`~mintgym.action_spaces.frames.Absolute`) and are then checked against ``screen_size`` by
:meth:`ActionSet.validate`. Every failure raises :class:`InvalidAction` with a message that names it.
"""

from __future__ import annotations

import re
from typing import Any

from mintgym.action_spaces.actions import ACTION_TYPES, ActionModel
from mintgym.action_spaces.errors import InvalidAction
from mintgym.action_spaces.forms import WORDS, from_call, from_object, known_call_names
from mintgym.action_spaces.frames import Absolute, CoordinateFrame, check_size
from mintgym.action_spaces.sets import ActionSet
from mintgym.action_spaces.syntax import Obj, extract, read_call, shorten

#: Longer model outputs are refused before any parsing.
MAX_TEXT_CHARS = 20_000

_KNOWN = tuple(known_call_names())
_ACTION_KEYS = {"type", "action", "name"}
_ABSOLUTE = Absolute()
_FENCE = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n?(.*?)```", re.DOTALL)


def parse_action(text: str, action_set: ActionSet, frame: CoordinateFrame | None = None,
                 screen_size: tuple[int, int] | None = None) -> ActionModel:
    """Parse model output into one action of ``action_set``, in screen pixels of ``screen_size``.

    ``frame`` says how the model writes coordinates (default: absolute screen pixels); a frame other
    than Absolute needs ``screen_size``. Raises InvalidAction naming what is wrong.
    """
    frame = _ABSOLUTE if frame is None else frame
    if screen_size is not None:
        screen_size = check_size(screen_size)
    elif frame.needs_screen_size:
        raise ValueError(f"parse_action with the {frame.name} coordinate frame needs screen_size")
    if not isinstance(text, str):
        raise InvalidAction(f"model output must be text, got {type(text).__name__}")
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidAction(f"model output is too long ({len(text)} characters, at most {MAX_TEXT_CHARS})")
    if not text.strip():
        raise InvalidAction(f"empty model output; answer with one action, e.g. {_example(action_set)}")

    found = extract(text, _KNOWN)
    if not found.candidates:
        word = _bare_word(text)
        if word is not None:
            fields = dict(word)
            return _finish(fields, action_set, frame, screen_size)
        reason = f" ({found.rejects[-1]})" if found.rejects else ""
        raise InvalidAction(
            f"no action found in the model output{reason}; answer with one action as a function call, e.g. "
            f"{_example(action_set)}; valid actions: {', '.join(action_set.type_names)}"
        )
    candidates = found.candidates
    known = [c for c in candidates
             if (isinstance(c, Obj) and _ACTION_KEYS & c.value.keys())
             or (isinstance(c, str) and _is_known(read_name(c)))]
    if known:  # unknown names at line starts and objects with no action key are chatter next to an action
        candidates = known
    last = candidates[-1]
    previous = candidates[:-1]
    if isinstance(last, Obj):
        fields = from_object(last)
    else:
        call = read_call(last)
        fields = from_call(call, previous) if _is_known(call.name) else _unknown(call.name, action_set)
    return _finish(fields, action_set, frame, screen_size)


def _finish(fields: dict[str, Any], action_set: ActionSet, frame: CoordinateFrame,
            screen_size: tuple[int, int] | None) -> ActionModel:
    kind = fields.get("type")
    if not isinstance(kind, str) or kind not in action_set:
        _unknown(kind, action_set)
    converted = frame.convert_fields(fields, ACTION_TYPES[kind].points, screen_size)
    return action_set.validate(converted, screen_size)


def _is_known(name: str) -> bool:
    lowered = name.lower()
    return lowered in _KNOWN_LOWER or lowered.startswith("pyautogui.")


def read_name(source: str) -> str:
    """The function name a call candidate starts with."""
    return source[: source.index("(")].strip()


_KNOWN_LOWER = {n.lower() for n in _KNOWN}


def _unknown(kind: Any, action_set: ActionSet) -> dict:
    valid = ", ".join(action_set.type_names)
    if isinstance(kind, str) and kind in ACTION_TYPES:
        raise InvalidAction(f"action {kind!r} is not in the {action_set.name!r} action set; valid actions: {valid}")
    raise InvalidAction(f"unknown action {shorten(str(kind), 40)!r}; valid actions in {action_set.name!r}: {valid}")


def _bare_word(text: str) -> dict | None:
    """OSWorld-style whole answers: DONE, FAIL, WAIT (alone, or alone in the last code block)."""
    blocks = _FENCE.findall(text)
    body = (blocks[-1] if blocks else text).strip().strip("`").strip()
    body = re.sub(r"^(?:action\s*:\s*)", "", body, flags=re.IGNORECASE).strip()
    return WORDS.get(body.lower())


def _example(action_set: ActionSet) -> str:
    from mintgym.action_spaces.prompt import example_action

    return render_action(example_action(action_set.types[0], (1280, 800)))


# -- rendering ------------------------------------------------------------------------------------

def render_action(action: ActionModel | dict, frame: CoordinateFrame | None = None,
                  screen_size: tuple[int, int] | None = None) -> str:
    """The canonical call text of an action (keyword form), coordinates in ``frame``.

    Fields at their default are left out. ``parse_action(render_action(a, f, s), set, f, s)`` gives
    ``a`` back (exactly for Absolute, within the frame's precision otherwise).
    """
    if not isinstance(action, ActionModel):
        from mintgym.action_spaces.sets import build_action

        action = build_action(action)
    frame = _ABSOLUTE if frame is None else frame
    if screen_size is None and frame.needs_screen_size:
        raise ValueError(f"render_action with the {frame.name} coordinate frame needs screen_size")
    data = action.to_json() if isinstance(frame, Absolute) else frame.action_to_model(action, screen_size)
    parts = []
    for name, info in type(action).model_fields.items():
        if name == "type":
            continue
        value = data[name]
        if not info.is_required() and getattr(action, name) == info.default:
            continue
        parts.append(f"{name}={render_value(value)}")
    return f"{action.type}({', '.join(parts)})"


def render_value(value: Any) -> str:
    """A literal the parser reads back to the same value."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    raise TypeError(f"cannot render {type(value).__name__} as a literal")


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _quote(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF or ch in "\u2028\u2029\x85":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
