"""The grounded a11y side channel, the pruned DOM and set-of-marks, on real Chromium pages.

Boxes are checked against the screenshot itself (each coloured block's point shows its colour), plain,
scrolled and pinch-zoomed; the acceptance check runs MiniWoB's click-button through ``mintgym.make`` with the
default (local env server) backend.
"""

from __future__ import annotations

import re
import urllib.parse

import numpy as np
import pytest
import pytest_asyncio

from mintgym.action_spaces import Click, Key, Scroll, Type
from mintgym.env import registration
from mintgym.env.episode import Episode
from mintgym.environments.web import grounding

pytestmark = [pytest.mark.web]
in_module_loop = pytest.mark.asyncio(loop_scope="module")

COLORS = {"red": (255, 0, 0), "green": (0, 160, 0), "blue": (0, 0, 255)}
PAGE = """<!doctype html><title>Grounding</title><body style="margin:0;height:2000px;font:14px sans-serif">
<div id="red" title="red block"
     style="position:absolute;left:20px;top:30px;width:60px;height:40px;background:#ff0000"></div>
<div id="green" title="green block"
     style="position:absolute;left:200px;top:100px;width:30px;height:70px;background:#00a000"></div>
<div id="blue" title="blue block"
     style="position:absolute;left:400px;top:250px;width:90px;height:20px;background:#0000ff"></div>
<label style="position:absolute;left:20px;top:300px">Name <input id="name" value="Ada"></label>
<input id="pw" type="password" aria-label="Secret" value="hunter2" style="position:absolute;left:20px;top:340px">
<label style="position:absolute;left:20px;top:380px"><input id="cb" type="checkbox" checked> Remember me</label>
<label style="position:absolute;left:220px;top:380px"><input id="cb2" type="checkbox"> Newsletter</label>
<button id="off" disabled style="position:absolute;left:20px;top:420px">Disabled one</button>
<button id="menu" aria-expanded="false" style="position:absolute;left:200px;top:420px">Menu</button>
<select id="sel" aria-label="Size" style="position:absolute;left:320px;top:420px"><option>S</option>
  <option selected>M "medium"</option></select>
<button id="under" style="position:absolute;left:20px;top:470px">Under</button>
<div id="cover" style="position:absolute;left:0;top:460px;width:200px;height:40px;background:rgba(0,0,0,.1)"></div>
<button id="gone" style="display:none">Gone</button>
<span id="link" style="position:absolute;left:300px;top:470px;cursor:pointer">Clickable <b>span</b></span>
<h2 style="position:absolute;left:20px;top:520px;margin:0">Heading text</h2>
<button id="far" style="position:absolute;left:20px;top:1500px">Far below</button>
<script>window.pageSecret = 1;</script>
</body>"""
DATA_URL = "data:text/html," + urllib.parse.quote(PAGE)


@pytest_asyncio.fixture(loop_scope="module")
async def episode(env):
    """An episode on the fixture page (a web-app task's session, navigated to the page by the test)."""
    grounded = Episode(env, frozenset({"a11y", "text"}))
    await grounded.reset(registration.task("webapps/mail-send"), 0)
    await grounded.env.open(DATA_URL)
    return grounded


def _by_name(elements, name: str, role: str | None = None) -> grounding.Element:
    hits = [e for e in elements if e.name == name and (role is None or e.role == role)]
    assert len(hits) == 1, (name, [grounding.render_element(e) for e in elements])
    return hits[0]


async def _shot_and_elements(env):
    shot = await env.screenshot()
    channels = await env.side_channels(frozenset({"a11y"}))
    return shot, grounding.parse(channels["a11y"])


