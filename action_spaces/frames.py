"""Coordinate frames: how the numbers a model writes map to screen pixels, and back.

A model may have seen the screenshot as is (:class:`Absolute`), resized (:class:`ResizedAbsolute`), or
answer on a normalized grid (:class:`Normalized1000`, :class:`Relative`). The agent declares its frame
once; the parser converts every coordinate of a parsed action through it, and the renderer converts
screen pixels back into the model's frame for examples and trajectories.

The policy, the same for every frame:

* A model coordinate denotes a point of the image; the screen pixel is the one that contains it
  (``floor``), so pixel-index frames (Absolute, ResizedAbsolute) address a model pixel by its centre.
* A coordinate outside the model frame raises :class:`InvalidAction`: nothing is clamped silently.
  Only the far edge of a closed frame (``1000`` on the 0-1000 grid, ``1.0`` in Relative), which maps
  exactly onto the screen border, is moved to the last pixel.
* Non-numbers, booleans, NaN and infinities raise :class:`InvalidAction` naming the field.
* Every frame accepts floats: in a pixel frame ``120.6`` lands on pixel 121, the nearest one. Only
  Relative renders floats; the other frames render integers.
* ``from_screen`` gives each pixel's centre in the model frame, rounded to the frame's precision
  (integers, or 4 decimals for Relative).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from mintgym.action_spaces.actions import ActionModel
from mintgym.action_spaces.errors import InvalidAction

Number = int | float
Size = tuple[int, int]

#: Defaults of Qwen2-VL / Qwen2.5-VL's image processor.
QWEN_FACTOR = 28
QWEN_MIN_PIXELS = 56 * 56
QWEN_MAX_PIXELS = 14 * 14 * 4 * 16384


def check_size(size: Any, what: str = "screen_size") -> Size:
    """Return ``size`` as a (width, height) pair of positive ints, or raise ValueError."""
    if (not isinstance(size, (tuple, list)) or len(size) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size)):
        raise ValueError(f"{what} must be (width, height) with positive integers, got {size!r}")
    return int(size[0]), int(size[1])


def number(value: Any, field: str) -> Number:
    """``value`` as a finite int or float, or InvalidAction naming the field and the value's type."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidAction(f"field {field!r} must be a number, got {type(value).__name__} {_short(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidAction(f"field {field!r} must be a finite number, got {value!r}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class CoordinateFrame(abc.ABC):
    """Maps model coordinates to screen pixels of a (width, height) screen, and back."""

    #: Registry name (see :func:`frame_from_name`).
    name: ClassVar[str]
    #: True when model coordinates are fractions written as floats.
    float_coordinates: ClassVar[bool] = False
    #: Whether a model coordinate addresses a pixel by index (its centre is index + 0.5).
    pixel_index: ClassVar[bool] = False

    # -- what a subclass defines -------------------------------------------------------------
    @abc.abstractmethod
    def model_extent(self, screen_size: Size | None) -> tuple[Number, Number]:
        """The width and height of the model frame (the screen size, the resized size, 1000, 1.0)."""

    @abc.abstractmethod
    def describe(self, screen_size: Size | None = None) -> str:
        """One line for the prompt telling the model how to write coordinates."""

    @property
    def spec(self) -> str:
        """A string :func:`frame_from_name` turns back into this frame (stored with trajectories)."""
        return self.name

    @property
    def needs_screen_size(self) -> bool:
        return True

    # -- conversion ----------------------------------------------------------------------------
    def axis_to_screen(self, value: Any, extent: int, field: str, model_extent: Number) -> int:
        """One coordinate (field named ``field``) to a pixel index in [0, extent)."""
        v = number(value, field)
        closed = not self.pixel_index  # a fraction grid includes its far edge
        if v < 0 or (v > model_extent if closed else v >= model_extent):
            raise InvalidAction(f"field {field!r}={_short(value)} is {self.out_of_frame(field, model_extent)}")
        centre = v + 0.5 if self.pixel_index else v
        pixel = math.floor(centre * extent / model_extent)
        return min(max(pixel, 0), extent - 1)

    def out_of_frame(self, field: str, model_extent: Number) -> str:
        """The end of the off-frame message: where the coordinate should have been."""
        if self.pixel_index:
            return f"outside the image ({self.name} frame: {field} from 0 to {model_extent - 1})"
        return f"outside the {self.name} frame ({field} from 0 to {model_extent})"

    def axis_from_screen(self, pixel: int, extent: int, model_extent: Number) -> Number:
        """The centre of screen pixel ``pixel`` in model coordinates."""
        if isinstance(pixel, bool) or not isinstance(pixel, int):
            raise TypeError(f"screen pixel must be an int, got {pixel!r}")
        value = (pixel + 0.5) * model_extent / extent
        if self.pixel_index:
            value -= 0.5
        if self.float_coordinates:
            return min(max(round(value, 4), 0.0), float(model_extent))
        top = model_extent if not self.pixel_index else math.ceil(model_extent) - 1
        # ties round down: with floor in to_screen that keeps the round trip exact when upscaling
        return int(min(max(math.ceil(value - 0.5), 0), top))

    def to_screen(self, x: Any, y: Any, screen_size: Size | None = None) -> tuple[int, int]:
        """The screen pixel a model point (x, y) denotes; InvalidAction if it is outside the frame."""
        return self._field_to_screen("x", x, screen_size), self._field_to_screen("y", y, screen_size)

    def from_screen(self, x: int, y: int, screen_size: Size | None = None) -> tuple[Number, Number]:
        """The model coordinates of screen pixel (x, y) (its centre)."""
        screen = self._screen(screen_size)
        mw, mh = self.model_extent(screen)
        return self.axis_from_screen(x, screen[0], mw), self.axis_from_screen(y, screen[1], mh)

    def _screen(self, screen_size: Size | None) -> Size:
        if screen_size is None:
            raise ValueError(f"the {self.name} coordinate frame needs the screen size")
        return check_size(screen_size)

    def _field_to_screen(self, field: str, value: Any, screen_size: Size | None, axis: int | None = None) -> int:
        axis = (0 if field.startswith("x") else 1) if axis is None else axis
        screen = self._screen(screen_size)
        return self.axis_to_screen(value, screen[axis], field, self.model_extent(screen)[axis])

    def convert_fields(self, fields: Mapping[str, Any], points: tuple[tuple[str, str], ...],
                       screen_size: Size | None) -> dict[str, Any]:
        """A copy of ``fields`` with every present coordinate field converted to screen pixels."""
        out = dict(fields)
        for fx, fy in points:
            for axis, name in enumerate((fx, fy)):
                if name in out:
                    out[name] = self._field_to_screen(name, out[name], screen_size, axis)
        return out

    def convert_action(self, action: ActionModel | Mapping[str, Any], screen_size: Size | None = None) -> ActionModel:
        """The action with every coordinate (``type(action).points``) mapped from this frame to the screen.

        ``action`` may be a typed action (integer model coordinates) or a JSON-like dict, which is how
        float coordinates (:class:`Relative`) are given.
        """
        from mintgym.action_spaces.actions import ACTION_TYPES

        data = action.to_json() if isinstance(action, ActionModel) else dict(action)
        cls = ACTION_TYPES.get(data.get("type")) if isinstance(data.get("type"), str) else None
        if cls is None:
            raise InvalidAction(f"unknown action type {data.get('type')!r}")
        converted = self.convert_fields(data, cls.points, screen_size)
        from mintgym.action_spaces.sets import build_action

        return build_action(converted)

    def action_to_model(self, action: ActionModel, screen_size: Size | None = None) -> dict[str, Any]:
        """The action's JSON form with coordinates in this frame (the inverse of convert_action)."""
        data = action.to_json()
        for fx, fy in type(action).points:
            data[fx], data[fy] = self.from_screen(data[fx], data[fy], screen_size)
        return data

    def __str__(self) -> str:
        return self.spec


