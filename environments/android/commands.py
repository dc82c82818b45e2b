"""Pure builders and parsers for the adb shell commands the environment sends (no device needed).

The device runs every ``adb shell`` line through its POSIX shell, so every argument is quoted with
:func:`shlex.quote`; ``input text`` additionally reads ``%s`` as a space and cannot type newlines or
non-ASCII characters (those go through :func:`adb_keyboard_broadcast` or the clipboard instead).
"""

from __future__ import annotations

import base64
import io
import re
import shlex

import numpy as np

from mintgym.action_spaces import InvalidAction

#: Android ``KeyEvent`` codes for the canonical key names of ``action_spaces/keys.py``.
#: ``home`` is the system Home button (KEYCODE_HOME), as on a phone; text-cursor Home is not offered.
NAMED_KEYCODES: dict[str, int] = {
    "ctrl": 113, "alt": 57, "shift": 59, "meta": 117,
    "enter": 66, "tab": 61, "escape": 111, "backspace": 67, "delete": 112, "insert": 124,
    "space": 62, "up": 19, "down": 20, "left": 21, "right": 22, "home": 3, "end": 123,
    "pageup": 92, "pagedown": 93, "capslock": 115, "printscreen": 120, "pause": 121, "menu": 82,
    "back": 4, "volumeup": 24, "volumedown": 25, "power": 26, "appswitch": 187,
    **{f"f{i}": 130 + i for i in range(1, 13)},  # KEYCODE_F1 = 131
}

#: Single characters that have their own key code (unshifted keys of a US keyboard, plus a few).
CHAR_KEYCODES: dict[str, int] = {
    **{chr(ord("a") + i): 29 + i for i in range(26)},
    **{str(d): 7 + d for d in range(10)},
    " ": 62, ",": 55, ".": 56, "`": 68, "-": 69, "=": 70, "[": 71, "]": 72, "\\": 73, ";": 74,
    "'": 75, "/": 76, "@": 77, "+": 81, "*": 17, "#": 18, "(": 162, ")": 163,
}

KEYCODE_PASTE = 279
KEYCODE_ENTER = 66
ADB_KEYBOARD_IME = "com.android.adbkeyboard/.AdbIME"


def keycode(name: str) -> int:
    """The Android key code of a canonical key name (``"enter"``, ``"back"``, ``"a"``)."""
    if name in NAMED_KEYCODES:
        return NAMED_KEYCODES[name]
    if len(name) == 1 and name.lower() in CHAR_KEYCODES:
        return CHAR_KEYCODES[name.lower()]
    raise InvalidAction(f"key {name!r} has no Android key code; type it with type(text=...) instead")


def key_command(keys: tuple[str, ...]) -> str:
    """``input keyevent`` for one key, ``input keycombination`` (Android 13+) for a combo."""
    codes = [keycode(k) for k in keys]
    if len(codes) == 1:
        return f"input keyevent {codes[0]}"
    return "input keycombination " + " ".join(str(c) for c in codes)


def is_plain_ascii(text: str) -> bool:
    """True when ``input text`` can type it: printable ASCII only (no newline, tab or accents)."""
    return all(" " <= ch <= "~" for ch in text)


def input_text_command(text: str) -> str:
    """``input text`` for printable ASCII, quoted for the device shell.

    Spaces become ``%s`` (``input text`` splits on them otherwise); a literal ``%s`` in ``text`` cannot be
    expressed and is typed as a space (a limit of ``input text`` itself).
    """
    if not text:
        raise InvalidAction("type: empty text")
    if not is_plain_ascii(text):
        raise ValueError("input text types printable ASCII only; use the ADB keyboard or the clipboard")
    return "input text " + shlex.quote(text.replace(" ", "%s"))


def text_chunks(text: str) -> list[str | int]:
    """Split text into ``input text`` runs and Enter/Tab key codes (``input text`` cannot type them)."""
    out: list[str | int] = []
    for part in re.split(r"(\n|\t)", text.replace("\r\n", "\n")):
        if part == "\n":
            out.append(KEYCODE_ENTER)
        elif part == "\t":
            out.append(NAMED_KEYCODES["tab"])
        elif part:
            out.append(part)
    return out


def adb_keyboard_broadcast(text: str) -> str:
    """The broadcast that makes the ADBKeyBoard IME (github.com/senzhk/ADBKeyBoard) commit ``text``."""
    msg = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return f"am broadcast -a ADB_INPUT_B64 --es msg {msg}"


def clipboard_set_command(text: str) -> str:
    """``cmd clipboard set-primary-clip``: present on some builds only (the caller checks its output)."""
    return "cmd clipboard set-primary-clip " + shlex.quote(text)


def tap_command(x: int, y: int) -> str:
    return f"input tap {int(x)} {int(y)}"


