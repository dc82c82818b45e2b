"""The accepted spellings of an action, each turned into the canonical ``(type, fields)`` form.

* canonical calls: ``click(x=120, y=48)``, positional in field order ``click(120, 48)``, and a few
  aliases (``double_click``, ``right_click``, ``hover``...);
* JSON: ``{"type": "click", ...}``, ``{"action": "click", ...}``, tool calls
  ``{"name": "click", "arguments": {...}}`` (arguments may be a JSON string), OpenAI's
  ``{"type": "function", "function": {...}}``, and ``"coordinate": [x, y]`` for ``x``/``y``;
* pyautogui: ``pyautogui.click/doubleClick/tripleClick/rightClick/middleClick/moveTo/dragTo/scroll/
  hscroll/write/typewrite/press/hotkey/sleep`` (the ``pyautogui.`` prefix may be left off for the
  camel-case names). ``dragTo`` starts where an earlier statement of the same text left the pointer.

Coordinates stay in the model's frame here; the parser converts them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mintgym.action_spaces.actions import ACTION_TYPES, Key
from mintgym.action_spaces.errors import InvalidAction
from mintgym.action_spaces.syntax import Call, Obj, shorten

#: Pixels of one pyautogui scroll click (a browser's wheel notch).
PYAUTOGUI_SCROLL_PIXELS = 100

Fields = dict[str, Any]

#: Alias name -> (canonical type, preset fields).
ALIASES: dict[str, tuple[str, Fields]] = {
    "left_click": ("click", {}),
    "double_click": ("click", {"clicks": 2}),
    "triple_click": ("click", {"clicks": 3}),
    "right_click": ("click", {"button": "right"}),
    "middle_click": ("click", {"button": "middle"}),
    "hover": ("move", {}),
    "mouse_move": ("move", {}),
    "move_to": ("move", {}),
}

PYAUTOGUI_NAMES = ("click", "doubleclick", "tripleclick", "rightclick", "middleclick", "moveto", "dragto",
                   "scroll", "hscroll", "write", "typewrite", "press", "hotkey", "sleep", "mousedown", "mouseup",
                   "keydown", "keyup", "moverel", "dragrel", "move", "drag")
#: pyautogui names also accepted without the prefix (no clash with canonical names).
BARE_PYAUTOGUI = ("doubleclick", "tripleclick", "rightclick", "middleclick", "moveto", "dragto", "hscroll",
                  "typewrite", "write", "press", "hotkey")

#: Bare words some benchmarks (OSWorld) use as whole answers.
WORDS: dict[str, Fields] = {"done": {"type": "done"}, "fail": {"type": "done", "success": False},
                            "wait": {"type": "wait"}}


def known_call_names() -> list[str]:
    """Every name the extractor treats as the start of an action call."""
    names = set(ACTION_TYPES) | set(ALIASES) | set(BARE_PYAUTOGUI)
    names |= {f"pyautogui.{n}" for n in PYAUTOGUI_NAMES}
    return sorted(names)


def positional_fields(kind: str) -> tuple[str, ...]:
    """The fields positional arguments fill, in the model's field order."""
    return tuple(f for f in ACTION_TYPES[kind].model_fields if f != "type")


def from_call(call: Call, previous: list[Call | Obj | str]) -> Fields:
    """The canonical fields (with ``type``) of a call."""
    name = call.name.lower()
    if name.startswith("pyautogui."):
        return _from_pyautogui(call, name.removeprefix("pyautogui."), previous)
    if name in BARE_PYAUTOGUI:
        return _from_pyautogui(call, name, previous)
    if name in ALIASES:
        kind, preset = ALIASES[name]
    elif name in ACTION_TYPES:
        kind, preset = name, {}
    else:
        raise InvalidAction(f"unknown action {call.name!r}")
    return {"type": kind, **preset, **bind(kind, call)}


def bind(kind: str, call: Call) -> Fields:
    """Keyword and positional arguments bound to the fields of ``kind``."""
    order = positional_fields(kind)
    args = list(call.args)
    if ACTION_TYPES[kind] is Key and len(args) > 1 and all(isinstance(a, str) for a in args):
        args = [args]  # key("ctrl", "c") is one combination
    if len(args) > len(order):
        raise InvalidAction(
            f"{kind} takes at most {len(order)} positional arguments ({', '.join(order) or 'none'}), got {len(args)}"
        )
    fields: Fields = dict(zip(order, args, strict=False))  # trailing positional fields may be left out
    for key, value in call.kwargs.items():
        if key in fields:
            raise InvalidAction(f"{kind}: field {key!r} given both by position and by name")
        if key == "type":
            raise InvalidAction(f"{kind}: 'type' is not a field of {kind}")
        fields[key] = value
    return fields


