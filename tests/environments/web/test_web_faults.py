"""Bad input and hostile pages: refused navigation, huge text, off-screen clicks, pages that never load,
dialogs and popups all end in clear errors or handled states, never a hang."""

from __future__ import annotations

import asyncio
import time
import urllib.parse

import pytest
import pytest_asyncio

from mintgym.action_spaces import Click, Drag, Goto, Key, Move, Scroll, Type, Wait, Zoom
from mintgym.env import registration
from mintgym.env.episode import Episode

pytestmark = [pytest.mark.web, pytest.mark.asyncio(loop_scope="module")]

PAGE = """<!doctype html><title>Fixture</title><body style="margin:0;height:3000px">
<textarea id="t" style="position:absolute;left:10px;top:10px;width:300px;height:80px"></textarea>
<div id="drag" style="position:absolute;left:10px;top:120px;width:40px;height:40px;background:red"></div>
<button id="alert" style="position:absolute;left:10px;top:200px" onclick="alert('hello')">alert</button>
<button id="confirm" style="position:absolute;left:100px;top:200px"
  onclick="document.title = confirm('sure?') ? 'yes' : 'no'">confirm</button>
<button id="popup" style="position:absolute;left:200px;top:200px"
  onclick="window.open('about:blank').document.title = 'Popup'">popup</button>
<div id="log" style="position:absolute;left:10px;top:260px"></div>
<script>
  const log = (m) => { document.getElementById('log').textContent += m + ';'; };
  document.addEventListener('mousemove', (e) => { window.lastMove = [e.clientX, e.clientY]; });
  let dragging = false;
  document.getElementById('drag').addEventListener('mousedown', () => { dragging = true; });
  document.addEventListener('mouseup', (e) => {
    if (dragging) { window.dropped = [e.clientX, e.clientY]; }
    dragging = false;
  });
  document.addEventListener('keydown', (e) => { if (e.ctrlKey && e.key === 'b') { window.combo = true; } });
  document.addEventListener('dblclick', () => log('dbl'));
  document.addEventListener('contextmenu', (e) => { e.preventDefault(); log('right'); });
</script></body>"""
DATA_URL = "data:text/html," + urllib.parse.quote(PAGE)


@pytest_asyncio.fixture(loop_scope="module")
async def episode(env):
    ep = Episode(env, frozenset({"text", "a11y"}))
    await ep.reset(registration.task("webapps/mail-send"), 0)
    await env.open(DATA_URL)
    return ep


async def test_goto_to_the_internet_is_refused_with_a_clear_message(episode):
    before = episode.env.page.url
    out = await episode.step(Goto(url="http://93.184.216.34/"))
    assert "goto refused" in out.info["error"] and "not a loopback" in out.info["error"]
    out = await episode.step(Goto(url="file:///etc/passwd"))
    assert "scheme 'file'" in out.info["error"]
    out = await episode.step(Goto(url="chrome://crash"))
    assert "scheme 'chrome'" in out.info["error"]
    assert episode.env.page.url == before and await episode.env.alive()


async def test_page_initiated_requests_to_other_hosts_are_blocked(episode):
    env = episode.env
    result = await env.page.evaluate(
        "() => fetch('http://203.0.113.7/steal').then(() => 'reached', (e) => 'blocked')")
    assert result == "blocked"
    assert "http://203.0.113.7/steal" in env.blocked_requests


async def test_goto_within_the_host_and_allow_list(host):
    env = await host.create({"allow": ["127.0.0.1:1"]})
    try:
        ep = Episode(env)
        await ep.reset(registration.task("webapps/mail-send"), 0)
        out = await ep.step(Goto(url=f"{host.server_origin}/shop/index.html"))
        assert "error" not in out.info and "Corner Shop" in await env.page.title()
        out = await ep.step(Goto(url="http://127.0.0.1:1/"))  # allowed, but nothing listens there
        assert "could not be loaded" in out.info["error"]
    finally:
        await env.close()


async def test_typing_ten_thousand_characters_is_handled(episode):
    env = episode.env
    box = await env.page.locator("#t").bounding_box()
    await episode.step(Click(x=int(box["x"] + 20), y=int(box["y"] + 20)))
    out = await episode.step(Type(text="x" * 10_000))
    assert "error" not in out.info
    assert await env.page.evaluate("() => document.getElementById('t').value.length") == 10_000
    await episode.step(Key(keys=["ctrl", "a"]))
    await episode.step(Key(keys=["backspace"]))
    assert await env.page.evaluate("() => document.getElementById('t').value") == ""


async def test_off_screen_click_is_rejected_before_reaching_the_browser(episode):
    out = await episode.step(Click(x=5000, y=10))
    assert "off the 800x600 screen" in out.info["error"]
    out = await episode.step(Click(x=-1, y=10))
    assert "off the" in out.info["error"]