@dataclass(frozen=True)
class Absolute(CoordinateFrame):
    """Model coordinates are the screenshot's own pixels (identity)."""

    name: ClassVar[str] = "absolute"
    pixel_index: ClassVar[bool] = True

    @property
    def needs_screen_size(self) -> bool:
        return False

    def model_extent(self, screen_size: Size | None) -> tuple[Number, Number]:
        return self._screen(screen_size)

    def _field_to_screen(self, field: str, value: Any, screen_size: Size | None, axis: int | None = None) -> int:
        if screen_size is not None:
            return super()._field_to_screen(field, value, screen_size, axis)
        v = number(value, field)  # no screen known: round to the pixel, the action set checks the range
        return int(v) if isinstance(v, int) else math.floor(v + 0.5)

    def out_of_frame(self, field: str, model_extent: Number) -> str:
        return f"off the screen ({field} from 0 to {model_extent - 1})"

    def describe(self, screen_size: Size | None = None) -> str:
        size = f" ({screen_size[0]}x{screen_size[1]})" if screen_size else ""
        return ("Coordinates are integer pixels of the screenshot" + size + ": x counts from 0 at the left edge, "
                "y from 0 at the top edge.")


@dataclass(frozen=True)
class ResizedAbsolute(CoordinateFrame):
    """Model coordinates are pixels of the screenshot resized to ``model_size`` (width, height)."""

    model_size: Size
    name: ClassVar[str] = "resized_absolute"
    pixel_index: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "model_size", check_size(self.model_size, "model_size"))

    @classmethod
    def smart_resize(cls, screen_size: Size, *, factor: int = QWEN_FACTOR, min_pixels: int = QWEN_MIN_PIXELS,
                     max_pixels: int = QWEN_MAX_PIXELS) -> ResizedAbsolute:
        """The frame of a model whose processor resized the screenshot as Qwen2.5-VL's does."""
        return cls(smart_resize(screen_size, factor=factor, min_pixels=min_pixels, max_pixels=max_pixels))

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.model_size[0]}x{self.model_size[1]}"

    def model_extent(self, screen_size: Size | None) -> tuple[Number, Number]:
        return self.model_size

    def describe(self, screen_size: Size | None = None) -> str:
        w, h = self.model_size
        return (f"Coordinates are integer pixels of the screenshot as you see it ({w}x{h}): x from 0 to {w - 1} "
                f"left to right, y from 0 to {h - 1} top to bottom.")


