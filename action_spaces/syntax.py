"""Finding action expressions in model text and reading them safely.

Nothing here evaluates code: calls are read with ``ast.parse`` and a strict whitelist of node types
(literals, lists/tuples, a unary sign, keyword arguments, a dotted function name); objects are read as
JSON, or as a Python literal through the same whitelist. Anything else raises :class:`InvalidAction`.

Candidate extraction, in one left-to-right pass over the text:

* a call candidate starts at a known name followed directly by ``(`` (``click(``, ``pyautogui.click(``),
  or at any identifier followed by ``(`` at the start of a line (so an unknown action is reported by
  name); it ends at the matching ``)``, with string literals (single, double, triple quoted) skipped;
* an object candidate starts at ``{`` followed by a quote and ends at the matching ``}``; it counts only
  if it reads as an object;
* a candidate starting inside an earlier complete candidate (``type(text="click(1, 2)")``) is part of it.

The caller takes the last complete candidate; earlier ones are context (pyautogui's pointer position).
"""

from __future__ import annotations

import ast
import functools
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mintgym.action_spaces.errors import InvalidAction

#: Bare names accepted as literal values, for models that write JSON spellings inside calls.
NAME_LITERALS = {"True": True, "False": False, "None": None, "true": True, "false": False, "null": None,
                 "none": None}
_MAX_SCAN = 2_000_000  # total characters the candidate scanner may visit for one text


@dataclass(frozen=True)
class Call:
    """A function call read from the text: ``name(*args, **kwargs)``, values already literal."""

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    source: str


@dataclass(frozen=True)
class Obj:
    """A JSON (or Python-literal) object read from the text."""

    value: dict[str, Any]
    source: str


@dataclass
class Extraction:
    """The complete candidates in order, and why incomplete ones were dropped."""

    candidates: list[Call | Obj | str] = field(default_factory=list)
    rejects: list[str] = field(default_factory=list)


