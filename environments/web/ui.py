"""DOM-reading helpers for oracles: find an element on the page, then act on it with pixel actions only.

An oracle reads where things are (``getBoundingClientRect`` via Playwright), and yields the shared
actions a person would take: scroll it into view, click its centre, select the field's text and type.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from mintgym.action_spaces import ActionModel, Click, Key, Scroll, Type

if TYPE_CHECKING:
    from mintgym.environments.web.env import WebEnvironment


async def wait_for(env: WebEnvironment, selector: str, timeout_s: float = 10.0) -> None:
    """Wait until ``selector`` is visible on the session's current page (across navigations)."""
    await env.page.wait_for_selector(selector, state="visible", timeout=timeout_s * 1000)


async def wait_js(env: WebEnvironment, predicate: str, arg=None, timeout_s: float = 10.0) -> None:
    """Wait until the JS function ``predicate`` is truthy on the current page (errors count as false:
    the document may be mid-navigation)."""
    guarded = f"(arg) => {{ try {{ return ({predicate})(arg); }} catch (e) {{ return false; }} }}"
    await env.page.wait_for_function(guarded, arg=arg, timeout=timeout_s * 1000)


_FIRST_BOX_JS = """(sel) => { for (const el of document.querySelectorAll(sel)) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) return [r.left + r.width / 2, r.top + r.height / 2]; }
  return null; }"""


async def center(env: WebEnvironment, selector: str) -> tuple[int, int] | None:
    """The viewport pixel at the centre of ``selector``'s first visible box, or None when none is visible."""
    box = await env.page.evaluate(_FIRST_BOX_JS, selector)
    return None if box is None else (int(box[0]), int(box[1]))


async def wait_for_box(env: WebEnvironment, selector: str, timeout_s: float = 10.0) -> bool:
    """Wait until some element ``selector`` matches has a box; False when none has one after ``timeout_s``.

    An image button or icon (``<img>``, or CSS ``content: url(...)``) has no box until its image has loaded."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    try:
        await wait_js(env, f"(sel) => ({_FIRST_BOX_JS})(sel) !== null", selector, timeout_s)
    except PlaywrightTimeout:
        return False
    return True


# True once no displayed image is still loading: an ``<img>`` not complete, or an element drawn from CSS
# ``content: url(...)`` that is laid out (has client rects) but has no width yet.
_IMAGES_LOADED_JS = """() => [...document.querySelectorAll('body *')].every((el) => {
  if (el.tagName === 'IMG') return el.complete || el.getClientRects().length === 0;
  if (!getComputedStyle(el).content.startsWith('url(')) return true;
  return el.getClientRects().length === 0 || el.getBoundingClientRect().width > 0; })"""


async def wait_for_images(env: WebEnvironment, timeout_s: float = 5.0) -> bool:
    """Wait until no displayed image on the page is still loading; False when one still is after ``timeout_s``.

    An image that arrives late moves what lies beside it: a point read before it loads can miss after."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    try:
        await wait_js(env, _IMAGES_LOADED_JS, None, timeout_s)
    except PlaywrightTimeout:
        return False
    return True


async def click(env: WebEnvironment, selector: str, clicks: int = 1, wait: bool = True) -> AsyncIterator[ActionModel]:
    """Scroll ``selector`` into view with the wheel if needed, then click its centre."""
    if wait:
        await wait_for(env, selector)
    await wait_for_box(env, selector)  # none after the wait: reported below
    await wait_for_images(env)  # one that never loads leaves the layout as it is: click where things are now
    width, height = env.screen_size
    for _ in range(8):
        point = await center(env, selector)
        if point is None:
            raise LookupError(f"oracle: nothing visible matches {selector!r} on {env.page.url}")
        x, y = point
        if 0 <= x < width and 0 <= y < height:
            yield Click(x=x, y=y, clicks=clicks)
            return
        yield Scroll(x=width // 2, y=height // 2, dx=0, dy=y - height // 2)
        await asyncio.sleep(0.2)  # wheel scrolling may animate
    raise LookupError(f"oracle: could not scroll {selector!r} into view")


async def fill(env: WebEnvironment, selector: str, text: str) -> AsyncIterator[ActionModel]:
    """Click the field, select what it holds and type ``text`` over it."""
    async for action in click(env, selector):
        yield action
    yield Key(keys=("ctrl", "a"))
    if text:
        yield Type(text=text)
    else:
        yield Key(keys=("backspace",))


_TEXT_JS = """([scope, text, tags]) => {
  const want = text.trim();
  const hits = [];
  for (const el of document.querySelectorAll(scope + ' *')) {
    if (tags && !tags.includes(el.tagName)) continue;
    if (el.textContent.trim() !== want) continue;
    if ([...el.children].some((c) => c.textContent.trim() === want && (!tags || tags.includes(c.tagName)))) continue;
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) hits.push([r.left + r.width / 2, r.top + r.height / 2]);
  }
  return hits.length ? hits[0] : null;
}"""


async def click_text(env: WebEnvironment, text: str, scope: str = "body",
                     tags: tuple[str, ...] | None = None, clicks: int = 1) -> AsyncIterator[ActionModel]:
    """Click the innermost visible element under ``scope`` whose text is exactly ``text``."""
    point = await env.page.evaluate(_TEXT_JS, [scope, text, list(tags) if tags else None])
    if point is None:
        raise LookupError(f"oracle: no visible element under {scope!r} reads {text!r}")
    yield Click(x=int(point[0]), y=int(point[1]), clicks=clicks)
