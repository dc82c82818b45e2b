"""A small stand-in for ``pyautogui`` inside desktop sessions, acting through XTEST on $DISPLAY.

OSWorld's config and postconfig scripts call ``pyautogui.click/hotkey/write/press``; this module gives
those calls the same meaning here. Only that subset exists; anything else raises AttributeError.
"""

from __future__ import annotations

import importlib.util as _ilu
import time
from pathlib import Path as _Path

from Xlib import display as _xdisplay

# Runs under the system interpreter as the session user: load only the XTEST module, by path.
_spec = _ilu.spec_from_file_location("_mintgym_xinput", _Path(__file__).resolve().parent.parent / "xinput.py")
_xinput = _ilu.module_from_spec(_spec)
_spec.loader.exec_module(_xinput)
XInput = _xinput.XInput
_ALIASES = {"control": "ctrl", "return": "enter", "esc": "escape", "win": "meta", "super": "meta",
            "command": "meta", "cmd": "meta", "option": "alt", "del": "delete", "pgup": "pageup",
            "pgdn": "pagedown", "arrowup": "up", "arrowdown": "down", "arrowleft": "left", "arrowright": "right"}


def normalize_key(name: str) -> str:
    if len(name) == 1:
        return name
    low = name.lower()
    return _ALIASES.get(low, low)

_d = _xdisplay.Display()
_in = XInput(_d)
PAUSE = 0.05
FAILSAFE = False


def _keys(args) -> list[str]:
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return [normalize_key(str(k)) for k in args]


def _active() -> int:
    prop = _d.screen().root.get_full_property(_d.intern_atom("_NET_ACTIVE_WINDOW"), 0)
    return int(prop.value[0]) if prop and len(prop.value) else 0


def size() -> tuple[int, int]:
    screen = _d.screen()
    return screen.width_in_pixels, screen.height_in_pixels


def position() -> tuple[int, int]:
    return _in.pointer()


def moveTo(x=None, y=None, duration=0.0, *args, **kwargs) -> None:
    px, py = _in.pointer()
    _in.move(px if x is None else int(x), py if y is None else int(y))
    time.sleep(PAUSE)


def click(x=None, y=None, clicks=1, interval=0.0, button="left", *args, **kwargs) -> None:
    px, py = _in.pointer()
    _in.click(px if x is None else int(x), py if y is None else int(y), button, int(clicks))
    time.sleep(PAUSE)


def doubleClick(x=None, y=None, *args, **kwargs) -> None:
    click(x, y, clicks=2)


def rightClick(x=None, y=None, *args, **kwargs) -> None:
    click(x, y, button="right")


def hotkey(*args, **kwargs) -> None:
    """Press a combo; when it opens or switches a window, wait (up to 3 s) until that window is active."""
    before = _active()
    _in.key_combo(_keys(args))
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        if _active() != before:
            time.sleep(0.3)  # the new window maps before it takes input
            break
        time.sleep(0.05)


def press(keys, presses=1, interval=0.0, *args, **kwargs) -> None:
    for _ in range(int(presses)):
        for key in ([keys] if isinstance(keys, str) else keys):
            _in.key_combo([normalize_key(key)])
        time.sleep(interval or PAUSE)


def write(message, interval=0.0, *args, **kwargs) -> None:
    if isinstance(message, (list, tuple)):
        for key in message:
            press(key)
        return
    _in.type_text(str(message))
    time.sleep(PAUSE)


typewrite = write


def scroll(clicks, x=None, y=None, *args, **kwargs) -> None:
    px, py = _in.pointer()
    _in.scroll(px if x is None else int(x), py if y is None else int(y), dy=-int(clicks) * 50)