def from_object(obj: Obj | dict, depth: int = 0) -> Fields:
    """The canonical fields of a JSON action object in any accepted layout."""
    value = dict(obj.value if isinstance(obj, Obj) else obj)
    if depth > 4:
        raise InvalidAction("the action object is nested too deeply")
    if value.get("type") == "function" and isinstance(value.get("function"), dict):
        return from_object(value["function"], depth + 1)
    if isinstance(value.get("type"), str):
        kind = value.pop("type")
    elif isinstance(value.get("action"), dict) and len(value) == 1:
        return from_object(value["action"], depth + 1)
    elif isinstance(value.get("action"), str):
        kind = value.pop("action")
    elif isinstance(value.get("name"), str):
        kind = value.pop("name")
        args = value.pop("arguments", value.pop("parameters", value.pop("args", {})))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except (ValueError, RecursionError):
                raise InvalidAction(f"{kind}: 'arguments' is not valid JSON: {shorten(args)!r}") from None
        if not isinstance(args, dict):
            raise InvalidAction(f"{kind}: 'arguments' must be an object, got {type(args).__name__}")
        if value:
            raise InvalidAction(f"{kind}: unexpected keys {sorted(value)} next to 'name' and 'arguments'")
        if kind.lower() not in ACTION_TYPES and kind.lower() not in ALIASES and isinstance(args.get("action"), str):
            return from_object(args, depth + 1)  # {"name": "computer", "arguments": {"action": "click", ...}}
        value = dict(args)
    else:
        raise InvalidAction("a JSON action needs a 'type' (or 'action', or 'name' with 'arguments') key")
    lowered = kind.lower()
    if lowered in ALIASES:
        lowered, preset = ALIASES[lowered]
        value = {**preset, **value}
    coordinate = value.pop("coordinate", None)
    if coordinate is not None:
        if not (isinstance(coordinate, list) and len(coordinate) == 2):
            raise InvalidAction(f"{kind}: 'coordinate' must be [x, y], got {shorten(repr(coordinate))}")
        for f in ("x", "y"):
            if f in value:
                raise InvalidAction(f"{kind}: both 'coordinate' and {f!r} given")
        value["x"], value["y"] = coordinate
    return {"type": lowered if lowered in ACTION_TYPES else kind, **value}


# -- pyautogui ------------------------------------------------------------------------------------

def _point(call: Call, label: str) -> tuple[Any, Any] | None:
    """(x, y) from pyautogui's positional/keyword arguments (a tuple as the first argument too)."""
    args = list(call.args)
    if args and isinstance(args[0], list):
        if len(args[0]) != 2:
            raise InvalidAction(f"{label}: a point must be (x, y)")
        args = list(args[0]) + args[1:]
    x = call.kwargs.get("x", args[0] if len(args) > 0 else None)
    y = call.kwargs.get("y", args[1] if len(args) > 1 else None)
    if x is None and y is None:
        return None
    if x is None or y is None:
        raise InvalidAction(f"{label}: give both x and y")
    return x, y


def _pointer_before(previous: list[Call | Obj | str]) -> tuple[Any, Any] | None:
    """Where earlier pyautogui statements of the same text left the pointer."""
    from mintgym.action_spaces.syntax import read_call

    for item in reversed(previous):
        if not isinstance(item, str):
            continue
        try:
            call = read_call(item)
        except InvalidAction:
            continue
        name = call.name.lower().removeprefix("pyautogui.")
        if name in ("moveto", "click", "doubleclick", "tripleclick", "rightclick", "middleclick", "mousedown",
                    "dragto", "move", "tap"):
            point = _point(call, call.name)
            if point is not None:
                return point
    return None


def _button(call: Call, label: str, default: str = "left") -> str:
    button = call.kwargs.get("button", default)
    mapping = {"primary": "left", "secondary": "right"}
    return mapping.get(button, button) if isinstance(button, str) else button


def _from_pyautogui(call: Call, name: str, previous: list[Call | Obj | str]) -> Fields:
    label = f"pyautogui.{call.name.split('.')[-1]}"
    handler = _PYAUTOGUI.get(name)
    if handler is None:
        raise InvalidAction(
            f"{label} is not supported; use one of pyautogui.click, doubleClick, rightClick, moveTo, "
            "dragTo (after moveTo), scroll, write, press, hotkey"
        )
    return handler(call, label, previous)


