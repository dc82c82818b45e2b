"""Command building and output parsing: everything of the adb layer that needs no device."""

from __future__ import annotations

import base64
import io
import subprocess

import numpy as np
import pytest
from PIL import Image

from mintgym.action_spaces import InvalidAction, Key
from mintgym.action_spaces.keys import NAMED_KEYS
from mintgym.environments.android import apps
from mintgym.environments.android import commands as C

NASTY = [
    "hello world",
    "it's \"quoted\" $HOME; rm -rf / && echo `id` | (a) <b> * ~ \\ back",
    "100% done & more",
    "a  b   c",
    "'",
    "--flag -x",
]


@pytest.mark.parametrize("text", NASTY)
def test_input_text_survives_a_posix_shell(text):
    """The device shell sees exactly one argument: the text with spaces as %s (checked with a real sh)."""
    line = C.input_text_command(text)
    script = 'input() { [ "$#" -eq 2 ] || { echo "argc=$#"; exit 3; }; printf "%s" "$2"; }; ' + line
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == text.replace(" ", "%s")


def test_input_text_refuses_what_it_cannot_type():
    with pytest.raises(ValueError):
        C.input_text_command("héllo")
    with pytest.raises(ValueError):
        C.input_text_command("two\nlines")
    assert not C.is_plain_ascii("日本") and C.is_plain_ascii("plain ~ text")


def test_text_chunks_turn_newlines_and_tabs_into_keys():
    assert C.text_chunks("a b\nc\td\r\n") == ["a b", 66, "c", 61, "d", 66]


def test_adb_keyboard_broadcast_carries_utf8_base64():
    cmd = C.adb_keyboard_broadcast("Grüße, 世界 ✓")
    assert cmd.startswith("am broadcast -a ADB_INPUT_B64 --es msg ")
    payload = cmd.rsplit(" ", 1)[1]
    assert base64.b64decode(payload).decode("utf-8") == "Grüße, 世界 ✓"
    assert set(payload) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")


def test_clipboard_command_is_quoted():
    out = subprocess.run(["sh", "-c", 'cmd() { printf "%s|" "$@"; }; ' + C.clipboard_set_command("a 'b' $c")],
                         capture_output=True, text=True, timeout=10, check=False)
    assert out.stdout == "clipboard|set-primary-clip|a 'b' $c|"


@pytest.mark.parametrize("name,code", [
    ("enter", 66), ("back", 4), ("home", 3), ("tab", 61), ("backspace", 67), ("delete", 112), ("escape", 111),
    ("up", 19), ("down", 20), ("left", 21), ("right", 22), ("space", 62), ("pageup", 92), ("pagedown", 93),
    ("volumeup", 24), ("volumedown", 25), ("power", 26), ("appswitch", 187), ("menu", 82), ("f1", 131),
    ("f12", 142), ("ctrl", 113), ("shift", 59), ("alt", 57), ("meta", 117), ("end", 123),
    ("a", 29), ("z", 54), ("A", 29), ("0", 7), ("9", 16), (",", 55), (".", 56), ("@", 77), ("/", 76),
])
def test_keycodes_match_android_keyevent(name, code):
    assert C.keycode(name) == code


def test_every_canonical_key_has_a_keycode():
    missing = [k for k in NAMED_KEYS if k not in C.NAMED_KEYCODES]
    assert missing == []


def test_key_actions_build_keyevent_and_keycombination():
    assert C.key_command(Key(keys=("enter",)).keys) == "input keyevent 66"
    assert C.key_command(Key(keys="ctrl+c").keys) == "input keycombination 113 31"
    with pytest.raises(InvalidAction, match="no Android key code"):
        C.keycode("!")


