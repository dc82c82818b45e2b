"""One web session: a Playwright browser context in the host's shared Chromium, driven by real input.

Every action of the WEB set becomes mouse or keyboard input through Playwright (``page.mouse``,
``page.keyboard``) or a navigation (``goto``); nothing clicks DOM elements directly. Screenshots come from
CDP ``Page.captureScreenshot`` (lossless PNG by default) at device scale factor 1, so screenshot pixels are
click pixels.

Page events the agent cannot see are handled, not left hanging:

* dialogs (alert, confirm, prompt, beforeunload): alerts and beforeunload are accepted, confirm and prompt
  dismissed; each is logged in :attr:`WebEnvironment.dialogs` and shown in the ``text`` side channel;
* popups (``window.open``, ``target=_blank``): the session switches to the new page, like a browser
  focusing a new tab; when it closes, the session returns to the page before it;
* a crashed tab or a dead browser: :meth:`alive` turns False and actions raise
  :class:`~mintgym.errors.EnvironmentCrashed`;
* requests to hosts outside the session's :class:`~mintgym.environments.web.policy.UrlPolicy` are aborted
  by context routing, and ``goto`` to them is an :class:`~mintgym.action_spaces.InvalidAction`.
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from mintgym.action_spaces import ActionModel, Click, Drag, Goto, InvalidAction, Key, Move, Scroll, Type, Wait
from mintgym.environments.web.keys import split_combo
from mintgym.environments.web.options import WebOptions
from mintgym.environments.web.policy import UrlPolicy
from PIL import Image
from playwright.async_api import BrowserContext, CDPSession, Page, Request, Route
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from mintgym.env.core import Environment, Task
from mintgym.errors import EnvironmentCrashed

if TYPE_CHECKING:
    from mintgym.environments.web.host import WebHost

log = logging.getLogger("mintgym.web")

_CLOSED_MARKERS = ("Target crashed", "has been closed", "Target closed", "Browser closed", "crashed")


@dataclass(frozen=True)
class DialogRecord:
    kind: str
    message: str
    handled: str  # "accepted" | "dismissed"


class WebEnvironment(Environment):
    """A browser context with one main page (plus popups) for one session."""

    domain: ClassVar[str] = "web"

    def __init__(self, host: WebHost, options: WebOptions, session_token: str):
        self.host = host
        self.options = options
        #: Identifies this session to the host's web apps (sent as the ``mgsid`` cookie).
        self.session_token = session_token
        self.policy = UrlPolicy(frozenset(host.own_ports), options.allow_loopback, tuple(options.allow))
        self._viewport = tuple(options.viewport)
        self.context: BrowserContext | None = None
        #: The page created with the session; tasks read their state from it.
        self.main_page: Page | None = None
        #: The page the agent sees and acts on (the main page, or a popup it opened).
        self.page: Page | None = None
        self._pages: list[Page] = []
        self._cdp: dict[Page, CDPSession] = {}
        self.dialogs: list[DialogRecord] = []
        self.blocked_requests: list[str] = []
        self.task: Task | None = None
        #: Facts the current task reports about its own scoring (e.g. MiniWoB's raw reward).
        self.task_info: dict[str, Any] = {}
        self._crashed: str | None = None
        self._closed = False
        self._nav_done = asyncio.Event()
        self._nav_done.set()

    # ---- lifecycle -----------------------------------------------------------------------------------
    def step_info(self) -> dict[str, Any]:
        """MiniWoB's own episode record (raw reward, the time-scaled reward, done) when one is running.

        When the agent left the MiniWoB task page, the episode ended as its failure: ``failure`` gives the
        reason and ``agent_fault`` marks it, so rollouts train on it and evaluations never retry it.
        """
        record = self.task_info.get("miniwob")
        if not record:
            return {}
        info: dict[str, Any] = {"miniwob": dict(record)}
        if record.get("left_task_page"):
            info.update(failure=record["reason"], agent_fault=True)
        return info

    @property
    def screen_size(self) -> tuple[int, int]:
        return (int(self._viewport[0]), int(self._viewport[1]))

    async def start(self) -> None:
        browser = self.host.browser
        self.context = await browser.new_context(
            viewport={"width": self.screen_size[0], "height": self.screen_size[1]},
            device_scale_factor=1,
            service_workers="block",
            accept_downloads=False,
            proxy={"server": self.host.proxy_sink, "bypass": self.policy.proxy_bypass()},
        )
        self.context.set_default_timeout(self.options.goto_timeout_s * 1000)
        # Requests to the host's own server skip the Python round trip: the driver matches this pattern.
        others = re.compile("^(?!" + re.escape(self.host.server_origin + "/") + ")")
        await self.context.route(others, self._route)
        await self.context.route_web_socket("**/*", self._route_ws)
        # HttpOnly: no page script reads it; Strict: no request from another site (a data: page) carries it.
        await self.context.add_cookies([{"name": "mgsid", "value": self.session_token, "url": self.host.server_origin,
                                         "httpOnly": True, "sameSite": "Strict"}])
        self.context.on("page", self._on_page)
        self.main_page = await self.context.new_page()
        self.page = self.main_page

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.host.forget(self)
        if self.context is not None:
            try:
                await asyncio.wait_for(self.context.close(), 10.0)
            except (TimeoutError, PlaywrightError) as err:  # the browser may already be gone
                log.debug("closing a browser context failed: %s", err)
        self._pages.clear()
        self._cdp.clear()

    async def alive(self) -> bool:
        return self._dead_reason() is None

    def _dead_reason(self) -> str | None:
        if self._closed:
            return "the session was closed"
        if self._crashed:
            return self._crashed
        if not self.host.browser_connected(self):
            return "the browser process died"
        if self.main_page is None or self.main_page.is_closed():
            return "the session's page was closed"
        return None

    def _ensure_alive(self) -> None:
        reason = self._dead_reason()
        if reason is not None:
            raise EnvironmentCrashed(f"web session is dead: {reason}")

    def _crash_from(self, err: BaseException) -> EnvironmentCrashed | None:
        """An EnvironmentCrashed for a Playwright error that means the page or browser is gone."""
        reason = self._dead_reason()
        if reason is None and any(m in str(err) for m in _CLOSED_MARKERS):
            reason = f"the page or browser went away: {str(err).splitlines()[0]}"
            self._crashed = reason
        return EnvironmentCrashed(f"web session is dead: {reason}") if reason else None

    def describe(self) -> dict[str, Any]:
        return {"isolation": "one browser context per session in a shared Chromium",
                "browser": self.host.browser_version, "viewport": list(self.screen_size),
                "screenshot": self.options.screenshot_format}

    # ---- page events ---------------------------------------------------------------------------------
    def _on_page(self, page: Page) -> None:
        first = not self._pages and self.main_page is None
        self._pages.append(page)
        page.on("crash", lambda _p: self._on_crash(page))
        page.on("dialog", self._on_dialog)
        page.on("close", lambda _p: self._on_close(page))
        self.page = page  # a popup takes the focus, as a new tab would
        if first:
            page.on("request", lambda r: self._on_request(page, r))
            page.on("load", lambda _p: self._nav_done.set())
            page.on("requestfailed", lambda r: self._on_request_end(page, r))
            page.on("requestfinished", lambda r: self._on_request_end(page, r))

    def _on_crash(self, page: Page) -> None:
        self._crashed = "the tab crashed" if page is self.main_page else "a popup tab crashed"

    def _on_close(self, page: Page) -> None:
        if page in self._pages:
            self._pages.remove(page)
        self._cdp.pop(page, None)
        if self.page is page:
            self.page = self._pages[-1] if self._pages else None

    async def _on_dialog(self, dialog) -> None:
        accept = dialog.type in ("alert", "beforeunload")
        self.dialogs.append(DialogRecord(dialog.type, dialog.message, "accepted" if accept else "dismissed"))
        try:
            await (dialog.accept() if accept else dialog.dismiss())
        except PlaywrightError as err:  # the page went away while the dialog was open
            log.debug("could not handle a %s dialog: %s", dialog.type, err)

    def _on_request(self, page: Page, request: Request) -> None:
        if request.is_navigation_request() and request.frame == page.main_frame:
            self._nav_done.clear()

    def _on_request_end(self, page: Page, request: Request) -> None:
        if request.is_navigation_request() and request.frame == page.main_frame:
            if request.failure is not None:
                self._nav_done.set()
            else:  # a 204 or a download never loads; a document does and sets the event on "load"
                asyncio.get_running_loop().call_later(self.options.settle_timeout_s / 2, self._nav_done.set)

    async def _route(self, route: Route) -> None:
        url = route.request.url
        reason = self.policy.check(url)
        try:
            if reason is None:
                await route.continue_()
            else:
                self.blocked_requests.append(url)
                await route.abort("blockedbyclient")
        except PlaywrightError as err:  # the page closed while the request was in flight
            log.debug("routing %s failed: %s", url, err)

    async def _route_ws(self, ws) -> None:
        if self.policy.check(ws.url) is None:
            ws.connect_to_server()
        else:
            self.blocked_requests.append(ws.url)
            await ws.close(code=1008, reason="blocked by the session's URL policy")

    # ---- episode -------------------------------------------------------------------------------------
    async def reset(self, task: Task, seed: int | None) -> None:
        self._ensure_alive()
        self.task = task
        self.task_info = {}
        self.dialogs.clear()
        self.blocked_requests.clear()
        for page in list(self._pages):
            if page is not self.main_page:
                try:
                    await page.close()
                except PlaywrightError as err:
                    log.debug("closing a popup failed: %s", err)
        self.page = self.main_page
        viewport = tuple(getattr(task, "viewport", self._viewport))
        if viewport != self._viewport:
            await self._guard(self.main_page.set_viewport_size({"width": viewport[0], "height": viewport[1]}))
            self._viewport = viewport

    async def open(self, url: str, wait_until: str = "load", timeout_s: float = 60.0) -> None:
        """Navigate the main page to ``url`` (for task setup; the policy still applies)."""
        self._ensure_alive()
        reason = self.policy.check(url)
        if reason is not None:
            raise ValueError(f"cannot open {url}: {reason}")
        self.page = self.main_page
        await self._guard(self.main_page.goto(url, wait_until=wait_until, timeout=timeout_s * 1000))

    async def _guard(self, coro):
        """Await a Playwright call, turning 'the page/browser is gone' into EnvironmentCrashed."""
        try:
            return await coro
        except PlaywrightError as err:
            crash = self._crash_from(err)
            if crash is not None:
                raise crash from None
            raise

    # ---- actions -------------------------------------------------------------------------------------
    async def execute(self, action: ActionModel) -> None:
        self._ensure_alive()
        page = self.page or self.main_page
        try:
            await self._dispatch(page, action)
            await self._settle(page)
        except InvalidAction:
            raise
        except PlaywrightError as err:
            crash = self._crash_from(err)
            if crash is not None:
                raise crash from None
            raise InvalidAction(f"{action.type}: the browser refused it: {str(err).splitlines()[0]}") from None

    async def _dispatch(self, page: Page, action: ActionModel) -> None:
        mouse, keyboard = page.mouse, page.keyboard
        if isinstance(action, Click):
            await mouse.move(action.x, action.y)
            for count in range(1, action.clicks + 1):
                await mouse.down(button=action.button, click_count=count)
                await mouse.up(button=action.button, click_count=count)
        elif isinstance(action, Move):
            await mouse.move(action.x, action.y)
        elif isinstance(action, Drag):
            await mouse.move(action.x1, action.y1)
            await mouse.down()
            await mouse.move(action.x2, action.y2, steps=8)
            await mouse.up()
        elif isinstance(action, Scroll):
            await mouse.move(action.x, action.y)
            await mouse.wheel(action.dx, action.dy)
        elif isinstance(action, Type):
            if len(action.text) <= self.options.max_keystroke_chars:
                await keyboard.type(action.text)
            else:  # 10,000 keystrokes take ~10 s; one insertText is the browser's paste/IME path
                await keyboard.insert_text(action.text)
        elif isinstance(action, Key):
            held, pressed = split_combo(action.keys)
            for key in held:
                await keyboard.down(key)
            try:
                for key in pressed:
                    await keyboard.press(key)
            finally:
                for key in reversed(held):
                    await keyboard.up(key)
        elif isinstance(action, Goto):
            await self._goto(page, action.url)
        elif isinstance(action, Wait):
            await asyncio.sleep(action.seconds)
        else:
            raise InvalidAction(f"action {action.type!r} is not supported by the web environment")

    async def _goto(self, page: Page, url: str) -> None:
        reason = self.policy.check_goto(url)
        if reason is not None:
            raise InvalidAction(f"goto refused: {reason}")
        timeout = self.options.goto_timeout_s
        try:
            await page.goto(url, timeout=timeout * 1000, wait_until="load")
        except PlaywrightTimeout:
            await self._stop_loading(page)
            raise InvalidAction(f"goto: {url} did not finish loading within {timeout:g} s; "
                                "loading was stopped and the page shows what arrived") from None
        except PlaywrightError as err:
            if self._crash_from(err) is not None:
                raise
            first = str(err).splitlines()[0]
            if "ERR_BLOCKED_BY_CLIENT" in first:
                raise InvalidAction(f"goto: {url} redirected to a host outside the session's policy") from None
            raise InvalidAction(f"goto: {url} could not be loaded: {first}") from None

    async def _stop_loading(self, page: Page) -> None:
        try:
            await (await self._cdp_for(page)).send("Page.stopLoading")
        except PlaywrightError as err:
            log.debug("stopping a page load failed: %s", err)
        self._nav_done.set()

    async def _settle(self, page: Page) -> None:
        """Let the page react: one animation frame, then any navigation the action started."""
        try:
            await asyncio.wait_for(
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))"),
                self.options.settle_timeout_s or None)
        except (TimeoutError, PlaywrightError):
            pass  # a navigation replaced the document, or the page is busy: the wait below covers both
        if not self._nav_done.is_set() and self.options.settle_timeout_s:
            try:
                await asyncio.wait_for(self._nav_done.wait(), self.options.settle_timeout_s)
            except TimeoutError:
                pass  # still loading: the agent sees the partial page and may wait

    # ---- observation ---------------------------------------------------------------------------------
    async def _cdp_for(self, page: Page) -> CDPSession:
        if page not in self._cdp:
            self._cdp[page] = await self.context.new_cdp_session(page)
        return self._cdp[page]

    async def screenshot(self) -> np.ndarray:
        self._ensure_alive()
        page = self.page or self.main_page
        params: dict[str, Any] = {"format": self.options.screenshot_format, "optimizeForSpeed": True}
        if self.options.screenshot_format == "jpeg":
            params["quality"] = self.options.jpeg_quality
        try:
            cdp = await self._cdp_for(page)
            reply = await asyncio.wait_for(cdp.send("Page.captureScreenshot", params), 5.0)
            data = base64.b64decode(reply["data"])
        except TimeoutError:  # e.g. no frame while a navigation commits: Playwright's path retries
            data = await self._fallback_screenshot(page)
        except PlaywrightError as err:
            crash = self._crash_from(err)
            if crash is not None:
                raise crash from None
            data = await self._fallback_screenshot(page)
        image = Image.open(io.BytesIO(data))
        shot = np.asarray(image.convert("RGB"), dtype=np.uint8)
        width, height = self.screen_size
        if shot.shape[:2] != (height, width):  # the page's own layout viewport may differ for a frame
            shot = _fit(shot, width, height)
        return shot

    async def _fallback_screenshot(self, page: Page, attempts: int = 3) -> bytes:
        """Playwright's own screenshot, retried: a loaded machine can miss a frame while a page commits a
        navigation ("Unable to capture screenshot"); a crashed page fails at once."""
        kind = self.options.screenshot_format
        extra = {"quality": self.options.jpeg_quality} if kind == "jpeg" else {}
        for attempt in range(attempts):
            try:
                return await page.screenshot(type=kind, timeout=25_000, **extra)
            except PlaywrightError as err:
                crash = self._crash_from(err)
                if crash is not None:
                    raise crash from None
                if attempt == attempts - 1:
                    raise EnvironmentCrashed(f"the page produced no screenshot in {attempts} tries: {err}") from None
                await asyncio.sleep(0.5 * (attempt + 1))
        raise AssertionError("unreachable")

    async def side_channels(self, wanted: frozenset[str]) -> dict[str, str]:
        self._ensure_alive()
        page = self.page or self.main_page
        out: dict[str, str] = {}
        if "text" in wanted:
            lines = [f"URL: {page.url}", f"Title: {await self._guard(page.title())}"]
            lines += [f"Dialog ({d.kind}, {d.handled}): {d.message}" for d in self.dialogs]
            out["text"] = "\n".join(lines)
        if "a11y" in wanted:
            out["a11y"] = await self._guard(page.locator("body").aria_snapshot(timeout=5000))
        return out

    # ---- task hooks ----------------------------------------------------------------------------------
    async def evaluate_js(self, script: str, arg: Any = None) -> Any:
        """Run ``script`` in the main page (task setup and scoring only; agents act through input)."""
        self._ensure_alive()
        return await self._guard(self.main_page.evaluate(script, arg))


def _fit(shot: np.ndarray, width: int, height: int) -> np.ndarray:
    out = np.full((height, width, 3), 255, dtype=np.uint8)
    h, w = min(height, shot.shape[0]), min(width, shot.shape[1])
    out[:h, :w] = shot[:h, :w]
    return out
