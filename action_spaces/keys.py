"""The canonical key vocabulary shared by every domain.

Actions carry canonical names (lower case: ``ctrl``, ``enter``, ``pagedown``, ``f5``, or one printable
character); each environment maps them to its own backend (Playwright key names, X keysyms, Android
keycodes). Common aliases are accepted and normalized.
"""

from __future__ import annotations

from mintgym.action_spaces.errors import InvalidAction

MODIFIERS = ("ctrl", "alt", "shift", "meta")

NAMED_KEYS = MODIFIERS + (
    "enter", "tab", "escape", "backspace", "delete", "insert", "space",
    "up", "down", "left", "right", "home", "end", "pageup", "pagedown",
    "capslock", "printscreen", "menu", "pause",
    "back", "volumeup", "volumedown", "power", "appswitch",
) + tuple(f"f{i}" for i in range(1, 13))

ALIASES = {
    "control": "ctrl", "ctl": "ctrl", "cmd": "meta", "command": "meta", "super": "meta", "win": "meta",
    "windows": "meta", "option": "alt", "return": "enter", "esc": "escape", "del": "delete",
    "ins": "insert", "bksp": "backspace", "arrowup": "up", "arrowdown": "down", "arrowleft": "left",
    "arrowright": "right", "pgup": "pageup", "pgdn": "pagedown", "page_up": "pageup",
    "page_down": "pagedown", "spacebar": "space", "prtsc": "printscreen", "recent": "appswitch",
    # pyautogui, xdotool and Playwright spellings
    "ctrlleft": "ctrl", "ctrlright": "ctrl", "control_l": "ctrl", "control_r": "ctrl", "ctrl_l": "ctrl",
    "ctrl_r": "ctrl", "shiftleft": "shift", "shiftright": "shift", "shift_l": "shift", "shift_r": "shift",
    "altleft": "alt", "altright": "alt", "alt_l": "alt", "alt_r": "alt", "optionleft": "alt",
    "optionright": "alt", "winleft": "meta", "winright": "meta", "super_l": "meta", "super_r": "meta",
    "meta_l": "meta", "meta_r": "meta", "cmdleft": "meta", "cmdright": "meta", "prior": "pageup",
    "next": "pagedown", "prtscr": "printscreen", "prntscrn": "printscreen", "printscrn": "printscreen",
    "print": "printscreen", "apps": "menu", "contextmenu": "menu", "caps_lock": "capslock", "kp_enter": "enter",
    "pause": "pause",
}


def normalize_key(name: str) -> str:
    """Return the canonical name of a key, or raise InvalidAction naming the unknown key."""
    if not isinstance(name, str) or name == "":
        raise InvalidAction(f"key name must be a non-empty string, got {name!r}")
    if name == " ":
        return "space"
    if len(name) == 1:
        return name.lower() if name.isalpha() else name
    lowered = name.strip().lower()
    lowered = ALIASES.get(lowered, lowered)
    if lowered in NAMED_KEYS:
        return lowered
    raise InvalidAction(
        f"unknown key {name!r}: use one character or one of {', '.join(NAMED_KEYS)}"
    )
