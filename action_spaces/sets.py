"""Action sets: named subsets of the shared schema, one per domain, plus any custom ones.

An ActionSet validates actions (membership, required fields, coordinates on screen), renders its own
prompt section (:meth:`describe`) and parses model text (:meth:`parse`), all from the same definitions.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from mintgym.action_spaces import actions as A
from mintgym.action_spaces.errors import InvalidAction

if TYPE_CHECKING:
    from mintgym.action_spaces.frames import CoordinateFrame


@dataclass(frozen=True)
class ActionSet:
    """A named, ordered subset of action types."""

    name: str
    types: tuple[type[A.ActionModel], ...]
    description: str = ""
    #: Extra lines appended to the prompt section (domain hints).
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.types:
            raise ValueError(f"action set {self.name!r} has no action types")

    @functools.cached_property
    def type_names(self) -> tuple[str, ...]:
        return tuple(t.model_fields["type"].default for t in self.types)

    def __contains__(self, action_type: str) -> bool:
        return action_type in self.type_names

    def extend(self, name: str, *extra: type[A.ActionModel], description: str = "") -> ActionSet:
        """A new set with these types added (a custom set built on a domain one)."""
        types = self.types + tuple(t for t in extra if t not in self.types)
        return ActionSet(name, types, description or self.description, self.notes)

    def restrict(self, name: str, keep: Iterable[str]) -> ActionSet:
        """A new set with only the named types, in this set's order."""
        keep = set(keep)
        unknown = keep - set(self.type_names)
        if unknown:
            raise ValueError(f"action set {self.name!r} has no types {sorted(unknown)}")
        return ActionSet(name, tuple(t for t in self.types if t.model_fields["type"].default in keep),
                         self.description, self.notes)

    def build(self, data: Any) -> A.ActionModel:
        """Turn a JSON-like dict (or an action) into a typed action of this set."""
        if isinstance(data, dict) and isinstance(data.get("type"), str) and data["type"] not in self:
            self._not_in_set(data["type"])
        action = build_action(data, self.type_names)
        if action.type not in self:
            self._not_in_set(action.type)
        return action

    def _not_in_set(self, kind: str) -> None:
        if kind not in A.ACTION_TYPES:
            raise InvalidAction(f"unknown action type {kind!r}; expected one of {', '.join(self.type_names)}")
        raise InvalidAction(
            f"action {kind!r} is not in the {self.name!r} action set ({', '.join(self.type_names)})"
        )

    def validate(self, action: A.ActionModel | dict, screen_size: tuple[int, int] | None = None) -> A.ActionModel:
        """Check membership and that every coordinate lies on a screen of (width, height) pixels."""
        action = self.build(action)
        if screen_size is not None:
            width, height = screen_size
            for fx, fy in type(action).points:
                x, y = getattr(action, fx), getattr(action, fy)
                if not (0 <= x < width and 0 <= y < height):
                    raise InvalidAction(
                        f"{action.type}: point ({fx}={x}, {fy}={y}) is off the {width}x{height} screen"
                    )
        return action

    def describe(self, frame: CoordinateFrame | None = None,
                 screen_size: tuple[int, int] | None = None) -> str:
        """The prompt section that tells the model every action, its fields and an example."""
        from mintgym.action_spaces.prompt import describe_action_set

        return describe_action_set(self, frame, screen_size=screen_size)

    def parse(self, text: str, frame: CoordinateFrame | None = None,
              screen_size: tuple[int, int] | None = None) -> A.ActionModel:
        """Parse model text into one validated action of this set (the one shared parser)."""
        from mintgym.action_spaces.parser import parse_action

        return parse_action(text, self, frame=frame, screen_size=screen_size)


def build_action(data: Any, expected: Iterable[str] | None = None) -> A.ActionModel:
    """A typed action from a JSON-like dict (any type of the schema), or InvalidAction naming the problem."""
    if isinstance(data, A.ActionModel):
        return data
    names = ", ".join(expected if expected is not None else A.ACTION_TYPES)
    if not isinstance(data, dict):
        raise InvalidAction(f"an action must be a JSON object, got {type(data).__name__}")
    kind = data.get("type")
    if kind is None:
        raise InvalidAction(f"action has no 'type' field; expected one of {names}")
    if not isinstance(kind, str) or kind not in A.ACTION_TYPES:
        raise InvalidAction(f"unknown action type {kind!r}; expected one of {names}")
    try:
        return A.ACTION_TYPES[kind].model_validate(data)
    except ValidationError as err:
        raise InvalidAction(f"{kind}: {describe_validation_error(err)}") from None
    except InvalidAction as err:  # raised by a field validator outside pydantic's wrapping
        raise InvalidAction(f"{kind}: {err}") from None


def describe_validation_error(err: ValidationError) -> str:
    """pydantic's errors as one line that names each field and what is wrong with it."""
    parts = []
    for e in err.errors():
        where = ".".join(str(p) for p in e.get("loc", ())) or "action"
        msg = e.get("msg", "invalid")
        if e.get("type") == "missing":
            parts.append(f"missing field {where!r}")
        elif e.get("type") == "extra_forbidden":
            parts.append(f"unknown field {where!r}")
        else:
            value = e.get("input")
            got = repr(value)
            got = got if len(got) <= 40 else got[:37] + "..."
            parts.append(f"field {where!r}: {msg} (got {type(value).__name__} {got})")
    return "; ".join(parts)


_COMMON = (A.Type, A.Key, A.Zoom, A.Wait, A.Done)

WEB = ActionSet(
    "web",
    (A.Click, A.Move, A.Drag, A.Scroll) + _COMMON[:2] + (A.Goto, A.Tab) + _COMMON[2:],
    "Control a web browser with the mouse and keyboard.",
    notes=('When the task cannot be done, say so: done(success=False, answer="infeasible: <the reason>").',),
)
DESKTOP = ActionSet(
    "desktop",
    (A.Click, A.Move, A.Drag, A.Scroll) + _COMMON,
    "Control a Linux desktop with the mouse and keyboard.",
)
ANDROID = ActionSet(
    "android",
    (A.Tap, A.LongPress, A.Swipe, A.Scroll, A.Type, A.Key, A.Back, A.Home, A.OpenApp, A.Zoom, A.Wait, A.Done),
    "Control an Android phone through its touch screen and buttons.",
)
PYTOOL = ActionSet(
    "pytool",
    (A.Python, A.Zoom, A.Wait, A.Done),
    "Solve the visual task by running Python code; the task image is /task/image.png in the sandbox.",
)

DOMAIN_SETS: dict[str, ActionSet] = {s.name: s for s in (WEB, DESKTOP, ANDROID, PYTOOL)}


def action_set_for(domain: str) -> ActionSet:
    try:
        return DOMAIN_SETS[domain]
    except KeyError:
        raise ValueError(f"no action set for domain {domain!r}; known: {', '.join(DOMAIN_SETS)}") from None
