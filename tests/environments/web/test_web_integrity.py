"""Reward integrity inside one web host: pages the agent might reach cannot change or read the state scorers
use, MiniWoB rewards come only from the episode's own document, cookies and storage stay per session, and
Chromium runs without root (with its own sandbox where the kernel allows)."""

from __future__ import annotations

import asyncio
import urllib.parse
from pathlib import Path

import psutil
import pytest

from mintgym.action_spaces import Click, Goto
from mintgym.env import registration
from mintgym.env.episode import Episode
from mintgym.environments.web.policy import UrlPolicy

pytestmark = [pytest.mark.web, pytest.mark.asyncio(loop_scope="module")]

KETTLE = registration.task("webapps/shop-cart-kettle")


def _data(html: str) -> str:
    return "data:text/html," + urllib.parse.quote(html)


def _button(js: str) -> str:
    return f"<body style='margin:0'><button style='width:800px;height:600px' onclick=\"{js}\">go</button>"


# ---- web apps ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, page", [
    ("text-plain form", lambda o: f"<form method=POST enctype=text/plain action='{o}/api/shop/cart'>"
                                  "<input name='{\"id\":3,\"qty\":1,\"x\":\"' value='\"}'>"
                                  "<button style='width:800px;height:600px'>go</button></form>"),
    ("urlencoded form", lambda o: f"<form method=POST action='{o}/api/shop/cart'><input name=id value=3>"
                                  "<input name=qty value=1><button style='width:800px;height:600px'>go</button>"
                                  "</form>"),
    ("no-cors fetch", lambda o: _button(f"fetch('{o}/api/shop/cart', {{method: 'POST', mode: 'no-cors', "
                                        "credentials: 'include', body: JSON.stringify({id: 3, qty: 1})})")),
    ("popup", lambda o: _button(f"window.open('{o}/api/shop/state')")),
    ("iframe", lambda o: _button(f"document.body.append(Object.assign(document.createElement('iframe'), "
                                 f"{{src: '{o}/api/shop/state'}}))")),
])
async def test_pages_of_the_agents_making_cannot_fill_the_cart(env, name, page):
    ep = Episode(env)
    await ep.reset(KETTLE, 0)
    await env.open(_data(page(env.host.server_origin)))  # as if the agent had reached such a page
    await ep.step(Click(x=400, y=300))
    assert env.host.apps.get(env.session_token).shop.cart == {}
    for frame in env.context.pages:
        assert "Steel Kettle" not in await _settled_content(frame), f"{name} read the shop's state"
    assert await KETTLE.evaluate(env) == 0.0


async def _settled_content(page) -> str:
    """The page's HTML once the navigation the click started (a form post) has finished."""
    for _ in range(20):
        try:
            await page.wait_for_load_state("load", timeout=5000)
            return await page.content()
        except Exception as err:  # Playwright: "the page is navigating and changing the content"
            if "navigating" not in str(err):
                raise
            await asyncio.sleep(0.1)
    return await page.content()


async def test_the_api_answers_only_its_own_apps_pages(env):
    ep = Episode(env)
    await ep.reset(KETTLE, 0)
    origin = env.host.server_origin
    call = """(body) => fetch('/api/shop/cart', {method: 'POST', headers: {'Content-Type': 'application/json'},
                                                  body: JSON.stringify(body)}).then((r) => r.status)"""
    assert await env.page.evaluate(call, {"id": 5, "qty": 1}) == 200  # the shop's own page: fine
    await env.open(f"{origin}/mail/index.html")  # same origin, another app's page
    assert await env.page.evaluate(call, {"id": 3, "qty": 1}) == 403
    await env.open(f"{origin}/miniwob/miniwob/click-test.html")
    assert await env.page.evaluate(call, {"id": 3, "qty": 1}) == 403
    out = await ep.step(Goto(url=f"{origin}/api/shop/state"))  # a typed URL is a navigation: refused
    assert "error" not in out.info and "answers only" in await _settled_content(env.page)
    assert env.host.apps.get(env.session_token).shop.cart == {5: 1}


async def test_session_cookie_is_http_only_strict_and_storage_is_per_session(host):
    a, b = await host.create({}), await host.create({})
    try:
        for env in (a, b):
            await Episode(env).reset(KETTLE, 0)
        (cookie,) = [c for c in await a.context.cookies() if c["name"] == "mgsid"]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert "mgsid" not in await a.page.evaluate("() => document.cookie")
        await a.page.evaluate("() => { localStorage.setItem('x', 'a'); document.cookie = 'mine=a'; }")
        assert await b.page.evaluate("() => [localStorage.getItem('x'), document.cookie]") == [None, ""]
    finally:
        await a.close()
        await b.close()


