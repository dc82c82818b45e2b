"""Bounded session options: every env option has a type and a range, and the operator can cap them.

A session's ``env_options`` are validated by the host's options model (a pydantic model with
``extra="forbid"``) before the host sees them; a value of the wrong type or out of range is refused with
one line naming the option and its range. The operator's caps (``mintgym serve pytool --max-option
memory_mb=2048``) bound numeric options further, and no session option can exceed them.

Each host declares its model as its ``options_model`` class attribute; a host without one takes its options
unchecked (and they cannot be capped).
"""

from __future__ import annotations

from typing import Any

import annotated_types
from pydantic import BaseModel, ValidationError

from mintgym.validation import one_line


class OptionError(ValueError):
    """A session option of the wrong type, out of its range, unknown, or over the operator's cap."""


def options_model_for(host: Any) -> type[BaseModel] | None:
    """The options model ``host`` declares (its ``options_model``), or None."""
    model = getattr(host, "options_model", None)
    if model is not None and not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"{type(host).__name__}.options_model must be a pydantic model class, got {model!r}")
    return model


def field_range(model: type[BaseModel], name: str) -> str:
    """The allowed values of field ``name`` as text: ``an integer in [64, 4096]``, ``a number in (0, 600]``."""
    info = model.model_fields[name]
    kind = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(info.annotation, "")
    low = high = None
    for meta in info.metadata:
        if isinstance(meta, annotated_types.Ge):
            low = f"[{meta.ge}"
        elif isinstance(meta, annotated_types.Gt):
            low = f"({meta.gt}"
        elif isinstance(meta, annotated_types.Le):
            high = f"{meta.le}]"
        elif isinstance(meta, annotated_types.Lt):
            high = f"{meta.lt})"
        elif isinstance(meta, annotated_types.MaxLen):
            high = f"at most {meta.max_length} long"
    if low or high:
        if low and high and "long" not in high:
            span = f"in {low}, {high}"
        else:
            span = " ".join(x for x in (f"from {low}" if low else "", f"up to {high}" if high else "") if x)
        return f"{kind or 'a value'} {span}".strip()
    return kind or f"of type {getattr(info.annotation, '__name__', info.annotation)}"


def describe_error(model: type[BaseModel], err: ValidationError, options: Any = None) -> str:
    """One line naming the first bad option, what is wrong and, for a field, the values it allows."""
    first = err.errors()[0]
    name = str(first["loc"][0]) if first.get("loc") else ""
    allowed = (f"; allowed: {field_range(model, name)}"
               if name in model.model_fields and first["type"] != "extra_forbidden" else "")
    return f"env option {one_line(err, options, model)}{allowed}"


def parse_caps(items: list[str] | dict[str, Any] | None, model: type[BaseModel] | None) -> dict[str, float]:
    """Operator caps from ``NAME=VALUE`` items (or a dict), checked against ``model``'s numeric options."""
    if not items:
        return {}
    pairs = items.items() if isinstance(items, dict) else [_split(item) for item in items]
    if model is None:
        raise OptionError("this environment host declares no options model, so its options cannot be capped")
    caps: dict[str, float] = {}
    for name, value in pairs:
        if name not in model.model_fields:
            raise OptionError(f"--max-option {name}: no such option; known: {', '.join(model.model_fields)}")
        if model.model_fields[name].annotation not in (int, float):
            raise OptionError(f"--max-option {name}: only numeric options can be capped")
        try:
            caps[name] = float(value)
        except (TypeError, ValueError):
            raise OptionError(f"--max-option {name}={value!r}: the cap must be a number") from None
    return caps


def _split(item: str) -> tuple[str, str]:
    name, sep, value = str(item).partition("=")
    if not sep or not name:
        raise OptionError(f"--max-option wants NAME=VALUE, got {item!r}")
    return name.strip(), value.strip()


def check_options(model: type[BaseModel] | None, options: dict[str, Any], caps: dict[str, float]) -> dict[str, Any]:
    """Validate ``options`` (typed, in range, under the caps); returns the options as the model read them."""
    if not isinstance(options, dict):
        raise OptionError("env_options must be a JSON object")
    if model is None:
        return dict(options)
    try:
        validated = model.model_validate(options)
    except ValidationError as err:
        raise OptionError(describe_error(model, err, options)) from None
    for name, cap in caps.items():
        if name in validated.model_fields_set and getattr(validated, name) > cap:
            raise OptionError(f"env option {name!r} = {getattr(validated, name)} exceeds this server's cap of "
                              f"{_num(cap)} (set by its operator)")
    return validated.model_dump(include=validated.model_fields_set)


def check_defaults(model: type[BaseModel] | None, defaults: dict[str, Any], caps: dict[str, float]) -> None:
    """The host's own defaults must be valid options under the caps too (checked when the server starts)."""
    if model is None:
        return
    check_options(model, {k: v for k, v in defaults.items() if k in model.model_fields}, caps)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def describe_options(model: type[BaseModel] | None, caps: dict[str, float]) -> dict[str, dict[str, Any]]:
    """Each session option as the server's spec reports it: its default, what it allows, the operator's cap."""
    if model is None:
        return {}
    described = {}
    for name, info in model.model_fields.items():
        entry: dict[str, Any] = {"default": info.get_default(call_default_factory=True),
                                 "allowed": field_range(model, name)}
        if name in caps:
            entry["cap"] = caps[name]
        described[name] = entry
    return described
