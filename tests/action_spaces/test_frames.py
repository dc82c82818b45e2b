"""Coordinate frames: conversions both ways, the off-frame policy, smart_resize, the registry."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mintgym.action_spaces import Click, Drag, InvalidAction
from mintgym.action_spaces.frames import (
    Absolute,
    Normalized1000,
    Relative,
    ResizedAbsolute,
    frame_from_name,
    smart_resize,
)

SCREEN = (1920, 1080)


def test_absolute_is_identity_and_checks_the_screen():
    frame = Absolute()
    assert frame.to_screen(0, 0, SCREEN) == (0, 0)
    assert frame.to_screen(1919, 1079, SCREEN) == (1919, 1079)
    assert frame.from_screen(5, 7, SCREEN) == (5, 7)
    assert frame.to_screen(10.4, 10.6) == (10, 11)  # floats round to the nearest pixel
    with pytest.raises(InvalidAction, match="'x'=1920 is off the screen"):
        frame.to_screen(1920, 5, SCREEN)
    with pytest.raises(InvalidAction, match="'y'=-1"):
        frame.to_screen(0, -1, SCREEN)


def test_normalized_1000_maps_the_grid_onto_the_screen():
    frame = Normalized1000()
    assert frame.to_screen(0, 0, SCREEN) == (0, 0)
    assert frame.to_screen(500, 500, SCREEN) == (960, 540)
    assert frame.to_screen(1000, 1000, SCREEN) == (1919, 1079)  # the far edge is the last pixel
    assert frame.from_screen(960, 540, SCREEN) == (500, 500)
    assert frame.from_screen(1919, 1079, SCREEN) == (1000, 1000)
    for bad in ((1001, 0), (0, -1), (1000.5, 3)):
        with pytest.raises(InvalidAction, match="outside the normalized_1000 frame"):
            frame.to_screen(*bad, SCREEN)


def test_relative_takes_floats():
    frame = Relative()
    assert frame.float_coordinates
    assert frame.to_screen(0.5, 0.25, SCREEN) == (960, 270)
    assert frame.to_screen(1.0, 1.0, SCREEN) == (1919, 1079)
    x, y = frame.from_screen(960, 270, SCREEN)
    assert isinstance(x, float) and frame.to_screen(x, y, SCREEN) == (960, 270)
    with pytest.raises(InvalidAction, match="outside the relative frame"):
        frame.to_screen(1.01, 0.5, SCREEN)


def test_resized_absolute_scales_from_the_model_image():
    frame = ResizedAbsolute((1288, 728))
    assert frame.to_screen(0, 0, SCREEN) == (0, 0)
    assert frame.to_screen(644, 364, SCREEN) == (960, 540)
    assert frame.to_screen(1287, 727, SCREEN) == (1919, 1079)
    with pytest.raises(InvalidAction, match="x from 0 to 1287"):
        frame.to_screen(1288, 0, SCREEN)
    assert frame.spec == "resized_absolute:1288x728"


@pytest.mark.parametrize("value", [True, "3", None, float("nan"), float("inf"), [1]])
def test_non_numbers_are_refused_naming_the_field(value):
    for frame in (Absolute(), Normalized1000(), Relative(), ResizedAbsolute((100, 100))):
        with pytest.raises(InvalidAction, match="field 'x'"):
            frame.to_screen(value, 1, SCREEN)


def test_frames_other_than_absolute_need_the_screen_size():
    with pytest.raises(ValueError, match="needs the screen size"):
        Normalized1000().to_screen(1, 2)
    with pytest.raises(ValueError, match="positive"):
        Relative().to_screen(0.1, 0.2, (0, 10))


@settings(max_examples=200, deadline=None)
@given(w=st.integers(1, 5000), h=st.integers(1, 5000), data=st.data())
def test_round_trips(w, h, data):
    x, y = data.draw(st.integers(0, w - 1)), data.draw(st.integers(0, h - 1))
    for frame in (Absolute(), Relative()):
        assert frame.to_screen(*frame.from_screen(x, y, (w, h)), (w, h)) == (x, y)
    normalized = Normalized1000()
    nx, ny = normalized.to_screen(*normalized.from_screen(x, y, (w, h)), (w, h))
    assert abs(nx - x) <= -(-w // 1000) and abs(ny - y) <= -(-h // 1000)
    if w <= 1000 and h <= 1000:
        assert (nx, ny) == (x, y)
    mw, mh = data.draw(st.integers(1, 5000)), data.draw(st.integers(1, 5000))
    resized = ResizedAbsolute((mw, mh))
    rx, ry = resized.to_screen(*resized.from_screen(x, y, (w, h)), (w, h))
    assert abs(rx - x) <= -(-w // mw) and abs(ry - y) <= -(-h // mh)
    if mw >= w and mh >= h:
        assert (rx, ry) == (x, y)  # upscaled model image: lossless


def test_convert_action_maps_every_point_field():
    frame = Normalized1000()
    drag = frame.convert_action({"type": "drag", "x1": 0, "y1": 0, "x2": 500, "y2": 1000}, SCREEN)
    assert drag == Drag(x1=0, y1=0, x2=960, y2=1079)
    assert frame.convert_action(Click(x=500, y=500), SCREEN) == Click(x=960, y=540)
    assert Relative().convert_action({"type": "click", "x": 0.5, "y": 0.5, "button": "right"}, SCREEN) == \
        Click(x=960, y=540, button="right")
    back = frame.action_to_model(Drag(x1=0, y1=0, x2=960, y2=1079), SCREEN)
    assert back == {"type": "drag", "x1": 0, "y1": 0, "x2": 500, "y2": 1000}
    with pytest.raises(InvalidAction, match="'x2'=1001"):
        frame.convert_action({"type": "drag", "x1": 0, "y1": 0, "x2": 1001, "y2": 0}, SCREEN)


def test_smart_resize_matches_qwen_processor_rules():
    assert smart_resize((1920, 1080)) == (1932, 1092)
    assert smart_resize((1280, 720)) == (1288, 728)
    w, h = smart_resize((3840, 2160), max_pixels=1280 * 28 * 28)
    assert w % 28 == 0 and h % 28 == 0 and w * h <= 1280 * 28 * 28
    w, h = smart_resize((20, 20), min_pixels=56 * 56)
    assert w * h >= 56 * 56 and w % 28 == 0
    assert ResizedAbsolute.smart_resize((1280, 720)).model_size == (1288, 728)
    with pytest.raises(ValueError, match="aspect ratio"):
        smart_resize((10000, 10))


def test_registry_builds_frames_by_name_and_spec():
    assert frame_from_name("absolute") == Absolute()
    assert frame_from_name("normalized_1000") == Normalized1000()
    assert frame_from_name("relative") == Relative()
    assert frame_from_name("resized_absolute", model_size=(10, 20)) == ResizedAbsolute((10, 20))
    frame = ResizedAbsolute((1288, 728))
    assert frame_from_name(frame.spec) == frame
    with pytest.raises(ValueError, match="unknown coordinate frame 'bogus'; known: absolute"):
        frame_from_name("bogus")
    with pytest.raises(ValueError, match="model_size"):
        frame_from_name("resized_absolute")


def test_describe_is_one_line():
    for frame in (Absolute(), Normalized1000(), Relative(), ResizedAbsolute((1288, 728))):
        text = frame.describe(SCREEN)
        assert text.startswith("Coordinates are") and "\n" not in text
    assert "0 to 1000" in Normalized1000().describe()
    assert "1288x728" in ResizedAbsolute((1288, 728)).describe()
