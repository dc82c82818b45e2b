"""The shared action schema: one typed model per action, JSON on the wire as ``{"type": "click", ...}``.

Coordinates are integer screen pixels of the observation the action was chosen on (x right, y down,
origin top-left). Models whose coordinates are normalized or resized are converted to these pixels by a
:class:`~mintgym.action_spaces.frames.CoordinateFrame` before an action is built.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from mintgym.action_spaces.keys import normalize_key

Coordinate = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]


class ActionModel(BaseModel):
    """Base of every action: strict (unknown fields are errors) and immutable.

    A field's ``examples`` (pydantic metadata) supply the value shown in the prompt's example; required
    fields that are not coordinates must have one.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: One-line description used in the model's prompt.
    summary: ClassVar[str] = ""
    #: Names of the fields that are screen coordinates, as (x, y) pairs.
    points: ClassVar[tuple[tuple[str, str], ...]] = ()

    def to_json(self) -> dict:
        return self.model_dump(mode="json")


class Click(ActionModel):
    summary: ClassVar[str] = "Click at pixel (x, y); button left/right/middle; clicks=2 double-clicks."
    points: ClassVar = (("x", "y"),)
    type: Literal["click"] = "click"
    x: Coordinate
    y: Coordinate
    button: Literal["left", "right", "middle"] = "left"
    clicks: int = Field(1, ge=1, le=3)


class Move(ActionModel):
    summary: ClassVar[str] = "Move the pointer to (x, y) without clicking (hover)."
    points: ClassVar = (("x", "y"),)
    type: Literal["move"] = "move"
    x: Coordinate
    y: Coordinate


class Drag(ActionModel):
    summary: ClassVar[str] = "Press the left button at (x1, y1), move to (x2, y2) and release."
    points: ClassVar = (("x1", "y1"), ("x2", "y2"))
    type: Literal["drag"] = "drag"
    x1: Coordinate
    y1: Coordinate
    x2: Coordinate
    y2: Coordinate


class Scroll(ActionModel):
    summary: ClassVar[str] = "Scroll at (x, y) by dx, dy pixels (dy > 0 scrolls down, dx > 0 right)."
    points: ClassVar = (("x", "y"),)
    type: Literal["scroll"] = "scroll"
    x: Coordinate
    y: Coordinate
    dx: int = Field(0, ge=-100_000, le=100_000)
    dy: int = Field(0, ge=-100_000, le=100_000, examples=[300])