def shorten(text: str, limit: int = 60) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Scanner:
    """Finds the end of a bracketed expression, skipping string literals; memoizes what it learns."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.memo: dict[int, int | None] = {}
        self.budget = _MAX_SCAN

    def close_of(self, open_at: int, opener: str, closer: str) -> int | None:
        """Index just past the bracket matching ``text[open_at]``, or None if it never closes."""
        if open_at in self.memo:
            return self.memo[open_at]
        text, n = self.text, len(self.text)
        stack = [open_at]
        i = open_at + 1
        while i < n:
            self.budget -= 1
            if self.budget < 0:
                raise InvalidAction("the text has too many unbalanced brackets to find an action in")
            ch = text[i]
            if ch in "\"'":
                end = self._skip_string(i)
                if end is None:  # unterminated string: nothing still open here can close
                    break
                i = end
                continue
            if ch == opener:
                stack.append(i)
            elif ch == closer:
                start = stack.pop()
                self.memo[start] = i + 1
                if not stack:
                    return i + 1
            i += 1
        for start in stack:
            self.memo[start] = None
        return None

    def _skip_string(self, i: int) -> int | None:
        text, n = self.text, len(self.text)
        quote = text[i]
        triple = text.startswith(quote * 3, i)
        j = i + (3 if triple else 1)
        while j < n:
            self.budget -= 1
            ch = text[j]
            if ch == "\\":
                j += 2
                continue
            if triple:
                if text.startswith(quote * 3, j):
                    return j + 3
            elif ch == quote:
                return j + 1
            elif ch == "\n":
                return None
            j += 1
        return None


@functools.lru_cache(maxsize=8)
def _candidate_pattern(known_names: tuple[str, ...]) -> tuple[re.Pattern, frozenset[str]]:
    known = sorted(set(known_names), key=len, reverse=True)
    names = "|".join(re.escape(k) for k in known)
    pattern = re.compile(
        rf"(?<![\w.])(?P<known>(?:{names}))\(|(?m:^[ \t>*`]*(?:action\s*:\s*)?)(?P<line>[A-Za-z_][\w.]*)\(|"
        rf"(?P<obj>\{{)\s*[\"']",
        re.IGNORECASE,
    )
    return pattern, frozenset(k.lower() for k in known)


def extract(text: str, known_names: Iterable[str]) -> Extraction:
    """All complete action candidates of ``text``, in order (see the module docstring)."""
    call_re, known_lower = _candidate_pattern(tuple(known_names))
    scanner = _Scanner(text)
    out = Extraction()
    cursor = 0
    for m in call_re.finditer(text):
        start = m.start("known") if m.group("known") else m.start("line") if m.group("line") else m.start("obj")
        if start < cursor:
            continue
        if m.group("obj"):
            end = scanner.close_of(start, "{", "}")
            if end is None:
                out.rejects.append(f"unbalanced braces in {shorten(text[start:])!r}")
                continue
            try:
                value = read_object(text[start:end])
            except InvalidAction as err:
                out.rejects.append(str(err))
                continue
            out.candidates.append(Obj(value, text[start:end]))
            cursor = end
            continue
        name = m.group("known") or m.group("line")
        if m.group("known") and name.lower() not in known_lower:
            continue
        open_at = m.end() - 1
        end = scanner.close_of(open_at, "(", ")")
        if end is None:
            out.rejects.append(f"unbalanced parentheses or quotes in {shorten(text[start:])!r}")
            continue
        out.candidates.append(text[start:end])
        cursor = end
    return out


# -- reading one candidate -----------------------------------------------------------------------

def read_call(source: str) -> Call:
    """Read ``name(args...)`` with literal arguments only."""
    tree = _parse(source, "eval")
    node = tree.body
    if not isinstance(node, ast.Call):
        raise InvalidAction(f"expected a function call such as click(x=1, y=2), got {shorten(source)!r}")
    name = _func_name(node.func)
    args = []
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            raise InvalidAction(f"{name}: *-unpacking is not allowed; write the values")
        args.append(literal(arg, f"{name} argument {len(args) + 1}"))
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise InvalidAction(f"{name}: **-unpacking is not allowed; write field=value")
        if kw.arg in kwargs:
            raise InvalidAction(f"{name}: field {kw.arg!r} given twice")
        kwargs[kw.arg] = literal(kw.value, f"{name} field {kw.arg!r}")
    return Call(name, tuple(args), kwargs, source)


def read_object(source: str) -> dict[str, Any]:
    """Read a JSON object, or a Python dict literal (single quotes, True, trailing commas)."""
    try:
        value = json.loads(source, parse_constant=_reject_constant)
    except (ValueError, RecursionError, MemoryError):
        tree = _parse(source, "eval")
        value = literal(tree.body, "object", allow_dict=True)
    if not isinstance(value, dict):
        raise InvalidAction(f"expected a JSON object, got {type(value).__name__}")
    _check_finite(value)
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid number")


def _check_finite(value: Any, depth: int = 0) -> None:
    if depth > 50:
        raise InvalidAction("the object is nested too deeply")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidAction(f"numbers must be finite, got {value!r}")
    if isinstance(value, dict):
        for v in value.values():
            _check_finite(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_finite(v, depth + 1)


def _parse(source: str, mode: str) -> ast.AST:
    try:
        return ast.parse(source.strip(), mode=mode)
    except SyntaxError as err:
        raise InvalidAction(f"cannot read {shorten(source)!r}: {shorten(str(err.msg), 80)}") from None
    except (ValueError, RecursionError, MemoryError, UnicodeError, OverflowError) as err:
        raise InvalidAction(f"cannot read {shorten(source)!r}: {type(err).__name__}: {shorten(str(err), 80)}") from None


def _func_name(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or len(parts) > 1:
        raise InvalidAction("the function name must be a plain name such as click or pyautogui.click")
    parts.append(node.id)
    return ".".join(reversed(parts))


def literal(node: ast.AST, where: str, allow_dict: bool = False, depth: int = 0) -> Any:
    """The value of a literal node: str, int, float, bool, None, or a list/tuple (dict) of them."""
    if depth > 20:
        raise InvalidAction(f"{where}: value nested too deeply")
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, str):
            return _join_surrogates(value)
        if isinstance(value, (bool, int)) or value is None:
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidAction(f"{where}: numbers must be finite, got {value!r}")
            return value
        raise InvalidAction(f"{where}: {type(value).__name__} literals are not allowed")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = literal(node.operand, where, allow_dict, depth + 1)
        if isinstance(inner, bool) or not isinstance(inner, (int, float)):
            raise InvalidAction(f"{where}: a sign needs a number")
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, (ast.List, ast.Tuple)):
        return [literal(e, where, allow_dict, depth + 1) for e in node.elts]
    if isinstance(node, ast.Dict) and allow_dict:
        out = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                raise InvalidAction(f"{where}: **-unpacking is not allowed")
            key = literal(k, where, allow_dict, depth + 1)
            if not isinstance(key, str):
                raise InvalidAction(f"{where}: object keys must be strings")
            out[key] = literal(v, where, allow_dict, depth + 1)
        return out
    if isinstance(node, ast.Name):
        if node.id in NAME_LITERALS:
            return NAME_LITERALS[node.id]
        raise InvalidAction(f"{where}: bare name {node.id!r} is not a value; quote strings, e.g. {node.id!r}")
    raise InvalidAction(f"{where}: only literal values are allowed, got a {type(node).__name__} expression")


def _join_surrogates(text: str) -> str:
    """Combine JSON-style surrogate pair escapes (``"\\ud83d\\ude00"``) into their character."""
    if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        return text
    try:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        return text  # a lone surrogate: the action's validation rejects it
