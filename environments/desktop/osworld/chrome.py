"""OSWorld's Chrome steps and getters, through the browser's DevTools protocol in the session.

The session's Chromium serves DevTools on its own loopback (port 1337, as OSWorld's tasks launch it);
the env server reaches it over :class:`~mintgym.environments.desktop.devtools.DevToolsBridge` with
Playwright's ``connect_over_cdp``, the client OSWorld's own setup and getters use. Profile files
(cookies, history, bookmarks, preferences) are copied out of the session like any other file and read
on the server. Return values follow OSWorld's getters of the same names.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

from mintgym.environments.desktop.devtools import DEVTOOLS_PORT, browser
from mintgym.environments.desktop.env import DesktopEnvironment

PROFILE = "~/.config/google-chrome/Default"
START_TIMEOUT = 30.0


class ChromeUnavailable(RuntimeError):
    """The session's browser could not be reached on its DevTools port; the message says why."""


async def ensure_browser(env: DesktopEnvironment) -> None:
    """Start ``google-chrome --remote-debugging-port=1337`` in the session unless something serves DevTools."""
    if await _live(env):
        return
    await env.launch(["google-chrome", f"--remote-debugging-port={DEVTOOLS_PORT}"])
    deadline = asyncio.get_running_loop().time() + START_TIMEOUT
    while not await _live(env):
        if asyncio.get_running_loop().time() > deadline:
            raise ChromeUnavailable(f"Chromium served no DevTools port {DEVTOOLS_PORT} within {START_TIMEOUT:g} s")
        await asyncio.sleep(0.3)


def _pages(handle: Any) -> list[Any]:
    return [page for context in handle.contexts for page in context.pages]


async def open_tabs(env: DesktopEnvironment, urls: list[str]) -> None:
    """``chrome_open_tabs``: each URL in a new tab of the session's browser, loaded."""
    await ensure_browser(env)
    async with browser(env.devtools()) as handle:
        context = handle.contexts[0] if handle.contexts else await handle.new_context()
        for url in urls:
            page = await context.new_page()
            try:
                await page.goto(url, timeout=60_000)
            except Exception as err:  # Playwright's errors carry the reason (no route, 404 is not one)
                raise ChromeUnavailable(f"could not open {url}: {str(err).splitlines()[0]}") from None


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


async def close_tabs(env: DesktopEnvironment, urls: list[str]) -> None:
    """``chrome_close_tabs``: close every tab showing one of the URLs."""
    await ensure_browser(env)
    async with browser(env.devtools()) as handle:
        for page in _pages(handle):
            if any(_same_url(page.url, url) for url in urls):
                await page.close()


async def _active_target(env: DesktopEnvironment) -> dict | None:
    """The tab the user sees: DevTools' ``/json/list`` orders page targets by when they were last active,
    most recent first (every tab of a window reports itself visible and focused under Xvfb)."""
    import httpx

    url = await env.devtools().start()
    async with httpx.AsyncClient(timeout=10.0) as client:
        targets = (await client.get(f"{url}/json/list")).json()
    pages = [t for t in targets if t.get("type") == "page"]
    return pages[0] if pages else None


async def _active_page(env: DesktopEnvironment, handle: Any) -> Any | None:
    target = await _active_target(env)
    if target is None:
        return None
    for page in _pages(handle):
        session = await page.context.new_cdp_session(page)
        try:
            info = await session.send("Target.getTargetInfo")
        finally:
            await session.detach()
        if info["targetInfo"]["targetId"] == target["id"]:
            return page
    return None


async def _live(env: DesktopEnvironment) -> bool:
    return await asyncio.to_thread(env.devtools().reachable)


async def open_tabs_info(env: DesktopEnvironment, config: dict) -> list[dict] | None:
    if not await _live(env):
        return None
    async with browser(env.devtools()) as handle:
        return [{"title": await page.title(), "url": page.url} for page in _pages(handle)]


async def active_tab_info(env: DesktopEnvironment, config: dict) -> dict | None:
    if not await _live(env):
        return None
    async with browser(env.devtools()) as handle:
        page = await _active_page(env, handle)
        if page is None:
            return None
        return {"title": await page.title(), "url": page.url, "content": await page.content()}


async def active_tab_url(env: DesktopEnvironment, config: dict) -> str | None:
    """The active tab's URL from DevTools (``active_url_from_accessTree`` reads the address bar instead:
    :mod:`.tree_getters`)."""
    info = await active_tab_info(env, config)
    return info["url"] if info else None


def _query(env: DesktopEnvironment, name: str, sql: str) -> list[tuple] | None:
    copy = env.fetch_file(f"{PROFILE}/{name}")
    if copy is None:
        return None
    try:
        with sqlite3.connect(f"file:{copy}?mode=ro", uri=True) as db:
            return db.execute(sql).fetchall()
    except sqlite3.Error:
        return None


