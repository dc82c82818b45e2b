"""OSWorld metric functions, written here from their documented meaning: ``metric(result, expected, **options)``.

``result`` is what the result getter read from the session (text, a file path, a parsed setting);
``expected`` is the expected getter's value (usually the task's ``rules`` dict). Each returns a score in
[0, 1]; a missing file or setting scores 0.
"""

from __future__ import annotations

import ast
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Callable

OOR = "{http://openoffice.org/2001/registry}"


def check_include_exclude(result: str | None, rules: dict) -> float:
    if result is None:
        return 0.0
    include = rules.get("include", [])
    exclude = rules.get("exclude", [])
    return float(all(s in result for s in include) and not any(s in result for s in exclude))


def exact_match(result: Any, rules: dict) -> float:
    return float(result is not None and result == rules["expected"])


def match_in_list(result: Any, rules: dict) -> float:
    return float(result is not None and result in rules["expected"])


def is_in_list(result: Any, rules: dict) -> float:
    return float(result is not None and rules["expected"] in result)


def literal_match(result: Any, expected: Any, ignore_case: bool = False, **_: Any) -> float:
    if result is None:
        return 0.0
    if ignore_case and isinstance(result, str) and isinstance(expected, str):
        return float(result.lower() == expected.lower())
    return float(result == expected)


def check_font_size(font_size: dict | None, rule: dict) -> float:
    if not font_size:
        return 0.0
    size = font_size["default_font_size"]
    if rule["type"] == "value":
        return float(size == rule["value"])
    if rule["type"] == "range":
        return float(rule["min"] < size < rule["max"])
    raise ValueError(f"check_font_size: unknown rule type {rule['type']!r}")


def check_auto_saving_time(xcu_path: str | None, rules: dict) -> float:
    """LibreOffice's AutoSaveTimeIntervall (registrymodifications.xcu) equals ``rules['minutes']``."""
    if not xcu_path or not Path(xcu_path).exists():
        return 0.0
    try:
        root = ET.parse(xcu_path).getroot()
    except ET.ParseError:
        return 0.0
    for item in root.iter("item"):
        if item.get(OOR + "path") != "/org.openoffice.Office.Common/Save/Document":
            continue
        for prop in item.iter("prop"):
            if prop.get(OOR + "name") == "AutoSaveTimeIntervall":
                value = prop.find("value")
                try:
                    return float(value is not None and int(value.text or "") == int(rules["minutes"]))
                except ValueError:
                    return 0.0
    return 0.0


def check_config_status(config_path: str | None, rule: dict) -> float:
    """A GIMP ``gimprc`` line ``(key ... value)`` with the expected key and last value."""
    if not config_path or not Path(config_path).exists():
        return 0.0
    keys = rule["key"] if isinstance(rule["key"], list) else [rule["key"]]
    for line in Path(config_path).read_text(errors="replace").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        items = line.strip().lstrip("(").rstrip(")").split()
        if len(items) >= len(keys) + 1 and items[: len(keys)] == keys and items[-1] == rule["value"]:
            return 1.0
    return 0.0


def _vlcrc_value(path: str | None, key: str) -> str | None:
    """The active (uncommented) value of ``key`` in a vlcrc, or None when it is not set."""
    if not path or not Path(path).exists():
        return None
    value = None
    for line in Path(path).read_text(errors="replace").splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or "=" not in stripped:
            continue
        name, _, val = stripped.partition("=")
        if name.strip() == key:
            value = val.strip()
    return value


def _vlc_flag(path: str | None, key: str, expected: Any, default: str) -> float:
    if not path or not Path(path).exists():
        return 0.0
    value = _vlcrc_value(path, key)
    return float((value if value is not None else default) == str(expected))


def check_play_and_exit(path: str | None, rule: dict) -> float:
    return _vlc_flag(path, "play-and-exit", rule["expected_play_and_exit"], "0")


def check_one_instance_when_started_from_file(path: str | None, rule: dict) -> float:
    return _vlc_flag(path, "one-instance-when-started-from-file",
                     rule["expected_one_instance_when_started_from_file"], "1")


def is_vlc_recordings_folder(path: str | None, rule: dict) -> float:
    value = _vlcrc_value(path, "input-record-path")
    return float(value is not None and value.rstrip("/") == rule["recording_file_path"].rstrip("/"))