def _pa_click(clicks: int | None, button: str | None) -> Callable[[Call, str, list], Fields]:
    def handle(call: Call, label: str, previous: list) -> Fields:
        point = _point(call, label) or _pointer_before(previous)
        if point is None:
            raise InvalidAction(f"{label}: give the position, e.g. {label}(x=120, y=48)")
        n = clicks if clicks is not None else call.kwargs.get("clicks", call.args[2] if len(call.args) > 2 else 1)
        fields: Fields = {"type": "click", "x": point[0], "y": point[1], "clicks": n}
        fields["button"] = button or _button(call, label)
        return fields
    return handle


def _pa_move(call: Call, label: str, previous: list) -> Fields:
    point = _point(call, label)
    if point is None:
        raise InvalidAction(f"{label}: give x and y")
    return {"type": "move", "x": point[0], "y": point[1]}


def _pa_drag(call: Call, label: str, previous: list) -> Fields:
    end = _point(call, label)
    if end is None:
        raise InvalidAction(f"{label}: give the end point x and y")
    start = _pointer_before(previous)
    if start is None:
        raise InvalidAction(
            f"{label} needs the start position: write pyautogui.moveTo(x1, y1); pyautogui.dragTo(x2, y2), "
            "or drag(x1=..., y1=..., x2=..., y2=...)"
        )
    return {"type": "drag", "x1": start[0], "y1": start[1], "x2": end[0], "y2": end[1]}


def _pa_scroll(horizontal: bool) -> Callable[[Call, str, list], Fields]:
    def handle(call: Call, label: str, previous: list) -> Fields:
        clicks = call.kwargs.get("clicks", call.args[0] if call.args else None)
        if isinstance(clicks, bool) or not isinstance(clicks, (int, float)):
            raise InvalidAction(f"{label}: field 'clicks' must be a number, got {type(clicks).__name__}")
        rest = Call(call.name, call.args[1:], {k: v for k, v in call.kwargs.items() if k != "clicks"}, call.source)
        point = _point(rest, label) or _pointer_before(previous)
        if point is None:
            raise InvalidAction(f"{label}: give where to scroll, e.g. {label}({clicks}, x=640, y=400)")
        pixels = round(clicks * PYAUTOGUI_SCROLL_PIXELS)
        # pyautogui: positive clicks scroll up (and right for hscroll); here dy > 0 scrolls down.
        delta = {"dx": pixels} if horizontal else {"dy": -pixels}
        return {"type": "scroll", "x": point[0], "y": point[1], **delta}
    return handle


def _pa_write(call: Call, label: str, previous: list) -> Fields:
    text = call.kwargs.get("message", call.args[0] if call.args else None)
    if isinstance(text, list) and all(isinstance(t, str) and len(t) == 1 for t in text):
        text = "".join(text)
    if not isinstance(text, str):
        raise InvalidAction(f"{label}: field 'message' must be a string, got {type(text).__name__}")
    return {"type": "type", "text": text}


def _pa_press(call: Call, label: str, previous: list) -> Fields:
    keys = call.kwargs.get("keys", call.args[0] if call.args else None)
    if isinstance(keys, list):
        if len(keys) != 1:
            raise InvalidAction(f"{label} with several keys presses them one after another; use one key per "
                                "action, or hotkey for a combination")
        keys = keys[0]
    presses = call.kwargs.get("presses", 1)
    if presses != 1:
        raise InvalidAction(f"{label}: presses={presses!r} is not supported; press once per action")
    if not isinstance(keys, str):
        raise InvalidAction(f"{label}: field 'keys' must be a string, got {type(keys).__name__}")
    return {"type": "key", "keys": [keys]}


def _pa_hotkey(call: Call, label: str, previous: list) -> Fields:
    keys: list[Any] = []
    for a in call.args:
        keys.extend(a if isinstance(a, list) else [a])
    if not keys:
        raise InvalidAction(f"{label}: give the keys, e.g. {label}('ctrl', 'c')")
    return {"type": "key", "keys": keys}


def _pa_sleep(call: Call, label: str, previous: list) -> Fields:
    seconds = call.kwargs.get("seconds", call.args[0] if call.args else 1.0)
    return {"type": "wait", "seconds": seconds}


_PYAUTOGUI: dict[str, Callable[[Call, str, list], Fields]] = {
    "click": _pa_click(None, None),
    "doubleclick": _pa_click(2, None),
    "tripleclick": _pa_click(3, None),
    "rightclick": _pa_click(None, "right"),
    "middleclick": _pa_click(None, "middle"),
    "moveto": _pa_move,
    "dragto": _pa_drag,
    "scroll": _pa_scroll(False),
    "hscroll": _pa_scroll(True),
    "write": _pa_write,
    "typewrite": _pa_write,
    "press": _pa_press,
    "hotkey": _pa_hotkey,
    "sleep": _pa_sleep,
}
