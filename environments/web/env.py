"""One web session: a Playwright browser context in the host's shared Chromium, driven by real input.

Every action of the WEB set becomes mouse or keyboard input through Playwright (``page.mouse``,
``page.keyboard``) or a navigation (``goto``); nothing clicks DOM elements directly, except where real input
would reach Chromium's process-wide clipboards: the copy, cut and paste keys and the middle button fire the
page's events themselves (:mod:`.clipboard`). Screenshots come from CDP ``Page.captureScreenshot`` (lossless
PNG by default) at device scale factor 1, so screenshot pixels are click pixels.

Page events the agent cannot see are handled, not left hanging:

* dialogs (alert, confirm, prompt, beforeunload): alerts and beforeunload are accepted, confirm and prompt
  dismissed; each is logged in :attr:`WebEnvironment.dialogs` and shown in the ``text`` side channel;
* the clipboard: each session has its own (:mod:`.clipboard`); the agent's copy, cut and paste keys and middle
  clicks never read Chromium's process-wide clipboard or primary selection;
* popups (``window.open``, ``target=_blank``): the session switches to the new page, like a browser
  focusing a new tab; when it closes, the session returns to the page before it;
* tabs: the ``tab`` action opens (within the URL policy), shows and closes tabs; tab 0 is the task's own
  page and cannot be closed, and tasks read their state from it whichever tab is shown;
* a crashed tab or a dead browser: :meth:`alive` turns False and actions raise
  :class:`~mintgym.errors.EnvironmentCrashed`;
* requests to hosts outside the session's :class:`~mintgym.environments.web.policy.UrlPolicy` are aborted
  by context routing, and ``goto`` to them is an :class:`~mintgym.action_spaces.InvalidAction`.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from PIL import Image
from playwright.async_api import BrowserContext, CDPSession, Page, Request, Route
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from mintgym.action_spaces import ActionModel, Click, Drag, Goto, InvalidAction, Key, Move, Scroll, Tab, Type, Wait
from mintgym.env.core import Environment, Task
from mintgym.environments.web import clipboard, grounding
from mintgym.environments.web.declaration import DECLARATION
from mintgym.environments.web.keys import split_combo
from mintgym.environments.web.options import WebOptions
from mintgym.environments.web.policy import UrlPolicy
from mintgym.errors import EnvironmentCrashed

if TYPE_CHECKING:
    from mintgym.environments.web.host import WebHost

log = logging.getLogger("mintgym.web")

_CLOSED_MARKERS = ("Target crashed", "has been closed", "Target closed", "Browser closed", "crashed")
#: Tabs a session may hold open at once (the task's own tab included).
MAX_TABS = 8
SETUP_NAVIGATION_TRIES = 3  # a task's setup navigation, when a leftover navigation interrupts it
_INTERRUPTED_MARKERS = ("interrupted by another navigation", "net::ERR_ABORTED")
#: Side channels this environment can fill (``dom`` once the core carries it).
WEB_SIDE_CHANNELS = frozenset(DECLARATION.channels or ())


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
        #: Per page: its main frame id and the execution context id of the grounding's isolated world.
        self._worlds: dict[Page, tuple[str, int | None]] = {}
        #: The snapshot taken with the last screenshot (set-of-marks), handed to the side channels of that frame.
        self._frame_snapshot: tuple[Page, grounding.Snapshot] | None = None
        self._reset_ids = True
        #: The grounded channels this session's observations asked for last (learnt from side_channels()):
        #: screenshot() then takes their snapshot while the frame is captured instead of after it.
        self._grounded_wanted: frozenset[str] = frozenset()
        #: Seconds the last grounding snapshot took (one round trip to the page).
        self.last_grounding_s = 0.0
        self.dialogs: list[DialogRecord] = []
        #: This session's clipboard (Chromium's own is shared by every context, so it is never read).
        self.clipboard = clipboard.SessionClipboard()
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
        await self.clipboard.install(self.context)
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
                "screenshot": self.options.screenshot_format, "side_channels": sorted(WEB_SIDE_CHANNELS),
                "set_of_marks": self.options.set_of_marks}

    # ---- page events ---------------------------------------------------------------------------------
    def _on_page(self, page: Page) -> None:
        self._pages.append(page)
        page.on("crash", lambda _p: self._on_crash(page))
        page.on("dialog", self._on_dialog)
        page.on("close", lambda _p: self._on_close(page))
        self.page = page  # a popup takes the focus, as a new tab would
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
        self._worlds.pop(page, None)
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
        # only the shown page's navigations are waited for (a tab in the background loads on its own)
        shown = page is (self.page or self.main_page)
        if shown and request.is_navigation_request() and request.frame == page.main_frame:
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
        self.clipboard.clear()  # an episode never pastes what the one before it copied
        self._reset_ids = True
        self._frame_snapshot = None
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
        for attempt in range(SETUP_NAVIGATION_TRIES):
            try:
                await self._guard(self.main_page.goto(url, wait_until=wait_until, timeout=timeout_s * 1000))
                return
            except PlaywrightError as err:
                # A navigation the last episode left in flight (a blocked redirect's error page, a meta refresh)
                # can commit during the setup's own; the setup is ours to repeat, so it goes again.
                if not any(m in str(err) for m in _INTERRUPTED_MARKERS) or attempt == SETUP_NAVIGATION_TRIES - 1:
                    raise
                log.debug("setup navigation to %s interrupted, again: %s", url, str(err).splitlines()[0])

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
        self._frame_snapshot = None
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
        if isinstance(action, Click) and action.button == "middle":
            await clipboard.middle_click(page, action.x, action.y, action.clicks)
        elif isinstance(action, Click):
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
            commands = clipboard.commands(action.keys)
            for key in held:
                await keyboard.down(key)
            try:
                for key, command in zip(pressed, commands, strict=True):
                    if command is None:
                        await keyboard.press(key)
                    else:  # against this session's clipboard, never Chromium's shared one
                        await self.clipboard.press(page, command)
            finally:
                for key in reversed(held):
                    await keyboard.up(key)
        elif isinstance(action, Goto):
            await self._goto(page, action.url)
        elif isinstance(action, Tab):
            await self._tab(action)
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

    async def _tab(self, action: Tab) -> None:
        """Open, show or close a tab. Tab 0 is the task's own page: it stays open, and tasks read it."""
        problem = action.problem()
        if problem is not None:
            raise InvalidAction(problem)
        if action.op == "new":
            if len(self._pages) >= MAX_TABS:
                raise InvalidAction(f"tab: {len(self._pages)} tabs are open, the most a session may hold; "
                                    'close one first with tab(op="close", index=...)')
            url = action.url or "about:blank"
            reason = self.policy.check_goto(url)
            if reason is not None:
                raise InvalidAction(f"tab refused: {reason}")
            page = await self.context.new_page()
            self.page = page  # also set by the context's "page" event; a new tab is shown at once
            await page.set_viewport_size({"width": self._viewport[0], "height": self._viewport[1]})
            if url != "about:blank":
                await self._goto(page, url)
            return
        shown = self.page or self.main_page
        index = self._pages.index(shown) if action.index == -1 else action.index
        if not 0 <= index < len(self._pages):
            raise InvalidAction(f"tab: there is no tab {index}; the open tabs are 0 to {len(self._pages) - 1}")
        target = self._pages[index]
        if action.op == "switch":
            self.page = target
            await target.bring_to_front()
            return
        if target is self.main_page:
            raise InvalidAction("tab: tab 0 holds the task and cannot be closed")
        await target.close()
        if target in self._pages:  # the close event normally did this already
            self._on_close(target)
        if self.page is target or self.page is None:
            self.page = self._pages[-1]
        await self.page.bring_to_front()

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
        """The shown page's pixels; with ``set_of_marks`` (or the ``som`` channel), the marks of a grounding
        snapshot drawn on them."""
        self._ensure_alive()
        page = self.page or self.main_page
        width, height = self.screen_size
        if page.viewport_size != {"width": width, "height": height}:  # a popup or tab opened at another size
            await self._guard(page.set_viewport_size({"width": width, "height": height}))
        marks = self.options.set_of_marks or "som" in self.requested_channels
        if not (marks or self._grounded_wanted):
            return await self._capture(page)
        shot, snap = await asyncio.gather(self._capture(page),
                                          self.grounding(page, html="dom" in self._grounded_wanted))
        self._frame_snapshot = (page, snap)
        return grounding.draw_marks(shot, snap) if marks else shot

    async def _capture(self, page: Page) -> np.ndarray:
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
        """``text``: URL, title, dialogs and the open tabs; ``a11y``: the grounded elements (see
        :mod:`.grounding`); ``dom``: the page's pruned HTML (elements carry their a11y id as ``mg-id``).

        Only what is asked for is computed; ``a11y`` and ``dom`` come from one snapshot, the one the
        set-of-marks overlay of the same frame was drawn from when there is one.
        """
        self._ensure_alive()
        page = self.page or self.main_page
        out: dict[str, str] = {}
        if "text" in wanted:
            out["text"] = await self._text_channel(page)
        self._grounded_wanted = wanted & {"a11y", "dom"}
        if self._grounded_wanted:
            snap = None
            taken, self._frame_snapshot = self._frame_snapshot, None
            if taken is not None and taken[0] is page and ("dom" not in wanted or taken[1].html is not None):
                snap = taken[1]
            if snap is None:
                snap = await self.grounding(page, html="dom" in wanted)
            if "a11y" in wanted:
                out["a11y"] = grounding.render(snap)
            if "dom" in wanted:
                out["dom"] = snap.html or ""
        return out

    async def _text_channel(self, page: Page) -> str:
        pages = list(self._pages)
        titles = await asyncio.gather(*(self._guard(p.title()) for p in pages))
        title = titles[pages.index(page)] if page in pages else await self._guard(page.title())
        lines = [f"URL: {page.url}", f"Title: {title}"]
        lines += [f"Dialog ({d.kind}, {d.handled}): {d.message}" for d in self.dialogs]
        shown = pages.index(page) if page in pages else -1
        lines.append(f"Tabs ({len(pages)} open, tab {shown} shown; tab 0 holds the task):")
        for i, (p, t) in enumerate(zip(pages, titles, strict=True)):
            lines.append(f"{'*' if i == shown else ' '} [{i}] {json.dumps(t, ensure_ascii=False)} {p.url}")
        return "\n".join(lines)

    async def grounding(self, page: Page | None = None, html: bool = False) -> grounding.Snapshot:
        """A grounding snapshot of ``page`` (default: the shown one): one ``Runtime.evaluate`` in an isolated
        world, boxes in this session's screenshot pixels. Element ids stay stable while the document lives
        and restart at each reset."""
        self._ensure_alive()
        page = page or self.page or self.main_page
        width, height = self.screen_size
        opts = {"reset": self._reset_ids, "limit": self.options.a11y_max_elements, "width": width, "height": height,
                "elements": True, "html": html, "html_limit": self.options.dom_max_chars}
        expression = f"({grounding.WALKER_JS})({json.dumps(opts)})"
        started = time.perf_counter()
        last_error = ""
        for _attempt in range(3):  # a navigation destroys the world: make a new one and try again
            try:
                context_id = await self._world(page)
                params = {"expression": expression, "contextId": context_id, "returnByValue": True}
                reply = await asyncio.wait_for((await self._cdp_for(page)).send("Runtime.evaluate", params), 5.0)
            except PlaywrightError as err:
                crash = self._crash_from(err)
                if crash is not None:
                    raise crash from None
                last_error = str(err).splitlines()[0]
                self._worlds[page] = (self._worlds.get(page, ("", None))[0], None)
                continue
            except TimeoutError:
                last_error = "the page did not answer within 5 s"
                break
            if "exceptionDetails" in reply:
                details = reply["exceptionDetails"]
                last_error = (details.get("exception") or {}).get("description") or details.get("text", "error")
                if "Cannot find context" in last_error or "destroyed" in last_error:
                    self._worlds[page] = (self._worlds.get(page, ("", None))[0], None)
                    continue
                break
            self._reset_ids = False
            self.last_grounding_s = time.perf_counter() - started
            return grounding.snapshot_from_raw(reply["result"]["value"])
        log.warning("grounding snapshot failed on %s: %s", page.url, last_error)
        self.last_grounding_s = time.perf_counter() - started
        return grounding.Snapshot((), 0, None, error=last_error.splitlines()[0][:200] if last_error else "unknown")

    async def _world(self, page: Page) -> int:
        """The execution context of the grounding's isolated world in ``page``'s current document."""
        frame_id, context_id = self._worlds.get(page, ("", None))
        if context_id is not None:
            return context_id
        cdp = await self._cdp_for(page)
        if not frame_id:
            frame_id = (await cdp.send("Page.getFrameTree"))["frameTree"]["frame"]["id"]
        reply = await cdp.send("Page.createIsolatedWorld",
                               {"frameId": frame_id, "worldName": "mintgym-grounding", "grantUniveralAccess": True})
        self._worlds[page] = (frame_id, reply["executionContextId"])
        return reply["executionContextId"]

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
