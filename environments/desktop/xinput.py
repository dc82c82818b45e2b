"""Keyboard and pointer input through the XTEST extension (python-xlib), one X connection per session.

Canonical key names (``mintgym.action_spaces.keys``) map to X keysyms; any Unicode character is typed
by its keysym, and a character with no keycode in the current map is typed through a spare (unused)
keycode remapped to it. Those mappings stay (least recently used first to go): X clients look a changed
mapping up lazily, so taking it away right after the key press could make a busy app read the key as
nothing.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterable

from Xlib import XK, X
from Xlib.display import Display
from Xlib.ext import xtest

KEYSYM_NAMES = {
    "ctrl": "Control_L", "alt": "Alt_L", "shift": "Shift_L", "meta": "Super_L",
    "enter": "Return", "tab": "Tab", "escape": "Escape", "backspace": "BackSpace", "delete": "Delete",
    "insert": "Insert", "space": "space", "up": "Up", "down": "Down", "left": "Left", "right": "Right",
    "home": "Home", "end": "End", "pageup": "Prior", "pagedown": "Next", "capslock": "Caps_Lock",
    "printscreen": "Print", "menu": "Menu", "back": "XF86Back", "volumeup": "XF86AudioRaiseVolume",
    "volumedown": "XF86AudioLowerVolume", "power": "XF86PowerOff", "appswitch": "XF86TaskPane",
    **{f"f{i}": f"F{i}" for i in range(1, 13)},
}
BUTTONS = {"left": 1, "middle": 2, "right": 3}
#: Pixels of scroll per wheel click (one notch is about three text lines).
SCROLL_STEP = 50
#: Keymap changes one ``type`` may cost beyond the spare keycodes (each is re-read by every X client).
MAX_REMAPS = 24
#: Characters sent per X round trip when typing. python-xlib keeps unsent requests in one buffer that it
#: copies on every partial write, so a long text sent unflushed costs quadratic time (30,000 characters:
#: 25 s on Xvfb, against 1.5 s in chunks).
TYPE_CHUNK = 256
#: The slowest typing rate (characters per second) a step's time budget is planned for: Xvfb took in
#: 20,000-70,000 a second in chunks, an xterm reading them included; the margin is for a loaded machine
#: and the keymap changes (:data:`MAX_REMAPS`, 0.1 s each) one text may cost.
TYPE_RATE_FLOOR = 1000


def max_typed(budget_seconds: float) -> int:
    """The longest text one ``type`` may ask for within ``budget_seconds``."""
    return int(budget_seconds * TYPE_RATE_FLOOR)


class UntypableText(ValueError):
    """Text this keyboard layer will not type in one action (standard library only: the session's
    ``pyautogui`` stand-in loads this module by path)."""


def char_keysym(char: str) -> int:
    """The X keysym that types ``char`` (Latin-1 maps to itself, the rest to 0x01000000 + code point)."""
    if char == "\n":
        return XK.string_to_keysym("Return")
    if char == "\t":
        return XK.string_to_keysym("Tab")
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 | code


def key_keysym(name: str) -> int:
    """The keysym of a canonical key name (``ctrl``, ``f5``, ``a``, ``+``)."""
    if len(name) == 1:
        return char_keysym(name)
    keysym = XK.string_to_keysym(KEYSYM_NAMES.get(name, name))
    if keysym == 0:
        raise ValueError(f"no X keysym for key {name!r}")
    return keysym


class XInput:
    """Synthesizes input on one display. Not thread-safe: the session serializes calls."""

    def __init__(self, display: Display):
        self.d = display
        if not self.d.query_extension("XTEST"):
            raise RuntimeError("the X server has no XTEST extension")
        self._min_kc = self.d.display.info.min_keycode
        self._max_kc = self.d.display.info.max_keycode
        self._spares = self._find_spare_keycodes()
        self._mapped: OrderedDict[int, int] = OrderedDict()  # keysym -> spare keycode, LRU order
        self._shift_kc = self.d.keysym_to_keycode(XK.string_to_keysym("Shift_L"))

    # -- pointer ---------------------------------------------------------------------------------
    def move(self, x: int, y: int) -> None:
        xtest.fake_input(self.d, X.MotionNotify, x=int(x), y=int(y))
        self.d.sync()

    def click(self, x: int, y: int, button: str = "left", clicks: int = 1) -> None:
        code = BUTTONS[button]
        xtest.fake_input(self.d, X.MotionNotify, x=int(x), y=int(y))
        for _ in range(clicks):
            xtest.fake_input(self.d, X.ButtonPress, code)
            xtest.fake_input(self.d, X.ButtonRelease, code)
        self.d.sync()

    def drag(self, x1: int, y1: int, x2: int, y2: int, steps: int = 10) -> None:
        xtest.fake_input(self.d, X.MotionNotify, x=int(x1), y=int(y1))
        xtest.fake_input(self.d, X.ButtonPress, 1)
        self.d.sync()
        for i in range(1, steps + 1):
            xtest.fake_input(self.d, X.MotionNotify, x=round(x1 + (x2 - x1) * i / steps),
                             y=round(y1 + (y2 - y1) * i / steps))
            self.d.sync()
        xtest.fake_input(self.d, X.ButtonRelease, 1)
        self.d.sync()

    def scroll(self, x: int, y: int, dx: int = 0, dy: int = 0) -> None:
        """Wheel buttons: 4 up, 5 down, 6 left, 7 right; one click per SCROLL_STEP pixels (at least one)."""
        xtest.fake_input(self.d, X.MotionNotify, x=int(x), y=int(y))
        for delta, neg, pos in ((dy, 4, 5), (dx, 6, 7)):
            if delta:
                button = pos if delta > 0 else neg
                for _ in range(min(100, max(1, round(abs(delta) / SCROLL_STEP)))):
                    xtest.fake_input(self.d, X.ButtonPress, button)
                    xtest.fake_input(self.d, X.ButtonRelease, button)
        self.d.sync()

    def pointer(self) -> tuple[int, int]:
        reply = self.d.screen().root.query_pointer()
        return reply.root_x, reply.root_y

    # -- keyboard --------------------------------------------------------------------------------
    def key_combo(self, names: Iterable[str]) -> None:
        """Press the keys in order, then release them in reverse (``["ctrl", "shift", "t"]``)."""
        names = list(names)
        pressed: list[int] = []
        try:
            for name in names:
                keysym = key_keysym(name)
                keycode, shifted = self._keycode_for(keysym)
                # A combo names the key, not the character: "ctrl+A" is ctrl+a, so no implied shift.
                xtest.fake_input(self.d, X.KeyPress, keycode)
                pressed.append(keycode)
        finally:
            for keycode in reversed(pressed):
                xtest.fake_input(self.d, X.KeyRelease, keycode)
            self.d.sync()

    def type_text(self, text: str, budget_seconds: float | None = None) -> None:
        """Type every character of ``text``; characters missing from the keymap use spare keycodes.

        Each such character beyond the spare keycodes costs a keymap change that every X client of the
        display re-reads; a text needing more than :data:`MAX_REMAPS` of them, or longer than
        :func:`max_typed` allows in ``budget_seconds`` (the step's time for this call; None: no limit), is
        refused with :class:`UntypableText` before anything is typed (the agent's input, not a broken
        session). The text is sent :data:`TYPE_CHUNK` characters per round trip."""
        if budget_seconds is not None and len(text) > max_typed(budget_seconds):
            raise UntypableText(f"type: the text has {len(text)} characters; at most {max_typed(budget_seconds)} "
                                "can be typed in one action (split it over several)")
        missing = {k for k in map(char_keysym, text) if k not in self._mapped and not self._in_keymap(k)}
        remaps = len(missing) - max(0, len(self._spares) - len(self._mapped))
        if remaps > MAX_REMAPS:
            raise UntypableText(f"type: the text has {len(missing)} distinct characters outside the keyboard map; "
                                f"at most {len(self._spares) + MAX_REMAPS} can be typed in one action")
        for index, char in enumerate(text, 1):
            keysym = char_keysym(char)
            keycode, shifted = self._keycode_for(keysym)
            if shifted:
                xtest.fake_input(self.d, X.KeyPress, self._shift_kc)
            xtest.fake_input(self.d, X.KeyPress, keycode)
            xtest.fake_input(self.d, X.KeyRelease, keycode)
            if shifted:
                xtest.fake_input(self.d, X.KeyRelease, self._shift_kc)
            if index % TYPE_CHUNK == 0:
                self.d.sync()
        self.d.sync()

    def _in_keymap(self, keysym: int) -> bool:
        return any(index in (0, 1) for _keycode, index in self.d.keysym_to_keycodes(keysym))

    def _keycode_for(self, keysym: int) -> tuple[int, bool]:
        if keysym in self._mapped:
            self._mapped.move_to_end(keysym)
            return self._mapped[keysym], False
        for keycode, index in self.d.keysym_to_keycodes(keysym):
            if index in (0, 1):
                return keycode, index == 1
        if not self._spares:
            raise RuntimeError("no spare keycode to type a character missing from the keymap")
        if len(self._mapped) < len(self._spares):
            keycode = self._spares[len(self._mapped)]
        else:  # reuse the least recently typed one, once the keys already sent have been read
            _, keycode = self._mapped.popitem(last=False)
            self.d.sync()
            time.sleep(0.1)
        self.d.change_keyboard_mapping(keycode, [(keysym, keysym)])
        self.d.sync()
        self._mapped[keysym] = keycode
        return keycode, False

    def _find_spare_keycodes(self) -> list[int]:
        count = self._max_kc - self._min_kc + 1
        mapping = self.d.get_keyboard_mapping(self._min_kc, count)
        spares = [self._min_kc + i for i, syms in enumerate(mapping) if not any(syms)]
        return spares
