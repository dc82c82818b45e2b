"""Layer 1: what every section of a run config shares: unknown keys refused, no NaN or infinity, and no
``true`` where a number is expected (pydantic's lax mode would read it as 1); and :class:`ConfigError`."""

from __future__ import annotations

import typing
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Tag, ValidationInfo, field_validator


class ConfigError(ValueError):
    """A run config (file, key, type or value) that cannot be used; the message is one line naming the key."""


class Section(BaseModel):
    """A part of a run config."""

    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        if not _takes_bool(cls.model_fields[info.field_name].annotation) and _holds_bool(value):
            raise ValueError(f"true or false where a number is expected (got {value!r})")
        return value


class TaggedSection(BaseModel):
    """A member of a union of sections, told apart by a tag field (pydantic allows no field validator on
    the tag, so this one has none: its other fields are sections, strings or strict numbers)."""

    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)


def tagged_union(key: str, default: str, *members: type[TaggedSection]) -> Any:
    """The union of ``members`` told apart by their ``key`` field (a one-value ``Literal``), ``default`` where a
    mapping leaves it out; another value is one line naming the ones there are."""
    tags = [typing.get_args(m.model_fields[key].annotation)[0] for m in members]

    def tag_of(given: Any) -> str:
        return str(given.get(key, default) if isinstance(given, dict) else getattr(given, key, default))

    return Annotated[Union[tuple(Annotated[m, Tag(t)] for m, t in zip(members, tags, strict=True))],  # noqa: UP007
                     Discriminator(tag_of, custom_error_type="unknown_kind",
                                   custom_error_message=f"{key} must be one of {', '.join(map(repr, tags))}")]


def _takes_bool(annotation: Any) -> bool:
    """Whether a field of this type may hold a bool anywhere (``bool``, ``Any``, a dict of anything, a section)."""
    if annotation is bool or annotation is Any:
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True  # the section's own fields say
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is Literal:
        return any(isinstance(a, bool) for a in args)
    if typing.get_origin(annotation) is dict:
        return _takes_bool(args[1]) if len(args) == 2 else True
    return any(_takes_bool(a) for a in args if a is not Ellipsis)


def _holds_bool(value: Any) -> bool:
    """A bool, or a list or tuple holding one (``seeds: [true]``)."""
    return isinstance(value, bool) or (isinstance(value, (list, tuple)) and any(isinstance(v, bool) for v in value))
