"""Each web session's own clipboard: copy, cut and paste keys act on it as Chromium would, page handlers and
page scripts see and write it, and no session pastes (or middle-click pastes) what another copied or selected."""

from __future__ import annotations

import asyncio
import http.server
import threading

import pytest
import pytest_asyncio

from mintgym.action_spaces import Click, Key
from mintgym.env import registration
from mintgym.environments.web import clipboard

pytestmark = [pytest.mark.web, pytest.mark.asyncio(loop_scope="module")]


def _at(top: int, left: int = 0, width: int = 300, height: int = 30) -> str:
    return f"position:absolute;left:{left}px;top:{top}px;width:{width}px;height:{height}px"


PAGE = f"""<!doctype html><body style="margin:0">
<textarea id="src" style="{_at(0, height=50)}"></textarea>
<input id="dst" style="{_at(60)}"><input id="short" maxlength="3" style="{_at(100)}">
<div id="ce" contenteditable style="{_at(140)}"></div>
<div id="rich" style="{_at(180)}"><b>bold</b> and <i>it</i></div>
<button id="write" style="{_at(220, 0, 140)}" onclick="navigator.clipboard.writeText('from writeText')">a</button>
<button id="exec" style="{_at(220, 160, 140)}"
  onclick="document.getElementById('src').select(); window.copied = document.execCommand('copy')">b</button>
<iframe id="frame" srcdoc="<input id=inner style='width:200px'>" style="{_at(260, height=40)}"></iframe>
<script>
  window.events = [];
  for (const type of ['keydown', 'copy', 'cut', 'paste', 'beforeinput', 'auxclick', 'mouseup'])
    document.addEventListener(type, (e) => events.push(type + (e.button === 1 ? ':middle' : '')));
</script></body>"""
SRC, DST, SHORT, CE, RICH, WRITE, EXEC, INNER = (
    (20, 20), (20, 75), (20, 115), (20, 155), (10, 190), (20, 235), (180, 235), (20, 280))


@pytest.fixture(scope="module")
def site():
    """A loopback site serving PAGE (an http origin: the async clipboard API needs a secure context)."""
    body = PAGE.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest_asyncio.fixture(loop_scope="module")
async def sessions(host, site):
    """Two sessions of one Chromium, each on its own copy of PAGE."""
    pair = [await host.create({"allow": [site]}) for _ in range(2)]
    for env in pair:
        await env.open(f"http://{site}/")
    yield pair
    for env in pair:
        await env.close()


async def _act(env, *actions) -> None:
    for action in actions:
        await env.execute(action)


async def _value(env, selector: str) -> str:
    return await env.evaluate_js("(s) => document.querySelector(s).value", selector)


async def _set_source(env, text: str) -> None:
    await env.evaluate_js("(t) => { document.getElementById('src').value = t; }", text)


def _click(point: tuple[int, int], **kw) -> Click:
    return Click(x=point[0], y=point[1], **kw)


def _keys(*keys: str) -> Key:
    return Key(keys=keys)


async def _copy_source(env, text: str, keys: tuple[str, ...] = ("ctrl", "c")) -> None:
    await _set_source(env, text)
    await _act(env, _click(SRC), _keys("ctrl", "a"), Key(keys=keys))


def names(keys: tuple[str, ...]) -> list[str | None]:
    return [c and c.name for c in clipboard.commands(keys)]


async def test_commands_follow_chromiums_linux_key_bindings():
    assert names(("ctrl", "c")) == names(("ctrl", "insert")) == ["copy"]
    assert names(("ctrl", "x")) == names(("shift", "delete")) == ["cut"]
    assert names(("ctrl", "v")) == names(("shift", "insert")) == ["paste"]
    assert names(("ctrl", "shift", "v")) == ["paste-plain"]
    assert names(("ctrl", "c", "v")) == ["copy", "paste"]
    for keys in (("ctrl", "alt", "v"), ("ctrl", "a"), ("v",), ("insert",), ("meta", "c"), ("ctrl", "shift", "c")):
        assert names(keys) == [None], keys
    assert names(("ctrl",)) == [None]  # a lone modifier is pressed like any other key
    assert clipboard.commands(("ctrl", "shift", "v"))[0].key == {
        "key": "V", "code": "KeyV", "keyCode": 86, "ctrl": True, "shift": True}


async def test_only_bounded_text_mappings_are_stored():
    board = clipboard.SessionClipboard()
    assert board.store({"text/plain": "a", "text/html": "<b>a</b>"}) and board.data["text/plain"] == "a"
    for bad in ("text", None, {"text/plain": 1}, {1: "x"}, {"text/plain": "x" * clipboard.MAX_CHARS}):
        assert not board.store(bad)
    assert board.data == {"text/plain": "a", "text/html": "<b>a</b>"}


async def test_copy_and_paste_insert_text_as_chromium_pastes_it(sessions):
    env, _ = sessions
    await _copy_source(env, "one\ntwo  three ")
    await _act(env, _click(DST), _keys("ctrl", "v"), _click(SHORT), _keys("shift", "insert"))
    assert await _value(env, "#dst") == "one two  three "  # a single-line field turns line breaks into spaces
    assert await _value(env, "#short") == "one"  # maxlength holds
    await _act(env, _click(SRC), _keys("ctrl", "a"), _keys("ctrl", "v"), _keys("ctrl", "v"))
    assert await _value(env, "#src") == "one\ntwo  three one\ntwo  three "  # replaces the selection, then at the caret
    events = await env.evaluate_js("() => window.events")
    assert events.count("copy") == 1 and events.count("paste") == 4 and events.count("beforeinput") == 4