def _assert_blocks_on_their_pixels(shot, elements, scale: float = 1.0):
    for color, rgb in COLORS.items():
        block = _by_name(elements, f"{color} block")
        if block.point is None:
            continue
        x, y = block.point
        assert tuple(shot[y, x]) == rgb, (color, block, tuple(shot[y, x]))
        x1, y1, x2, y2 = block.box
        # the box's corners are the block's own pixels: just inside is the colour, just outside is not
        if 0 < x1 and 0 < y1 and x2 < shot.shape[1] and y2 < shot.shape[0]:
            assert tuple(shot[y1, x1]) == rgb and tuple(shot[y2 - 1, x2 - 1]) == rgb
            assert tuple(shot[y1 - 1, x1 - 1]) != rgb and tuple(shot[y2, x2]) != rgb
        expected_w = {"red": 60, "green": 30, "blue": 90}[color] * scale
        assert abs((x2 - x1) - expected_w) <= 1


@in_module_loop
async def test_boxes_are_screenshot_pixels_plain_scrolled_and_pinch_zoomed(episode):
    env = episode.env
    shot, elements = await _shot_and_elements(env)
    assert _by_name(elements, "red block").box == (20, 30, 80, 70)
    _assert_blocks_on_their_pixels(shot, elements)

    out = await episode.step(Scroll(x=400, y=300, dy=60))
    await env.page.wait_for_function("() => window.scrollY === 60")
    shot, elements = await _shot_and_elements(env)
    assert _by_name(elements, "red block").box == (20, -30, 80, 10)
    _assert_blocks_on_their_pixels(shot, elements)
    assert out.observation.a11y

    cdp = await env._cdp_for(env.page)
    await env.page.evaluate("() => window.scrollTo(0, 0)")
    await cdp.send("Emulation.setPageScaleFactor", {"pageScaleFactor": 2})
    try:
        await env.page.wait_for_function("() => window.visualViewport.scale === 2")
        shot, elements = await _shot_and_elements(env)
        assert _by_name(elements, "red block").box == (40, 60, 160, 140)
        _assert_blocks_on_their_pixels(shot, elements, scale=2.0)
    finally:
        await cdp.send("Emulation.setPageScaleFactor", {"pageScaleFactor": 1})


@in_module_loop
async def test_roles_names_values_and_states(episode):
    env = episode.env
    await env.page.evaluate("() => window.scrollTo(0, 0)")
    name = (await env.page.locator("#name").bounding_box())
    await episode.step(Click(x=int(name["x"] + 5), y=int(name["y"] + 5)))
    await episode.step(Key(keys=["end"]))
    out = await episode.step(Type(text=" L"))
    elements = grounding.parse(out.observation.a11y)
    field = _by_name(elements, "Name", "textbox")
    assert field.role == "textbox" and field.value == "Ada L" and "focused" in field.flags
    secret = _by_name(elements, "Secret")
    assert secret.value == "\u2022" * 7 and "hunter2" not in out.observation.a11y
    assert "checked" in _by_name(elements, "Remember me", "checkbox").flags
    assert "unchecked" in _by_name(elements, "Newsletter", "checkbox").flags
    assert _by_name(elements, "Name", "label").depth + 1 == field.depth  # the field sits inside its label
    assert "disabled" in _by_name(elements, "Disabled one").flags
    assert "collapsed" in _by_name(elements, "Menu").flags
    size = _by_name(elements, "Size")
    assert size.role == "combobox" and size.value == 'M "medium"'
    assert "covered" in _by_name(elements, "Under").flags
    assert "covered" not in _by_name(elements, "Menu").flags
    assert "clickable" in _by_name(elements, "Clickable span").flags
    heading = _by_name(elements, "Heading text")
    assert heading.role == "heading" and heading.level == 2
    far = _by_name(elements, "Far below")
    assert "offscreen" in far.flags and far.point is None and far.box[1] == 1500
    assert not [e for e in elements if e.name == "Gone"]
    with pytest.raises(ValueError, match="off screen"):
        grounding.click_point(out.observation.a11y, far.id)
    with pytest.raises(KeyError, match="no element"):
        grounding.click_point(out.observation.a11y, 10**6)


FRAMED = """<!doctype html><body style="margin:0">
<iframe style="position:absolute;left:50px;top:40px;width:300px;height:200px;border:5px solid black;padding:3px"
 srcdoc="<body style='margin:0'><button style='position:absolute;left:10px;top:20px;width:80px;height:30px;
 background:#f00;border:0;color:#f00'>Inside</button></body>"></iframe>
<div style="position:absolute;left:400px;top:10px"><template shadowrootmode="open">
 <button style="width:60px;height:20px">Shadow</button></template></div></body>"""