async def cookie_data(env: DesktopEnvironment, config: dict) -> list[tuple] | None:
    return await asyncio.to_thread(_query, env, "Cookies", "SELECT * FROM cookies")


async def history(env: DesktopEnvironment, config: dict) -> list[tuple] | None:
    return await asyncio.to_thread(_query, env, "History", "SELECT url, title, last_visit_time FROM urls")


async def bookmarks(env: DesktopEnvironment, config: dict) -> dict | list | None:
    from mintgym.environments.desktop.osworld.getters import session_json

    data = await asyncio.to_thread(session_json, env, f"{PROFILE}/Bookmarks")
    return data.get("roots", []) if isinstance(data, dict) else []


async def shortcuts_on_desktop(env: DesktopEnvironment, config: dict) -> dict[str, str]:
    return await asyncio.to_thread(_shortcuts, env)


def _shortcuts(env: DesktopEnvironment) -> dict[str, str]:
    found = {}
    for path, _mtime in env.sandbox.list_files(env.home / "Desktop"):
        if path.suffix == ".desktop":
            text = env.read_text(path)
            if text is not None:
                found[path.name] = text
    return found


#: OSWorld's empty Chrome history database (the file cache may hold it; else the session's Chromium makes one).
EMPTY_HISTORY_URL = ("https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/chrome/"
                     "44ee5668-ecd5-4366-a6ce-c1c9b8d4e938/history_empty.sqlite?download=true")
#: Chrome's transition code OSWorld records visits with (a typed link, chain start and end).
VISIT_TRANSITION = 805306368


async def update_browse_history(env: DesktopEnvironment, items: list[dict], task_id: str = "shared") -> None:
    """``update_browse_history``: the profile's History database replaced by an empty one holding ``items``
    (``url``, ``title``, ``visit_time_from_now_in_seconds``), with OSWorld's rows and Chrome's timestamps
    (microseconds since 1601-01-01)."""
    from mintgym.environments.desktop.osworld import files

    try:
        empty = await asyncio.to_thread(files.fetch, EMPTY_HISTORY_URL, "history_empty.sqlite", task_id)
    except files.DownloadUnavailable:
        empty = await _fresh_history(env)
    await asyncio.to_thread(_write_history, env, empty, items)


def _write_history(env: DesktopEnvironment, empty: bytes, items: list[dict]) -> None:
    import datetime
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        db_path = f"{tmp}/History"
        with open(db_path, "wb") as out:
            out.write(empty)
        epoch = datetime.datetime(1601, 1, 1)
        with sqlite3.connect(db_path) as db:
            db.execute("DELETE FROM visits")  # empty, as OSWorld's template is (ours visited one page)
            db.execute("DELETE FROM urls")
            for item in items:
                ago = datetime.timedelta(seconds=float(item["visit_time_from_now_in_seconds"]))
                visited = datetime.datetime.now() - ago
                stamp = int((visited - epoch).total_seconds() * 1_000_000)
                row = db.execute("INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden) "
                                 "VALUES (?, ?, 1, 0, ?, 0)", (item["url"], item["title"], stamp))
                db.execute("INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration) "
                           "VALUES (?, ?, 0, ?, 0, 0)", (row.lastrowid, stamp, VISIT_TRANSITION))
        with open(db_path, "rb") as done:
            env.write_bytes(f"{PROFILE}/History", done.read())


async def _fresh_history(env: DesktopEnvironment, timeout: float = 30.0) -> bytes:
    """An empty History database made by the session's own Chromium in a throwaway profile."""
    scratch = "$HOME/.cache/mintgym/history-profile"
    await env.run(f"rm -rf {scratch}; timeout -s KILL {int(timeout)} chromium --headless=new --no-first-run "
                  f"--user-data-dir={scratch} file:///etc/hostname >/dev/null 2>&1 & "
                  f"for i in $(seq {int(timeout * 5)}); do [ -s {scratch}/Default/History ] && sleep 1 && break; "
                  "sleep 0.2; done; pkill -KILL -f -- '--user-data-dir=.*history-profile'; true",
                  shell=True, timeout=timeout + 10)
    data = await asyncio.to_thread(env.read_bytes, "~/.cache/mintgym/history-profile/Default/History")
    await env.run(f"rm -rf {scratch}", shell=True, timeout=30)
    if not data:
        raise ChromeUnavailable("Chromium made no History database for update_browse_history")
    return data


GETTERS = {
    "open_tabs_info": open_tabs_info, "active_tab_info": active_tab_info,
    "active_tab_url": active_tab_url,
    "cookie_data": cookie_data, "history": history, "bookmarks": bookmarks,
    "shortcuts_on_desktop": shortcuts_on_desktop,
}