# ---- MiniWoB ----------------------------------------------------------------------------------------------
async def test_reward_is_read_only_from_the_episodes_own_document(env):
    ep = Episode(env)
    task = registration.task("miniwob/click-test")
    await ep.reset(task, 0)
    url = env.main_page.url
    # the same task page loaded again (a new document) with MiniWoB's globals set as if it were solved
    await env.open(url)
    await env.main_page.evaluate("() => { WOB_DONE_GLOBAL = true; WOB_RAW_REWARD_GLOBAL = 1; WOB_REWARD_GLOBAL = 1; }")
    assert await task.evaluate(env) == 0.0
    assert "left the task page" in env.task_info["miniwob"]["reason"]
    assert await task.finished(env)


async def test_a_popup_with_forged_globals_does_not_touch_the_reward(env):
    ep = Episode(env)
    task = registration.task("miniwob/click-test")
    await ep.reset(task, 0)
    forged = "<script>var WOB_DONE_GLOBAL=true, WOB_RAW_REWARD_GLOBAL=1, WOB_REWARD_GLOBAL=1;</script>"
    popup = await env.context.new_page()  # as if the task page had opened a window of the agent's making
    await popup.goto(_data(forged))
    assert env.page is popup
    assert not await task.finished(env) and await task.evaluate(env) == 0.0
    await popup.close()
    async for action in task.oracle(env):  # the real episode is still there and still solvable
        out = await ep.step(action)
    assert out.terminated and out.reward == 1.0


# ---- the browser process --------------------------------------------------------------------------------
async def test_chromium_runs_without_root_and_sandboxed_where_possible(host, env):
    await Episode(env).reset(KETTLE, 0)
    browsers = [p for p in psutil.Process().children(recursive=True) if "chrom" in p.name()]
    assert browsers, "no Chromium process found under this process"
    assert all(p.uids().effective != 0 and p.uids().real != 0 for p in browsers), \
        [(p.pid, p.uids()) for p in browsers]
    renderers = [p for p in browsers if "--type=renderer" in p.cmdline()]
    assert renderers
    if host.sandbox:
        for p in renderers:
            status = Path(f"/proc/{p.pid}/status").read_text()
            assert "Seccomp:\t2" in status, f"renderer {p.pid} has no seccomp-bpf sandbox"
    else:
        assert host.sandbox_error, "the host must say why Chromium runs without its sandbox"


# ---- policy -----------------------------------------------------------------------------------------------
async def test_goto_never_opens_pages_of_the_agents_making():
    policy = UrlPolicy(frozenset({8000}))
    for url in ("data:text/html,x", "DATA:text/html,x", " data:text/html,x", "blob:http://127.0.0.1:8000/u",
                "javascript:alert(1)", "\tjavascript:1", "file:///etc/passwd", "about:srcdoc", "http://[::1"):
        assert policy.check_goto(url) is not None, url
    assert policy.check_goto("about:blank") is None
    assert policy.check_goto("http://127.0.0.1:8000/shop/index.html") is None
    assert policy.check_goto("http://127.0.0.1:8001/") is not None


async def test_proxy_bypass_lists_only_what_the_policy_allows():
    assert UrlPolicy(frozenset({8000})).proxy_bypass() == "<-loopback>;127.0.0.1:8000"
    assert UrlPolicy(frozenset({8000}), allow=("Example.org",)).proxy_bypass() == \
        "<-loopback>;127.0.0.1:8000;example.org"
    assert UrlPolicy(frozenset({8000}), allow_loopback=True).proxy_bypass() == "127.0.0.1:8000"


@pytest.mark.parametrize("bad", [{"allow": ["*"]}, {"allow": ["x;<-loopback>"]}, {"allow": ["http://a.b/"]},
                                 {"viewport": [-5, 10]}, {"viewport": [0, 0]}, {"max_keystroke_chars": 10**9},
                                 {"miniwob_time_limit_ms": 10**12}])
async def test_session_options_are_bounded(host, bad):
    with pytest.raises(ValueError, match=f"bad web session options: .*{next(iter(bad))}"):
        await host.create(bad)