@in_module_loop
async def test_iframes_and_shadow_roots_are_walked_with_their_offsets(env):
    await env.open("data:text/html," + urllib.parse.quote(FRAMED))
    await env.page.frame_locator("iframe").locator("button").wait_for()
    shot, elements = await _shot_and_elements(env)
    inside = _by_name(elements, "Inside", "button")
    assert inside.box == (68, 68, 148, 98)  # iframe at 50 + border 5 + padding 3 + 10 inside it
    assert tuple(shot[inside.point[1], inside.point[0]]) == (255, 0, 0)
    assert _by_name(elements, "Shadow", "button").box[:2] == (400, 10)


@in_module_loop
async def test_ids_are_stable_across_steps_and_restart_at_reset(episode):
    env = episode.env
    first = {e.name: e.id for e in (await env.grounding()).elements}
    await episode.step(Key(keys=["tab"]))
    again = {e.name: e.id for e in (await env.grounding()).elements}
    assert again == first
    await env.page.evaluate("() => document.body.insertAdjacentHTML('afterbegin', '<button>New one</button>')")
    more = {e.name: e.id for e in (await env.grounding()).elements}
    assert more["New one"] > max(first.values()) and all(more[k] == v for k, v in first.items())
    obs, _ = await episode.reset(registration.task("miniwob/click-button"), seed=5)
    again, _ = await episode.reset(registration.task("miniwob/click-button"), seed=5)
    assert obs.a11y == again.a11y and min(e.id for e in grounding.parse(obs.a11y)) == 1


@in_module_loop
async def test_the_page_sees_no_ids_and_the_dom_is_untouched(episode):
    env = episode.env
    await env.open(DATA_URL)
    before = await env.page.evaluate("() => document.documentElement.outerHTML")
    snap = await env.grounding(html=True)
    assert snap.elements and snap.html
    assert await env.page.evaluate("() => document.documentElement.outerHTML") == before
    assert await env.page.evaluate("() => typeof globalThis.__mgGround") == "undefined"
    assert await env.page.evaluate("() => window.pageSecret") == 1  # the page's own world is the one evaluated


@in_module_loop
async def test_pruned_dom_channel(episode):
    env = episode.env
    channels = await env.side_channels(frozenset({"a11y", "dom"}))
    html, elements = channels["dom"], grounding.parse(channels["a11y"])
    assert "<script" not in html and "pageSecret" not in html and "Gone" not in html
    assert "hunter2" not in html and "\u2022" * 7 in html
    assert "style=" not in html and "<title" not in html
    for name in ("Disabled one", "Menu", "Far below"):
        element = _by_name(elements, name)
        assert re.search(rf'<button mg-id="{element.id}"[^>]*>{name}</button>', html), name
    small = await env.host.create({"dom_max_chars": 1000})
    try:
        await small.open(DATA_URL)
        await small.page.evaluate("() => document.body.insertAdjacentHTML('beforeend', '<p>filler "
                                  "text</p>'.repeat(200))")
        cut = (await small.side_channels(frozenset({"dom"})))["dom"]
        assert len(cut) <= 1000 + len("<!-- truncated -->") and cut.endswith("<!-- truncated -->")
    finally:
        await small.close()


@in_module_loop
async def test_side_channels_cost_nothing_when_off(host):
    env = await host.create({})
    try:
        ep = Episode(env)
        await ep.reset(registration.task("miniwob/click-button"), seed=0)
        await ep.step(Click(x=80, y=200))
        assert env._worlds == {} and env.last_grounding_s == 0.0  # no isolated world was ever made
    finally:
        await env.close()