@dataclass(frozen=True)
class Normalized1000(CoordinateFrame):
    """Model coordinates are integers on a 0-1000 grid over the screenshot (UI-TARS v1, CogAgent; UI-TARS-1.5
    answers in resized absolute pixels)."""

    name: ClassVar[str] = "normalized_1000"
    scale: ClassVar[int] = 1000

    def model_extent(self, screen_size: Size | None) -> tuple[Number, Number]:
        return self.scale, self.scale

    def describe(self, screen_size: Size | None = None) -> str:
        return (f"Coordinates are integers from 0 to {self.scale} relative to the screenshot: (0, 0) is the "
                f"top-left corner and ({self.scale}, {self.scale}) the bottom-right, whatever its size.")


@dataclass(frozen=True)
class Relative(CoordinateFrame):
    """Model coordinates are fractions of the screenshot's width and height, floats from 0 to 1."""

    name: ClassVar[str] = "relative"
    float_coordinates: ClassVar[bool] = True

    def model_extent(self, screen_size: Size | None) -> tuple[Number, Number]:
        return 1.0, 1.0

    def describe(self, screen_size: Size | None = None) -> str:
        return ("Coordinates are decimal fractions of the screenshot from 0.0 to 1.0: (0.0, 0.0) is the top-left "
                "corner and (1.0, 1.0) the bottom-right; x=0.5 is the horizontal middle.")


def smart_resize(screen_size: Size, *, factor: int = QWEN_FACTOR, min_pixels: int = QWEN_MIN_PIXELS,
                 max_pixels: int = QWEN_MAX_PIXELS) -> Size:
    """The (width, height) Qwen2-VL/Qwen2.5-VL's image processor resizes a screenshot to.

    Both sides become multiples of ``factor`` close to the original aspect ratio, with the pixel count
    kept within [min_pixels, max_pixels].
    """
    width, height = check_size(screen_size)
    if max(width, height) / min(width, height) > 200:
        raise ValueError(f"aspect ratio of {width}x{height} exceeds 200, which the processor rejects")
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return w, h


FRAMES: dict[str, type[CoordinateFrame]] = {
    cls.name: cls for cls in (Absolute, ResizedAbsolute, Normalized1000, Relative)
}


def frame_from_name(name: str, **params: Any) -> CoordinateFrame:
    """Build a frame by registry name: ``absolute``, ``normalized_1000``, ``relative``, or
    ``resized_absolute`` with ``model_size=(w, h)`` (also written ``"resized_absolute:1288x728"``)."""
    if not isinstance(name, str):
        raise TypeError(f"frame name must be a string, got {name!r}")
    base, _, arg = name.partition(":")
    if arg:
        try:
            w, h = (int(v) for v in arg.lower().split("x"))
        except ValueError:
            raise ValueError(f"bad frame spec {name!r}; expected e.g. 'resized_absolute:1288x728'") from None
        params = {**params, "model_size": (w, h)}
    try:
        cls = FRAMES[base]
    except KeyError:
        raise ValueError(f"unknown coordinate frame {name!r}; known: {', '.join(FRAMES)}") from None
    try:
        return cls(**params)
    except TypeError as err:
        raise ValueError(f"coordinate frame {base!r}: {err}") from None