def test_gesture_commands():
    assert C.tap_command(10, 20) == "input tap 10 20"
    assert C.swipe_command(1, 2, 3, 4, 0.3) == "input swipe 1 2 3 4 300"
    assert C.swipe_command(5, 5, 5, 5, 1.5) == "input swipe 5 5 5 5 1500"  # a long press
    # scrolling down by 500 drags the finger up; it stays on a 1080x2400 screen
    assert C.scroll_swipe(540, 1600, 0, 500, (1080, 2400)) == (540, 1600, 540, 1100)
    assert C.scroll_swipe(540, 300, 0, 1000, (1080, 2400)) == (540, 300, 540, 0)
    assert C.scroll_swipe(100, 100, -2000, -5000, (1080, 2400)) == (100, 100, 1079, 2399)


def test_launch_command_refuses_shell_injection():
    assert C.launch_command("com.android.settings") == \
        "monkey -p com.android.settings -c android.intent.category.LAUNCHER 1"
    with pytest.raises(InvalidAction):
        C.launch_command("com.x; reboot")


def test_wm_size_and_density():
    assert C.parse_wm_size("Physical size: 1080x2400\n") == (1080, 2400)
    assert C.parse_wm_size("Physical size: 1080x2400\nOverride size: 720x1600\n") == (720, 1600)
    assert C.parse_wm_density("Physical density: 420\nOverride density: 320") == 320
    assert C.parse_wm_density("Physical density: 420") == 420
    with pytest.raises(ValueError, match="cannot read a screen size"):
        C.parse_wm_size("error: no devices/emulators found")


def _png(mode: str, color) -> bytes:
    buf = io.BytesIO()
    Image.new(mode, (4, 3), color).save(buf, format="PNG")
    return buf.getvalue()


def test_decode_png_gives_rgb_uint8():
    shot = C.decode_png(_png("RGBA", (10, 20, 30, 255)))
    assert shot.shape == (3, 4, 3) and shot.dtype == np.uint8
    assert shot[0, 0].tolist() == [10, 20, 30]
    assert C.decode_png(_png("RGB", (1, 2, 3)))[2, 3].tolist() == [1, 2, 3]


def test_decode_png_names_what_came_back_instead():
    with pytest.raises(ValueError, match="did not return a PNG.*device offline"):
        C.decode_png(b"error: device offline")
    with pytest.raises(ValueError, match="could not be decoded"):
        C.decode_png(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)


def test_parse_devices():
    out = ("* daemon started successfully\nList of devices attached\nemulator-5554\tdevice\n"
           "R58M1234\tunauthorized\n192.168.1.5:5555\toffline\n\n")
    assert C.parse_devices(out) == {"emulator-5554": "device", "R58M1234": "unauthorized",
                                    "192.168.1.5:5555": "offline"}
    assert C.parse_devices("List of devices attached\n\n") == {}


def test_parse_content_rows_keeps_commas_inside_values():
    out = ("Row: 0 display_name=Smith, Jane, data1=+1 555-0100\n"
           "Row: 1 display_name=Bob, data1=NULL\n")
    rows = C.parse_content_rows(out, ("display_name", "data1"))
    assert rows == [{"display_name": "Smith, Jane", "data1": "+1 555-0100"}, {"display_name": "Bob", "data1": "NULL"}]
    assert C.parse_content_rows("No result found.\n") == []


def test_parse_packages_and_foreground():
    assert C.parse_packages("package:com.android.settings\npackage:com.google.android.deskclock\n") == \
        ["com.android.settings", "com.google.android.deskclock"]
    dump = "  mCurrentFocus=Window{3f2a1b u0 com.google.android.deskclock/com.android.deskclock.DeskClock}\n"
    assert C.parse_foreground(dump) == "com.google.android.deskclock"
    assert C.parse_foreground("nothing here") is None


def test_app_names_resolve_to_installed_packages():
    installed = ["com.android.settings", "com.android.deskclock", "com.dimowner.audiorecorder"]
    assert apps.resolve_app("Clock", installed, []) == "com.android.deskclock"
    assert apps.resolve_app("settings app", installed, []) == "com.android.settings"
    assert apps.resolve_app("com.android.settings", installed, []) == "com.android.settings"
    assert apps.resolve_app("Audio Recorder", installed, ["com.dimowner.audiorecorder"]) == "com.dimowner.audiorecorder"
    assert apps.resolve_app("Nonexistent", installed, installed) is None