def swipe_command(x1: int, y1: int, x2: int, y2: int, seconds: float) -> str:
    """``input swipe``; a long press is a swipe that starts and ends at the same point."""
    return f"input swipe {int(x1)} {int(y1)} {int(x2)} {int(y2)} {max(1, round(seconds * 1000))}"


def scroll_swipe(x: int, y: int, dx: int, dy: int, size: tuple[int, int]) -> tuple[int, int, int, int]:
    """The finger path that scrolls content by (dx, dy): the finger moves the other way, kept on screen.

    Touch screens have no wheel: scrolling down (dy > 0) drags the content up, so the finger goes from
    (x, y) to (x - dx, y - dy), clamped to the screen.
    """
    width, height = size
    x2 = min(max(x - dx, 0), width - 1)
    y2 = min(max(y - dy, 0), height - 1)
    return int(x), int(y), int(x2), int(y2)


def launch_command(package: str) -> str:
    """Start a package's launcher activity (monkey resolves it, so no activity name is needed)."""
    if not re.fullmatch(r"[A-Za-z0-9_.]+", package):
        raise InvalidAction(f"open_app: {package!r} is not a package name")
    return f"monkey -p {package} -c android.intent.category.LAUNCHER 1"


_SIZE = re.compile(r"(Physical|Override) size:\s*(\d+)x(\d+)")


def parse_wm_size(output: str) -> tuple[int, int]:
    """(width, height) from ``wm size``; an override size (``wm size 720x1600``) wins over the physical one."""
    sizes = {kind: (int(w), int(h)) for kind, w, h in _SIZE.findall(output)}
    if "Override" in sizes:
        return sizes["Override"]
    if "Physical" in sizes:
        return sizes["Physical"]
    raise ValueError(f"cannot read a screen size from `wm size` output: {output.strip()!r}")


def parse_wm_density(output: str) -> int | None:
    found = re.findall(r"(Physical|Override) density:\s*(\d+)", output)
    table = {kind: int(v) for kind, v in found}
    return table.get("Override", table.get("Physical"))


def decode_png(data: bytes) -> np.ndarray:
    """RGB uint8 (H, W, 3) from ``screencap -p`` bytes (RGBA on most devices)."""
    from PIL import Image, UnidentifiedImageError

    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        head = data[:80].decode("utf-8", "replace").strip()
        raise ValueError(f"screencap did not return a PNG (got {len(data)} bytes: {head!r})")
    try:
        with Image.open(io.BytesIO(data)) as img:
            return np.asarray(img.convert("RGB"), dtype=np.uint8).copy()
    except (UnidentifiedImageError, OSError) as err:
        raise ValueError(f"screencap PNG could not be decoded: {err}") from None


def parse_devices(output: str) -> dict[str, str]:
    """serial -> state (``device``, ``offline``, ``unauthorized``...) from ``adb devices``."""
    devices: dict[str, str] = {}
    for line in output.splitlines():
        line = line.strip()
        if not line or line.startswith(("List of devices", "*")):
            continue
        parts = line.split()
        if len(parts) >= 2:
            devices[parts[0]] = parts[1]
    return devices


def parse_packages(output: str) -> list[str]:
    """Package names from ``pm list packages``."""
    return [line.split(":", 1)[1].strip() for line in output.splitlines() if line.startswith("package:")]


def parse_content_rows(output: str, columns: tuple[str, ...] | None = None) -> list[dict[str, str]]:
    """Rows of ``content query`` output (``Row: 0 name=Alice, number=555``).

    Values may contain ``", "``; when the projected ``columns`` are known, a row is split only before
    ``", <column>="``, which keeps such values whole. ``NULL`` values come back as the string ``"NULL"``.
    """
    rows: list[dict[str, str]] = []
    for line in output.splitlines():
        m = re.match(r"Row:\s*\d+\s(.*)$", line)
        if not m:
            if rows and line and not line.startswith("No result found"):
                key = list(rows[-1])[-1]  # a value with a newline continues on the next line
                rows[-1][key] += "\n" + line
            continue
        body = m.group(1)
        names = "|".join(re.escape(c) for c in columns) if columns else r"[A-Za-z0-9_]+"
        parts = re.split(rf",\s(?=(?:{names})=)", body)
        row: dict[str, str] = {}
        for part in parts:
            key, sep, value = part.partition("=")
            if sep:
                row[key.strip()] = value
        rows.append(row)
    return rows


def parse_foreground(output: str) -> str | None:
    """The focused package from ``dumpsys window`` (``mCurrentFocus=Window{... u0 pkg/.Activity}``)."""
    for pattern in (r"mCurrentFocus=Window\{[^}]*\s([A-Za-z0-9_.]+)/", r"mFocusedApp=.*?\s([A-Za-z0-9_.]+)/",
                    r"mResumedActivity:.*?\s([A-Za-z0-9_.]+)/"):
        m = re.search(pattern, output)
        if m:
            return m.group(1)
    return None
