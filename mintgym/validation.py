"""Layer 0: a pydantic validation error as one line, worded the same everywhere (run configs, plug-in options,
env options, task files, request bodies): ``where: pydantic's message (got the value)``.

    >>> from pydantic import BaseModel, ConfigDict, Field, ValidationError
    >>> class Train(BaseModel):
    ...     model_config = ConfigDict(extra="forbid")
    ...     lr: float = Field(1e-5, gt=0)
    >>> def said(data):
    ...     try:
    ...         Train.model_validate(data)
    ...     except ValidationError as err:
    ...         return one_line(err, data, Train, prefix="train")
    >>> said({"lr": 0})
    'train.lr: input should be greater than 0 (got 0)'
    >>> said({"lrr": 1})
    'train.lrr: unknown key (known: lr)'
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, ValidationError


def one_line(err: ValidationError, raw: Any = None, model: type[BaseModel] | None = None, prefix: str = "") -> str:
    """The first problem (an unknown key first: a misspelt key explains the missing one beside it) and how many
    more there are. ``raw``, the input as the user wrote it, keeps pydantic's union and tag steps out of the
    location; ``model`` lets an unknown key list the known ones."""
    problems = sorted(err.errors(include_url=False), key=lambda p: p["type"] != "extra_forbidden")
    first = problems[0]
    path = _user_path(first["loc"], raw, first["type"])
    where = ".".join(str(p) for p in ([prefix] if prefix else []) + path)
    if first["type"] == "extra_forbidden":
        known = _known_keys(model, path[:-1], raw, path[-1] if path else None) if model is not None else []
        text = "unknown key" + (f" (known: {', '.join(known)})" if known else "")
    else:
        message = first["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        text = message[:1].lower() + message[1:]
        if first["type"] not in ("missing", "value_error", "assertion_error", "unknown_kind") and "input" in first:
            text += f" (got {_shown(first['input'])})"
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    return f"{where}: {text}{more}" if where else f"{text}{more}"


def _user_path(loc: tuple, raw: Any, kind: str) -> list[Any]:
    """``loc`` without the steps the user did not write: a union member's or a validator's name, a tag."""
    path, node = [], raw
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(part, str) and ("[" in part or part.startswith(("function-", "tagged-union"))):
            continue
        if isinstance(node, dict) and part not in node and not (last and kind in ("missing", "extra_forbidden")):
            continue  # a tag or a member's name, or an index where one object stands for a list
        path.append(part)
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, (list, tuple)) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            node = None
    return path


def _known_keys(model: type[BaseModel], path: list[Any], raw: Any, unknown: Any) -> list[str]:
    """The keys of the section at ``path``: where a union leaves several, those of the members that do not take
    ``unknown`` and take the other keys the user gave."""
    candidates, node = [model], raw
    for part in path:
        node = node.get(part) if isinstance(node, dict) else (node[part] if isinstance(node, list)
                                                               and isinstance(part, int) and part < len(node) else None)
        if isinstance(part, int):
            continue  # a list item or a mapping value: the same candidates' item type, found below
        found = [m for c in candidates if part in c.model_fields for m in _models_in(c.model_fields[part].annotation)]
        candidates = found or candidates
    given = set(node) if isinstance(node, dict) else set()
    fitting = [c for c in candidates if unknown not in c.model_fields and not given - {unknown} - set(c.model_fields)]
    fitting = fitting or candidates
    return list(dict.fromkeys(k for c in fitting for k in c.model_fields))


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds, through unions, lists, dicts and ``Annotated``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
