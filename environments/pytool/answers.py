"""Parsing the agent's free-text answers: numbers, points and colour names.

>>> parse_number(" 7.0 ")
7.0
>>> parse_point("x=120, y=48")
(120.0, 48.0)
>>> parse_word("The answer is Red.", ("red", "blue"))
'red'
"""

from __future__ import annotations

import re

_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")


def _numbers(text: str) -> list[float]:
    found = []
    for match in _NUMBER.finditer(text):
        token = match.group(0)
        # "1,234" is one number only when the text is not a list of numbers separated by ", "
        found.append(float(token.replace(",", "")))
    return found


def parse_number(answer: str | None) -> float | None:
    """The single number in the answer ("7", "7.0", " 7 ", "answer: 7", "1,234"); None if none or several."""
    if answer is None:
        return None
    values = _numbers(str(answer))
    if len(values) != 1:
        return None
    return values[0]


def parse_point(answer: str | None) -> tuple[float, float] | None:
    """An (x, y) point: "(120, 48)", "120,48", "x=120, y=48", "[120 48]"; None unless exactly two numbers."""
    if answer is None:
        return None
    text = str(answer)
    named_x = re.search(r"\bx\s*[:=]\s*([-+]?\d+(?:\.\d+)?)", text, re.IGNORECASE)
    named_y = re.search(r"\by\s*[:=]\s*([-+]?\d+(?:\.\d+)?)", text, re.IGNORECASE)
    if named_x and named_y:
        return float(named_x.group(1)), float(named_y.group(1))
    values = [float(v) for v in re.findall(r"[-+]?\d+(?:\.\d+)?", text)]
    if len(values) != 2:
        return None
    return values[0], values[1]


def parse_word(answer: str | None, choices: tuple[str, ...] | list[str]) -> str | None:
    """The one choice named in the answer (case-insensitive, whole words); None if none or several."""
    if answer is None:
        return None
    words = set(re.findall(r"[a-z]+", str(answer).lower()))
    named = [c for c in choices if c.lower() in words]
    return named[0] if len(named) == 1 else None