def test_text_form_round_trips_odd_names():
    elements = (
        grounding.Element(1, "button", 'say "hi"\nnow \u2028 \\ \U0001f600', None, (1, 2, 30, 40), (15, 21),
                          frozenset({"focused", "covered"})),
        grounding.Element(2, "textbox", "", "", (-5, -6, 7, 8), (3, 4), frozenset(), depth=1),
        grounding.Element(3, "heading", "Title", None, (0, 900, 10, 920), None, frozenset({"offscreen"}), level=3),
    )
    text = grounding.render(grounding.Snapshot(elements, omitted=4))
    assert len(text.splitlines()) == 4 and text.endswith("... 4 more elements not listed")
    assert tuple(grounding.parse(text)) == elements
    assert grounding.click_point(text, 1) == (15, 21)
    with pytest.raises(ValueError, match="line 1"):
        grounding.parse("button Submit (1,2)")
    with pytest.raises(ValueError, match="unknown flags"):
        grounding.parse("[1] button [1,2][3,4] shiny")


# ---- set-of-marks ---------------------------------------------------------------------------------------------
@in_module_loop
async def test_set_of_marks_draws_a_numbered_mark_on_every_interactive_element(host):
    plain_env = await host.create({})
    marked_env = await host.create({"set_of_marks": True})
    try:
        plain, marked = Episode(plain_env, frozenset({"a11y"})), Episode(marked_env, frozenset({"a11y"}))
        task = registration.task("miniwob/click-button")
        obs_plain, _ = await plain.reset(task, seed=3)
        obs_marked, _ = await marked.reset(task, seed=3)
        assert obs_plain.a11y == obs_marked.a11y  # the legend: the marks are the a11y ids
        elements = grounding.parse(obs_marked.a11y)
        marks = [e for e in elements if e.interactive and e.point is not None]
        assert len(marks) >= 2
        diff = np.any(obs_plain.screenshot != obs_marked.screenshot, axis=2)
        for mark in marks:
            x1, y1, x2, y2 = mark.box
            assert diff[max(0, y1):y1 + 4, max(0, x1):x1 + 4].any(), mark  # the number's label at the corner
            assert diff[y2 - 1, x1 + 1:x2 - 1].mean() > 0.8, mark  # the box's bottom edge
        unmarked = [e for e in elements if not e.interactive]
        for text in unmarked:
            x, y = text.point
            assert not diff[y, x], text
        # an agent answers click(x, y) from a mark's box: the helper gives the point, the task is solved
        target = re.search(r'"([^"]+)"', obs_marked.instruction).group(1)
        mark = next(e for e in marks if e.role == "button" and e.name == target)
        x, y = grounding.click_point(obs_marked.a11y, mark.id)
        out = await marked.step(Click(x=x, y=y))
        assert out.terminated and out.reward == 1.0
    finally:
        await plain_env.close()
        await marked_env.close()


# ---- acceptance: click-button through mintgym.make and the local env server ---------------------------------
@pytest.fixture(scope="module")
def made():
    import mintgym

    env = mintgym.make("miniwob/click-button", side_channels=("a11y",))
    yield env
    env.close()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_click_button_box_contains_the_oracles_click_point(made, seed):
    obs, _ = made.reset(seed=seed)
    target = re.search(r'"([^"]+)"', obs["instruction"]).group(1)
    elements = grounding.parse(obs["a11y"])
    buttons = [e for e in elements if e.role == "button" and e.name == target]
    assert len(buttons) == 1, obs["a11y"]
    oracle = made.unwrapped.oracle_action()
    assert oracle["type"] == "click"
    x1, y1, x2, y2 = buttons[0].box
    assert x1 <= oracle["x"] < x2 and y1 <= oracle["y"] < y2, (buttons[0], oracle)
    _obs, reward, terminated, _truncated, _info = made.step(oracle)
    assert terminated and reward == 1.0


def test_the_dom_channel_reaches_the_client_through_the_default_backend():
    import mintgym

    env = mintgym.make("miniwob/click-button", side_channels=("dom",))
    try:
        obs, _info = env.reset(seed=0)
        assert obs["dom"].startswith("<body") and "button" in obs["dom"]
        assert env.observation_space.contains({**obs, "screenshot": np.asarray(obs["screenshot"])})
    finally:
        env.close()
