"""Layer 1: the options of a plug-in (an inference engine, an agent), typed by its own constructor.

A run config names a plug-in by its kind and gives its options as a mapping. :func:`options_model` turns the
keyword parameters of the plug-in's constructor into a pydantic model (their annotations are the types, their
defaults the defaults, unknown names refused unless the constructor takes ``**kwargs``), so the options are
checked when the config loads, against the code that will take them, with no second list to keep in step.

    >>> class Engine:
    ...     def __init__(self, model_path: str, *, max_batch_size: int = 16): ...
    >>> check_options(Engine, {"max_batch_size": "8"}, "engine.options", skip=("model_path",))
    {'max_batch_size': 8}
    >>> check_options(Engine, {"max_batch": 8}, "engine.options", skip=("model_path",))
    Traceback (most recent call last):
    ...
    ValueError: engine.options.max_batch: unknown key (known: max_batch_size)
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from mintgym.validation import one_line


def _hints(factory: Any) -> dict[str, Any]:
    target = factory.__init__ if inspect.isclass(factory) else factory
    try:
        return typing.get_type_hints(target)
    except Exception:  # noqa: BLE001 -- names only under TYPE_CHECKING: those parameters are not type-checked
        return {}


def options_model(factory: Any, skip: tuple[str, ...] = ()) -> type[BaseModel]:
    """A pydantic model of ``factory``'s keyword options (all but ``skip`` and ``self``)."""
    hints = _hints(factory)
    fields: dict[str, Any] = {}
    extra = "forbid"
    for param in inspect.signature(factory).parameters.values():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            extra = "allow"
        if param.name in skip or param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        hint = hints.get(param.name, Any)
        if param.default is inspect.Parameter.empty:  # given by the caller where the config does not set it
            fields[param.name] = (hint | None, None)
        else:
            fields[param.name] = (hint, param.default)
    name = getattr(factory, "__name__", "Options")
    return create_model(f"{name}Options", __config__=ConfigDict(extra=extra, arbitrary_types_allowed=True),
                        **fields)


def check_options(factory: Any, options: dict[str, Any], where: str, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """``options`` validated against ``factory``'s keyword parameters (values converted to their types, only
    the given keys kept); a ``ValueError`` of one line naming ``where.<key>`` and the problem. A parameter
    without a default may be left out (the caller gives it)."""
    model = options_model(factory, skip)
    try:
        checked = model.model_validate(options)
    except ValidationError as err:
        raise ValueError(one_line(err, options, model, prefix=where)) from None
    return {key: getattr(checked, key) if key in model.model_fields else value for key, value in options.items()}