def check_qt_slider_colours(path: str | None, rule: dict) -> float:
    default = "153;210;153;20;210;20;255;199;15;245;39;29"
    if not path or not Path(path).exists():
        return 0.0
    value = _vlcrc_value(path, "qt-slider-colours") or default
    if rule["type"] == "match":
        return float(value == rule["expected_qt_slider_colours"])
    if rule["type"] == "blackish":
        try:
            numbers = [int(v) for v in value.split(";")]
        except ValueError:
            return 0.0
        colours = list(zip(numbers[0::3], numbers[1::3], numbers[2::3]))
        return float(bool(colours) and all(all(c < 100 for c in rgb) for rgb in colours))
    raise ValueError(f"check_qt_slider_colours: unknown rule type {rule['type']!r}")


def check_gnome_favorite_apps(apps: str | None, rule: dict) -> float:
    if not apps:
        return 0.0
    try:
        listed = ast.literal_eval(apps.strip().removeprefix("@as "))
    except (ValueError, SyntaxError):
        return 0.0
    return float(sorted(listed) == sorted(rule["expected"]))


def file_contains(path: str | None, expected: dict | list[str] | str, **_: Any) -> float:
    if not path or not Path(path).exists():
        return 0.0
    text = Path(path).read_text(errors="replace")
    if isinstance(expected, dict):
        expected = expected["expected"]
    wanted = [expected] if isinstance(expected, str) else expected
    return float(all(w in text for w in wanted))


TIME_OF_DAY = re.compile(r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)")


def check_line_number(path: str | None, expected: dict, **_: Any) -> float:
    """The file has exactly ``expected['expected']`` lines stamped with a time of day (HH:MM:SS)."""
    if not path or not Path(path).exists():
        return 0.0
    lines = Path(path).read_text(errors="replace").splitlines()
    return float(sum(1 for line in lines if TIME_OF_DAY.search(line)) == int(expected["expected"]))


def compare_text_file(path: str | None, expected_path: str | None, ignore_blanks: bool = False,
                      ignore_case: bool = False, **_: Any) -> float:
    if not path or not expected_path or not Path(path).exists():
        return 0.0
    a, b = Path(path).read_text(errors="replace"), Path(expected_path).read_text(errors="replace")
    if ignore_blanks:
        a, b = re.sub(r"\s+", " ", a).strip(), re.sub(r"\s+", " ", b).strip()
    if ignore_case:
        a, b = a.lower(), b.lower()
    return float(a == b)


def compare_csv(path: str | None, expected_path: str | None, **_: Any) -> float:
    if not path or not expected_path or not Path(path).exists():
        return 0.0
    rows = lambda p: [line.rstrip("\r") for line in Path(p).read_text(errors="replace").strip().splitlines()]
    return float(rows(path) == rows(expected_path))


def compare_table(path: str | None, expected_path: str | None = None, **_: Any) -> float:
    """Every sheet's cell values equal (openpyxl, values as computed); rule-based checks are not ported."""
    if not path or not expected_path or not Path(path).exists():
        return 0.0
    import pandas as pd

    try:
        got = pd.read_excel(path, sheet_name=None)
        want = pd.read_excel(expected_path, sheet_name=None)
    except (ValueError, OSError):
        return 0.0
    if list(got) != list(want):
        return 0.0
    return float(all(got[name].equals(want[name]) for name in want))


def compare_docx_files(path: str | None, expected_path: str | None, ignore_blanks: bool = True, **_: Any) -> float:
    if not path or not expected_path or not Path(path).exists():
        return 0.0
    from docx import Document

    def text(p: str) -> list[str]:
        paras = [para.text for para in Document(p).paragraphs]
        return [re.sub(r"\s+", " ", t).strip() for t in paras if t.strip()] if ignore_blanks else paras

    try:
        return float(text(path) == text(expected_path))
    except (ValueError, KeyError, OSError):
        return 0.0


def check_json_settings(path: str | None, expected: dict, **_: Any) -> float:
    import json

    if not path or not Path(path).exists():
        return 0.0
    try:
        data = json.loads(Path(path).read_text())
    except ValueError:
        return 0.0
    return float(all(data.get(k) == v for k, v in expected["expected"].items()))


METRICS: dict[str, Callable[..., float]] = {f.__name__: f for f in (
    check_include_exclude, exact_match, match_in_list, is_in_list, literal_match, check_font_size,
    check_auto_saving_time, check_config_status, check_play_and_exit, check_one_instance_when_started_from_file,
    is_vlc_recordings_folder, check_qt_slider_colours, check_gnome_favorite_apps, file_contains, check_line_number,
    compare_text_file, compare_csv, compare_table, compare_docx_files, check_json_settings,
)}
