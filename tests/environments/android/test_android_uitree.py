"""uiautomator dumps (the schema of `uiautomator dump`) -> nodes, a11y text and tap targets."""

from __future__ import annotations

import pytest

from mintgym.environments.android import uitree


def test_parse_dump_reads_every_node_and_its_attributes(window_dump):
    nodes = uitree.parse_dump(window_dump)
    assert len(nodes) == 16
    switch = uitree.find(nodes, resource_id="switchWidget")
    assert switch is not None
    assert switch.class_name == "android.widget.Switch"
    assert switch.bounds == (890, 659, 1038, 715) and switch.center == (964, 687)
    assert switch.has("checkable") and not switch.has("checked")
    assert switch.parent is not None and switch.parent.resource_id == "android:id/widget_frame"


def test_labels_match_through_the_non_breaking_hyphen(window_dump):
    nodes = uitree.parse_dump(window_dump)
    wifi = uitree.find(nodes, "Wi-Fi")  # the dump says "Wi\u2011Fi"
    assert wifi is not None and wifi.text == "Wi\u2011Fi"
    # tapping a plain label taps its clickable row
    assert uitree.tap_target(wifi).bounds == (0, 596, 1080, 778)
    assert uitree.find(nodes, "wi-fi turns back", exact=False).text.startswith("Wi\u2011Fi turns")
    assert uitree.find(nodes, "Navigate up").content_desc == "Navigate up"
    assert uitree.find(nodes, "Bluetooth") is None
    assert uitree.find(nodes, "Hidden item") is None  # zero-sized nodes are not on screen
    assert uitree.find(nodes, "Search", class_name="EditText").has("focused")


def test_render_is_compact_and_keeps_what_an_agent_needs(window_dump):
    text = uitree.render(uitree.parse_dump(window_dump))
    lines = text.splitlines()
    assert any('TextView "Wi\u2011Fi" id=title (150,667) [63,638][237,697]' in line for line in lines)
    assert any("Switch id=switchWidget (964,687)" in line and "unchecked" in line for line in lines)
    assert any('desc="Navigate up"' in line and "clickable" in line for line in lines)
    assert "Hidden item" not in text
    assert len(lines) < 16  # plain layout containers are left out


def test_a_dump_with_a_status_line_before_it_still_parses(window_dump):
    nodes = uitree.parse_dump("UI hierchary dumped to: /sdcard/window_dump.xml\n" + window_dump)
    assert len(nodes) == 16


@pytest.mark.parametrize("bad", ["ERROR: null root node returned by UiTestAutomationBridge.", "<hierarchy><node"])
def test_bad_dumps_raise_value_error(bad):
    with pytest.raises(ValueError):
        uitree.parse_dump(bad)


def test_bounds_parsing():
    assert uitree.parse_bounds("[0,63][1080,2400]") == (0, 63, 1080, 2400)
    with pytest.raises(ValueError, match="bad uiautomator bounds"):
        uitree.parse_bounds("0,0,10,10")