async def test_cut_removes_the_selection_only_from_editable_text(sessions):
    env, _ = sessions
    await _set_source(env, "cut me")
    await _act(env, _click(SRC), _keys("ctrl", "a"), _keys("ctrl", "x"))
    assert await _value(env, "#src") == "" and env.clipboard.data == {"text/plain": "cut me"}
    await env.evaluate_js("""() => { document.activeElement.blur(); const r = document.createRange();
        r.selectNodeContents(document.getElementById('rich'));
        getSelection().removeAllRanges(); getSelection().addRange(r); }""")
    await _act(env, _keys("shift", "delete"))  # page text is not editable: the cut event fires, nothing is cut
    assert env.clipboard.data == {"text/plain": "cut me"}
    assert await env.evaluate_js("() => document.getElementById('rich').textContent") == "bold and it"


async def test_page_text_copies_as_html_and_pastes_rich_or_plain(sessions):
    env, _ = sessions
    await env.evaluate_js("""() => { const r = document.createRange();
        r.selectNodeContents(document.getElementById('rich'));
        getSelection().removeAllRanges(); getSelection().addRange(r); }""")
    await _act(env, _keys("ctrl", "insert"))
    assert env.clipboard.data == {"text/plain": "bold and it", "text/html": "<b>bold</b> and <i>it</i>"}
    await _act(env, _click(CE), _keys("ctrl", "v"))
    assert await env.evaluate_js("() => document.getElementById('ce').innerHTML") == "<b>bold</b> and <i>it</i>"
    await env.evaluate_js("() => { document.getElementById('ce').innerHTML = ''; }")
    await _act(env, _click(CE), _keys("ctrl", "shift", "v"))
    assert await env.evaluate_js("() => document.getElementById('ce').innerHTML") == "bold and it"


async def test_page_handlers_set_read_and_cancel_the_clipboard(sessions):
    env, _ = sessions
    await env.evaluate_js("""() => {
        document.addEventListener('copy', (e) => { e.clipboardData.setData('text/plain', 'set by the page');
                                                   e.preventDefault(); }, {once: true});
        document.addEventListener('paste', (e) => { window.seen = e.clipboardData.getData('text/plain'); }); }""")
    await _copy_source(env, "ignored")
    assert env.clipboard.data == {"text/plain": "set by the page"}
    await env.evaluate_js("() => document.addEventListener('paste', (e) => e.preventDefault(), {once: true})")
    await _act(env, _click(DST), _keys("ctrl", "a"), _keys("ctrl", "v"))
    assert await env.evaluate_js("() => window.seen") == "set by the page" and await _value(env, "#dst") == ""
    await env.evaluate_js("() => document.addEventListener('keydown', (e) => e.ctrlKey && e.key === 'c' && "
                          "e.preventDefault())")
    await _copy_source(env, "blocked")  # a page that cancels the keydown gets no copy, as in Chromium
    assert env.clipboard.data == {"text/plain": "set by the page"}


async def test_page_scripts_write_the_sessions_own_clipboard(sessions):
    env, other = sessions
    await _act(env, _click(WRITE))
    assert env.clipboard.data == {"text/plain": "from writeText"}
    await _set_source(env, "from execCommand")
    await _act(env, _click(EXEC))
    assert await env.evaluate_js("() => window.copied") is True
    assert env.clipboard.data == {"text/plain": "from execCommand"}
    await _act(other, _click(DST), _keys("ctrl", "a"), _keys("ctrl", "v"))
    assert "from" not in await _value(other, "#dst")


async def test_paste_goes_to_the_focused_frame(sessions):
    env, _ = sessions
    await _copy_source(env, "into the frame")
    await _act(env, _click(INNER), _keys("ctrl", "v"))
    frame = env.main_page.frames[1]
    assert await frame.evaluate("() => document.getElementById('inner').value") == "into the frame"


async def test_sessions_never_paste_what_another_copied_or_selected(host, site):
    envs = [await host.create({"allow": [site]}) for _ in range(4)]
    try:
        await asyncio.gather(*(env.open(f"http://{site}/") for env in envs))
        for i, env in enumerate(envs[:3]):  # every copy happens before any paste
            await _copy_source(env, f"text of session {i}")
        for env in envs:
            await _act(env, _click(DST), _keys("ctrl", "v"))
        assert [await _value(env, "#dst") for env in envs] == [f"text of session {i}" for i in range(3)] + [""]
        await _act(envs[0], _click(SRC), _keys("ctrl", "a"))  # the primary selection: text of session 0
        await _act(envs[3], _click(DST, button="middle"))
        assert await _value(envs[3], "#dst") == ""
        assert (await envs[3].evaluate_js("() => window.events"))[-2:] == ["mouseup:middle", "auxclick:middle"]
    finally:
        for env in envs:
            await env.close()


async def test_reset_empties_the_clipboard(sessions):
    env, _ = sessions
    await _copy_source(env, "last episode's")
    assert env.clipboard.data
    await env.reset(registration.task("miniwob/click-test"), 0)
    assert env.clipboard.data == {}