def _unicode_text(text: str) -> str:
    """``text`` if it is valid Unicode: a lone surrogate cannot be typed, sent or recorded as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"text holds a lone surrogate at {err.start} (not valid Unicode)") from None
    return text


#: Text to type or choose: any valid Unicode, the empty string included.
Text = Annotated[str, AfterValidator(_unicode_text)]


class Type(ActionModel):
    summary: ClassVar[str] = "Type the text with the keyboard into the focused element."
    type: Literal["type"] = "type"
    #: May be empty: Mind2Web has TYPE steps whose value is empty (an empty type types nothing).
    text: Text = Field(examples=["hello world"])


class Select(ActionModel):
    summary: ClassVar[str] = "Choose the option with this label in the focused drop-down list."
    type: Literal["select"] = "select"
    text: Text = Field(examples=["Queen"])


class Key(ActionModel):
    summary: ClassVar[str] = 'Press a key or a combination held together, e.g. keys=["ctrl", "c"].'
    type: Literal["key"] = "key"
    keys: tuple[str, ...] = Field(min_length=1, max_length=6, examples=[("ctrl", "c")])

    @field_validator("keys", mode="before")
    @classmethod
    def _split_combo(cls, value):
        if isinstance(value, str):
            value = [value] if value == "+" else [part.strip() for part in value.split("+")]
        return value

    @field_validator("keys")
    @classmethod
    def _normalize(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(normalize_key(k) for k in value)


class Tap(ActionModel):
    summary: ClassVar[str] = "Tap the touch screen at (x, y)."
    points: ClassVar = (("x", "y"),)
    type: Literal["tap"] = "tap"
    x: Coordinate
    y: Coordinate


class LongPress(ActionModel):
    summary: ClassVar[str] = "Press and hold the touch screen at (x, y) for duration seconds."
    points: ClassVar = (("x", "y"),)
    type: Literal["long_press"] = "long_press"
    x: Coordinate
    y: Coordinate
    duration: float = Field(1.0, gt=0, le=30)


class Swipe(ActionModel):
    summary: ClassVar[str] = "Swipe from (x1, y1) to (x2, y2) over duration seconds."
    points: ClassVar = (("x1", "y1"), ("x2", "y2"))
    type: Literal["swipe"] = "swipe"
    x1: Coordinate
    y1: Coordinate
    x2: Coordinate
    y2: Coordinate
    duration: float = Field(0.3, gt=0, le=30)


class Back(ActionModel):
    summary: ClassVar[str] = "Press the system Back button."
    type: Literal["back"] = "back"


class Home(ActionModel):
    summary: ClassVar[str] = "Press the system Home button."
    type: Literal["home"] = "home"


class OpenApp(ActionModel):
    summary: ClassVar[str] = "Open the app with this name (or package name)."
    type: Literal["open_app"] = "open_app"
    app: str = Field(min_length=1, examples=["Clock"])


class Goto(ActionModel):
    summary: ClassVar[str] = "Navigate the browser to the url."
    type: Literal["goto"] = "goto"
    url: str = Field(min_length=1, examples=["https://example.com"])


class Tab(ActionModel):
    summary: ClassVar[str] = (
        'Browser tabs: op="new" opens a tab (at url, else blank) and shows it; op="switch" shows tab index; '
        'op="close" closes tab index (-1: the shown one). The open tabs are listed in the text channel.'
    )
    type: Literal["tab"] = "tab"
    op: Literal["new", "switch", "close"] = Field("new", examples=["switch"])
    #: A tab's position in the text channel's list (0 is the task's own tab); -1 means the tab shown now.
    index: int = Field(-1, ge=-1, le=63, examples=[1])
    url: str | None = None

    def problem(self) -> str | None:
        """Why this combination of fields means nothing (None when it is well-formed).

        Kept out of pydantic validation so that every field value stays independently valid (the
        schema, the prompt and the parser treat fields one by one); environments call this first.
        """
        if self.op == "switch" and self.index < 0:
            return 'tab: op="switch" needs the index of the tab to show, e.g. tab(op="switch", index=1)'
        if self.op == "new" and self.index != -1:
            return 'tab: op="new" takes no index (the new tab goes last and is shown)'
        if self.op != "new" and self.url is not None:
            return f'tab: url is only for op="new", not op="{self.op}"'
        return None


class Python(ActionModel):
    summary: ClassVar[str] = "Run Python code in the sandbox; its output is shown in the next screenshot."
    type: Literal["python"] = "python"
    code: str = Field(min_length=1, examples=["print(2 + 2)"])


class Zoom(ActionModel):
    summary: ClassVar[str] = "Show the region (x1, y1)-(x2, y2) enlarged in the next observation."
    points: ClassVar = (("x1", "y1"), ("x2", "y2"))
    type: Literal["zoom"] = "zoom"
    x1: Coordinate
    y1: Coordinate
    x2: Coordinate
    y2: Coordinate


class Wait(ActionModel):
    summary: ClassVar[str] = "Wait for the given number of seconds."
    type: Literal["wait"] = "wait"
    seconds: float = Field(1.0, ge=0, le=60, examples=[2.0])


class Done(ActionModel):
    summary: ClassVar[str] = "End the episode, with the answer if the task asks for one."
    type: Literal["done"] = "done"
    answer: str | None = Field(None, examples=["42"])
    success: bool = True


ACTION_TYPES: dict[str, type[ActionModel]] = {
    cls.model_fields["type"].default: cls
    for cls in (Click, Move, Drag, Scroll, Type, Select, Key, Tap, LongPress, Swipe, Back, Home, OpenApp,
                Goto, Tab, Python, Zoom, Wait, Done)
}

Action = Annotated[
    Click | Move | Drag | Scroll | Type | Select | Key | Tap | LongPress | Swipe | Back | Home | OpenApp | Goto | Tab
    | Python | Zoom
    | Wait | Done,
    Field(discriminator="type"),
]

ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)
