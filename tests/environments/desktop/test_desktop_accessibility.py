"""The desktop's AT-SPI tree: the per-session bus, the grounded ``a11y`` channel, and OSWorld's XML read by
OSWorld's own code (``check_accessibility_tree``, the Chrome getters that find the address bar)."""

from __future__ import annotations

import asyncio
import shutil

import numpy as np
import pytest

from mintgym import grounding
from mintgym.action_spaces import Click
from mintgym.env.episode import Episode
from mintgym.environments.desktop import accessibility
from mintgym.environments.desktop.osworld import tree_getters
from mintgym.environments.desktop.osworld.metric_loader import load_getter_module
from mintgym.environments.desktop.osworld.metrics import metric

in_module_loop = pytest.mark.asyncio(loop_scope="module")
needs_a11y = pytest.mark.skipif(shutil.which("Xvfb") is None or accessibility.missing_parts() is not None,
                                reason=f"needs Xvfb and AT-SPI ({accessibility.missing_parts()})")

CHROME_TREE = {"applications": [
    {"role": "application", "name": "Chromium", "children": [
        {"role": "frame", "name": "Shop - Chromium", "states": ["active", "showing", "visible"],
         "box": [0, 0, 1280, 720], "children": [
             {"role": "entry", "name": "Address and search bar", "states": ["editable", "focusable", "showing",
                                                                            "visible", "single_line"],
              "box": [246, 61, 517, 24], "text": "shop.example/cart?item=42"},
             {"role": "push button", "name": "Reload", "states": ["enabled", "sensitive", "showing", "visible"],
              "box": [88, 56, 34, 34], "actions": [["press", "", ""]]},
             {"role": "check box", "name": "Remember", "states": ["enabled", "sensitive", "showing", "visible",
                                                                  "checked", "focused"],
              "box": [1270, 700, 30, 30]},
             {"role": "push button", "name": "Hidden", "states": ["enabled"]},
         ]}]},
    {"role": "application", "name": "Thunderbird", "children": [
        {"role": "entry", "name": "Email address", "states": ["editable", "showing", "visible"],
         "box": [10, 10, 100, 20], "text": "anonym-x2024@outlook.com\ufffc"},
        {"role": "password text", "name": "Password", "states": ["editable", "showing", "visible"],
         "box": [10, 40, 100, 20]},
    ]},
], "nodes": 9, "truncated": False}


def test_osworld_xml_is_read_by_osworlds_own_check_accessibility_tree():
    xml = accessibility.osworld_xml(CHROME_TREE)
    rules = [  # the rules of OSWorld's thunderbird task 15c3b339
        {"xpath": "//application[@name='Thunderbird']//*[contains(text(), 'anonym-x2024@outlook.com') or "
                  "contains(@name, 'anonym-x2024@outlook.com')]"},
        {"xpath": "//application[@name='Thunderbird']//*[contains(@name, 'password') or contains(@name, 'Password')]"},
    ]
    assert metric("check_accessibility_tree")(xml, rules) == 1.0
    assert metric("check_accessibility_tree")(xml,
                                              [{"selectors": ["entry[st|focusable=true][name=\"Email\\ address\"]"],
                                                      "text": "x", "exact": True}]) == 0.0
    states = [{"selectors": ["check-box[st|checked=true][cp|screencoord=\"(1270, 700)\"]"]}]
    assert metric("check_accessibility_tree")(xml, states) == 1.0
    empty = accessibility.osworld_xml({"applications": []})
    assert metric("check_accessibility_tree")(empty, rules) == 0.0


def test_osworlds_active_url_getter_finds_the_address_bar_in_the_xml():
    get_url = load_getter_module("chrome").get_active_url_from_accessTree
    xml = accessibility.osworld_xml(CHROME_TREE, tree_getters.APP_NAMES)
    view = tree_getters.VMView(tree_xml=xml)
    assert get_url(view, {}) == "https://shop.example/cart?item=42"
    assert get_url(view, {"goto_prefix": "http://"}) == "http://shop.example/cart?item=42"
    assert load_getter_module("chrome").get_active_tab_url_parse(view, {"parse_keys": ["item"]}) == {"item": "42"}
    assert get_url(tree_getters.VMView(), {}) is None  # no tree: None, as OSWorld's controller gives


def test_grounded_snapshot_keeps_what_is_on_screen_with_states_and_points():
    snap = accessibility.snapshot(CHROME_TREE, (1280, 720))
    by_name = {e.name: e for e in snap.elements}
    assert "Hidden" not in by_name  # neither visible nor showing: nothing to click
    entry = by_name["Address and search bar"]
    assert entry.role == "textbox" and entry.value == "shop.example/cart?item=42"
    assert entry.box == (246, 61, 763, 85) and entry.point == (504, 72)
    assert by_name["Reload"].role == "button"
    remember = by_name["Remember"]
    assert {"checked", "focused"} <= remember.flags and remember.point == (1274, 709)  # clipped to the screen
    assert by_name["Password"].role == "textbox"
    assert grounding.parse(grounding.render(snap)) == list(snap.elements)
    assert grounding.click_point(grounding.render(snap), entry.id) == (504, 72)


def test_xml_survives_control_characters_and_odd_attribute_names():
    tree = {"applications": [{"role": "application", "name": "x\x01y", "attributes": {"bad name": "1", "ok": "\x02"},
                              "text": "a\x00b", "actions": [["do it", "d", ""]], "children": []}]}
    xml = accessibility.osworld_xml(tree)
    assert 'name="xy"' in xml and ">ab<" in xml and "do-it_desc" in xml and "bad name" not in xml