async def test_mouse_actions_are_real_input(episode):
    env = episode.env
    await episode.step(Move(x=400, y=300))
    assert await env.page.evaluate("() => window.lastMove") == [400, 300]
    await episode.step(Drag(x1=30, y1=140, x2=500, y2=400))
    assert await env.page.evaluate("() => window.dropped") == [500, 400]
    await episode.step(Key(keys=["ctrl", "b"]))
    assert await env.page.evaluate("() => window.combo") is True
    await episode.step(Click(x=600, y=500, clicks=2))
    await episode.step(Click(x=600, y=500, button="right"))
    assert await env.page.evaluate("() => document.getElementById('log').textContent") == "dbl;right;"
    await episode.step(Scroll(x=400, y=300, dy=500))
    await episode.step(Wait(seconds=0.3))
    assert await env.page.evaluate("() => window.scrollY") > 0
    out = await episode.step(Key(keys=["volumeup"]))
    assert "phone button" in out.info["error"]


async def test_dialogs_are_handled_and_reported(episode):
    env = episode.env
    await env.page.evaluate("() => window.scrollTo(0, 0)")
    for selector in ("#alert", "#confirm"):
        box = await env.page.locator(selector).bounding_box()
        out = await episode.step(Click(x=int(box["x"] + 5), y=int(box["y"] + 5)))
        assert "error" not in out.info
    assert [(d.kind, d.handled) for d in env.dialogs] == [("alert", "accepted"), ("confirm", "dismissed")]
    assert await env.page.title() == "no"
    assert "Dialog (alert, accepted): hello" in out.observation.text
    assert out.observation.a11y and "button" in out.observation.a11y


async def test_popup_takes_the_session_and_closing_it_returns(episode):
    env = episode.env
    main = env.page
    box = await main.locator("#popup").bounding_box()
    await episode.step(Click(x=int(box["x"] + 5), y=int(box["y"] + 5)))
    await asyncio.sleep(0.2)
    assert env.page is not main and "Popup" in (await episode.observe()).text
    await env.page.close()
    assert env.page is main
    await episode.reset(registration.task("webapps/mail-send"), 0)
    assert len(env.context.pages) == 1


async def test_a_page_that_never_loads_times_out_cleanly(host):
    async def never_answer(reader, writer):
        await asyncio.sleep(3600)

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    env = await host.create({"allow": [f"127.0.0.1:{port}"], "goto_timeout_s": 1.5})
    try:
        ep = Episode(env)
        await ep.reset(registration.task("webapps/mail-send"), 0)
        started = time.monotonic()
        out = await ep.step(Goto(url=f"http://127.0.0.1:{port}/slow"))
        assert "did not finish loading within 1.5 s" in out.info["error"]
        assert time.monotonic() - started < 20  # bounded, not a hang (generous on busy machines)
        assert await env.alive()
        out = await ep.step(Goto(url=f"{host.server_origin}/book/index.html"))
        assert "error" not in out.info
    finally:
        await env.close()
        server.close()


async def test_closing_sessions_leaks_no_context(host):
    before = len(host.browser.contexts)
    envs = [await host.create({}) for _ in range(3)]
    assert len(host.browser.contexts) == before + 3
    for e in envs:
        await e.close()
        await e.close()  # twice is fine
    assert len(host.browser.contexts) == before


async def test_unknown_session_option_is_a_clear_error(host):
    with pytest.raises(ValueError, match="bad web session options.*known options"):
        await host.create({"viewprot": [10, 10]})


async def test_screenshot_pixels_are_click_pixels(episode):
    env = episode.env
    await env.page.evaluate("() => window.scrollTo(0, 0)")
    obs = await episode.observe()
    assert obs.screenshot.shape == (600, 800, 3)
    assert await env.page.evaluate("() => window.devicePixelRatio") == 1
    assert tuple(obs.screenshot[140, 30]) == (255, 0, 0)  # the red box drawn at x 10-50, y 120-160
    assert await env.page.evaluate("([x, y]) => document.elementFromPoint(x, y).id", [30, 140]) == "drag"
    out = await episode.step(Zoom(x1=10, y1=120, x2=50, y2=160))
    assert out.observation.zoom == (10, 120, 50, 160)
    assert out.observation.screenshot.shape == (600, 800, 3)
    assert tuple(out.observation.screenshot[300, 400]) == (255, 0, 0)


async def test_a_navigation_left_in_flight_does_not_break_the_next_setup(host):
    """A page's own navigation (what a blocked redirect's error page or a meta refresh does after the agent's
    last step) that commits during a task's setup navigation: the setup goes again and lands where it should."""
    async def answer_late(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        await asyncio.sleep(1.5)
        body = b"<title>Late</title>late"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer_late, "127.0.0.1", 0)
    late = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/setup"
    env = await host.create({"allow": [urllib.parse.urlsplit(late).netloc]})
    try:
        await Episode(env).reset(registration.task("webapps/mail-send"), 0)
        await env.page.evaluate("setTimeout(() => { location.href = 'http://203.0.113.7/blocked'; }, 300)")
        await env.open(late)
        assert env.main_page.url == late and await env.main_page.title() == "Late"
    finally:
        await env.close()
        server.close()
