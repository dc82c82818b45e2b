"""Canonical key names (``mintgym.action_spaces.keys``) mapped to Playwright's key names."""

from __future__ import annotations

from mintgym.action_spaces import InvalidAction
from mintgym.action_spaces.keys import MODIFIERS

_PLAYWRIGHT_NAMES = {
    "ctrl": "Control", "alt": "Alt", "shift": "Shift", "meta": "Meta",
    "enter": "Enter", "tab": "Tab", "escape": "Escape", "backspace": "Backspace", "delete": "Delete",
    "insert": "Insert", "space": "Space", "up": "ArrowUp", "down": "ArrowDown", "left": "ArrowLeft",
    "right": "ArrowRight", "home": "Home", "end": "End", "pageup": "PageUp", "pagedown": "PageDown",
    "capslock": "CapsLock", "printscreen": "PrintScreen", "menu": "ContextMenu",
    **{f"f{i}": f"F{i}" for i in range(1, 13)},
}
#: Canonical names that exist only on phones (no browser key to press).
_NOT_WEB = ("back", "volumeup", "volumedown", "power", "appswitch")


def playwright_key(name: str) -> str:
    """The Playwright name of one canonical key (``"pagedown"`` -> ``"PageDown"``, ``"a"`` -> ``"a"``)."""
    if len(name) == 1:
        return name
    if name in _PLAYWRIGHT_NAMES:
        return _PLAYWRIGHT_NAMES[name]
    if name in _NOT_WEB:
        raise InvalidAction(f"key {name!r} is a phone button; a browser has no such key")
    raise InvalidAction(f"unknown key {name!r}")


def split_combo(keys: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """Split a combo into (modifiers held down, keys pressed while they are held), in Playwright names."""
    held = [playwright_key(k) for k in keys if k in MODIFIERS]
    pressed = [playwright_key(k) for k in keys if k not in MODIFIERS]
    if not pressed:  # a lone modifier (``shift``) is pressed like any other key
        return held[:-1], held[-1:]
    return held, pressed