def test_a_malformed_dump_is_a_clear_error():
    with pytest.raises(ValueError, match="no JSON"):
        accessibility.parse_dump("Traceback ...")
    with pytest.raises(ValueError, match="applications"):
        accessibility.parse_dump("[]")


# ---- real sessions ----------------------------------------------------------------------------------------------

async def _wait_for(predicate, timeout: float = 30.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.3)


@needs_a11y
@in_module_loop
async def test_a11y_channel_boxes_are_where_clicks_land_in_a_real_gtk_app(host):
    from mintgym.env import registration

    env = await host.create({})
    try:
        episode = Episode(env, frozenset({"a11y"}))
        await episode.reset(registration.task("desktop/editor-save-v0"), seed=0)

        async def file_menu():
            elements = grounding.parse((await episode.observe()).a11y)
            return next((e for e in elements if e.role == "menuitem" and e.name == "File" and e.point), None)

        menu = await _wait_for(file_menu)
        editor = [e for e in grounding.parse((await episode.observe()).a11y) if e.role == "textbox"]
        assert editor and "focused" in editor[0].flags
        await episode.step(Click(x=menu.point[0], y=menu.point[1]))

        async def menu_open():
            elements = grounding.parse((await episode.observe()).a11y)
            return any(e.role == "menuitem" and e.name.strip().startswith("Save") and e.point for e in elements)

        assert await _wait_for(menu_open, 10.0)
    finally:
        await env.close()


@needs_a11y
@in_module_loop
async def test_the_tree_is_read_again_after_a_reset(host):
    """A reset kills the episode's bus; the next episode's apps must not try the dead one's address (the
    AT_SPI_BUS property the last bus left on the root window)."""
    env = await host.create({"accessibility": True})
    try:
        for _ in range(2):
            await env.reset(None, 0)
            await env.launch(["mousepad"])

            async def editor():
                tree = await env.accessibility_tree()
                return any(a["name"] == "mousepad" for a in tree["applications"])

            assert await _wait_for(editor)
    finally:
        await env.close()


@needs_a11y
@in_module_loop
async def test_no_bus_without_asking_and_the_channel_says_why(host):
    env = await host.create({})
    try:
        await env.reset(None, 0)
        assert not accessibility.bus_running(env.sandbox)
        with pytest.raises(accessibility.AccessibilityUnavailable, match="no AT-SPI bus"):
            await env.accessibility_tree()
        assert "no AT-SPI bus" in (await env.side_channels(frozenset({"a11y"})))["a11y"]
    finally:
        await env.close()


@needs_a11y
@in_module_loop
@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium")
async def test_osworlds_own_html_parse_getter_reads_the_active_tab_through_the_tree(host):
    env = await host.create({"accessibility": True})
    try:
        await env.reset(None, 0)
        env.write_bytes("~/shop.html", b"<title>Shop</title><p class='price'>42 EUR</p><p class='price'>7 EUR</p>"
                                       b"<input id='q' value='socks'>")
        page = f"file://{env.home}/shop.html"
        await env.launch(["google-chrome", "--remote-debugging-port=1337", page])

        async def address_bar():
            xml = await tree_getters.tree_xml(env)
            return xml if xml and "Address and search bar" in xml and "shop.html" in xml else None

        await _wait_for(address_bar, 60.0)
        get = tree_getters.GETTERS
        # Chromium's address bar shows a file URL without its scheme; OSWorld's getter puts goto_prefix first
        assert await get["active_url_from_accessTree"](env, {"goto_prefix": "file://"}) == page
        parsed = await get["active_tab_html_parse"](env, {
            "goto_prefix": "file://", "category": "class", "class_singleObject": {"price": "first"},
            "class_multiObject": {"price": {"1": "second"}}})
        assert parsed == {"second": "7 EUR", "first": "42 EUR"}
        shot = await env.screenshot()
        assert isinstance(shot, np.ndarray)
        snap = await env.grounding()
        bar = next(e for e in snap.elements if e.name == "Address and search bar")
        assert bar.role == "textbox" and "shop.html" in (bar.value or "")
    finally:
        await env.close()


@needs_a11y
@in_module_loop
async def test_set_of_marks_draws_the_frames_own_snapshot_on_a_real_gtk_app(host):
    """With ``som`` the screenshot carries a numbered box per interactive element, drawn from the snapshot
    taken with it, and that snapshot is the frame's a11y listing (its legend)."""
    from mintgym.env import registration

    env = await host.create({})
    try:
        episode = Episode(env, frozenset({"som", "a11y"}))
        await episode.reset(registration.task("desktop/editor-save-v0"), seed=0)

        async def marked():
            obs = await episode.observe()
            marks = [e for e in grounding.parse(obs.a11y) if e.interactive and e.point]
            return (obs, marks) if any(e.role == "menuitem" and e.name == "File" for e in marks) else None

        async def marked_on_a_still_screen():
            """A marked frame between two equal plain grabs: the app was not redrawing (a loaded CI box saw it
            still painting, so a third of the screen differed from a later grab)."""
            before = await env._call(env._grab_sync)
            found = await marked()
            after = await env._call(env._grab_sync)
            return (*found, after) if found and np.array_equal(before, after) else None

        obs, marks, plain = await _wait_for(marked_on_a_still_screen)  # plain: the same screen without marks
        changed = np.abs(obs.screenshot.astype(int) - plain.astype(int)).sum(axis=2) > 0
        x1, y1, x2, y2 = next(e for e in marks if e.name == "File").box
        assert changed[y1, x1:x2].any()  # the File menu's box outline is drawn
        assert changed.sum() < changed.size // 4  # marks, not a different screen
    finally:
        await env.close()
