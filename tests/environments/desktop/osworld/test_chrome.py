"""OSWorld's Chrome steps and getters through the DevTools protocol of the session's own Chromium,
with pages served on the session's own loopback (the only network it has)."""

import asyncio
import json
import shutil

import httpx
import pytest
import pytest_asyncio

from mintgym.environments.desktop.osworld import chrome
from mintgym.environments.desktop.osworld.getters import GETTERS
from mintgym.environments.desktop.osworld.loader import parse_task
from mintgym.environments.desktop.osworld.steps import ConfigStepFailed, run_steps

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module"),
              pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is needed")]

PORT = 8123


def steps(*config):
    return parse_task({"id": "c", "instruction": "x", "config": list(config), "evaluator": {"func": "infeasible"}},
                      __import__("pathlib").Path("/x/chrome/c.json")).config


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(env):
    for name, title in (("a", "Page A"), ("b", "Page B")):
        env.write_bytes(f"~/www/{name}.html", f"<html><head><title>{title}</title></head>"
                                              f"<body><h1 id=h>{title}</h1></body></html>".encode())
    await env.launch(f"cd ~/www && exec python3 -m http.server {PORT} --bind 127.0.0.1", shell=True)
    for _ in range(50):
        if "ok" in (await env.run(f"curl -s -o /dev/null http://127.0.0.1:{PORT}/a.html && echo ok",
                                  shell=True)).stdout:
            break
        await asyncio.sleep(0.2)
    return f"http://127.0.0.1:{PORT}"


async def test_open_tabs_then_read_them_and_close_one(env, site):
    await run_steps(env, steps({"type": "chrome_open_tabs",
                                "parameters": {"urls_to_open": [f"{site}/a.html", f"{site}/b.html"]}}))
    tabs = await GETTERS["open_tabs_info"](env, {})
    urls = [t["url"] for t in tabs]
    assert f"{site}/a.html" in urls and f"{site}/b.html" in urls
    assert {"title": "Page B", "url": f"{site}/b.html"} in tabs
    active = await GETTERS["active_tab_info"](env, {})
    assert active["url"] == f"{site}/b.html" and "<h1 id=\"h\">Page B</h1>" in active["content"]
    # DevTools; the address bar: test_desktop_accessibility
    assert await GETTERS["active_tab_url"](env, {}) == f"{site}/b.html"
    from mintgym.environments.desktop.devtools import browser

    async with browser(env.devtools()) as handle:  # the user switches back to the first tab
        await next(p for p in chrome._pages(handle) if p.url.endswith("/a.html")).bring_to_front()
    assert (await GETTERS["active_tab_info"](env, {}))["title"] == "Page A"
    await run_steps(env, steps({"type": "chrome_close_tabs", "parameters": {"urls_to_close": [f"{site}/a.html"]}}))
    urls = [t["url"] for t in await GETTERS["open_tabs_info"](env, {})]
    assert f"{site}/a.html" not in urls and f"{site}/b.html" in urls


async def test_the_devtools_port_is_the_sessions_alone(env, host, site):
    await chrome.ensure_browser(env)
    bridge = env.devtools()
    await bridge.start()
    async with httpx.AsyncClient() as client:
        listed = (await client.get(f"{bridge.url}/json/list")).json()
    assert any(t["url"].startswith(site) for t in listed)
    other = await host.create({})
    try:
        await other.reset(None, 0)
        port = bridge.url.rsplit(":", 1)[1]
        for url in ("http://127.0.0.1:1337/json/list", f"{bridge.url}/json/list"):
            out = await other.run(f"curl -s -m 2 {url}; echo rc=$?", shell=True)
            assert "rc=7" in out.stdout or "rc=28" in out.stdout, (url, out.stdout)
        # not through the bridge either, from the session the browser belongs to
        out = await env.run(f"curl -s -m 2 http://127.0.0.1:{port}/json/list; echo rc=$?", shell=True)
        assert "webSocketDebuggerUrl" not in out.stdout or port == "1337"
    finally:
        await other.close()


async def test_a_page_the_session_cannot_reach_fails_the_step_with_its_url(env):
    with pytest.raises(ConfigStepFailed, match="127.0.0.1:9"):
        await run_steps(env, steps({"type": "chrome_open_tabs",
                                    "parameters": {"urls_to_open": ["http://127.0.0.1:9/nothing"]}}))


async def test_profile_getters_read_copies_of_the_profile_files(env):
    env.write_bytes("~/.config/google-chrome/Default/Bookmarks",
                    json.dumps({"roots": {"bookmark_bar": {"children": [{"name": "x", "url": "http://x/"}]}}}).encode())
    env.write_bytes("~/Desktop/site.desktop", b"[Desktop Entry]\nName=Site\n")
    assert (await GETTERS["bookmarks"](env, {}))["bookmark_bar"]["children"][0]["url"] == "http://x/"
    assert "Name=Site" in (await GETTERS["shortcuts_on_desktop"](env, {}))["site.desktop"]
    await env.run("ln -sf /etc/passwd ~/Desktop/evil.desktop", shell=True)
    assert "evil.desktop" not in await GETTERS["shortcuts_on_desktop"](env, {})


async def test_update_browse_history_writes_osworlds_rows_into_the_profile(env):
    await run_steps(env, steps({"type": "update_browse_history", "parameters": {"history": [
        {"url": "https://www.example.org/a", "title": "Example A", "visit_time_from_now_in_seconds": 3600},
        {"url": "https://www.example.org/b", "title": "Example B", "visit_time_from_now_in_seconds": 60}]}}))
    rows = await GETTERS["history"](env, {})
    assert [(url, title) for url, title, _ in rows] == [("https://www.example.org/a", "Example A"),
                                                         ("https://www.example.org/b", "Example B")]
    a, b = rows[-2][2], rows[-1][2]
    assert 3500 * 1e6 < b - a < 3600 * 1e6  # Chrome time: microseconds
