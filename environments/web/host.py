"""The web host: ONE Chromium for all of a server's sessions, one browser context per session.

It also owns the loopback HTTP server that serves MiniWoB++'s HTML from the installed ``miniwob`` package
and the project's web apps (with their per-session server-side state).

Run as root where control groups can be made, Chromium runs in a control group of its own whose CPU weight is
the number of sessions it serves: on a machine shared with other domains, whose sandboxed sessions are one group
(or one process session) each, the scheduler would otherwise give one browser serving 60 sessions what it gives
one pytool or desktop session (benchmarks/fleet.py measured web steps 2.5x slower so in a mixed fleet).

When the browser dies, :meth:`WebHost.healthy` turns False, the sessions that lived in it report
``alive() == False`` (their actions raise EnvironmentCrashed), and the next :meth:`WebHost.create`
launches a fresh browser for the new session.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import shutil
import socket
import tempfile
import weakref
from pathlib import Path
from typing import Any, ClassVar

from playwright.async_api import Browser, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError
from pydantic import ValidationError

from mintgym.env.core import EnvironmentHost
from mintgym.environments.isolation import cgroups
from mintgym.environments.web.browser_user import BrowserLaunch, browser_launch
from mintgym.environments.web.env import WebEnvironment
from mintgym.environments.web.options import WebOptions
from mintgym.environments.web.server import LocalServer, miniwob_mount
from mintgym.environments.web.webapps.server import AppStore, webapp_routes

log = logging.getLogger("mintgym.web")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = (
    "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
    # WebRTC would otherwise send UDP (STUN, ICE) to any host and port, around the sessions' refusing proxy
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
)
#: Playwright passes its own ``--disable-features`` list; a second one replaces it, so ours repeats it
#: (as Playwright 1.65 sets it) and adds the two features that make Chromium >= 151 pre-render the
#: address-bar popup (WebUI) in its own ~70 MB renderer for EVERY browser context, i.e. every session.
PLAYWRIGHT_DISABLED_FEATURES = (
    "AimEnabled", "AvoidCorsURLLoaderRestartOnRedirect", "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose", "HttpsFirstBalancedModeAutoEnable", "HttpsUpgrades", "LensOverlay",
    "MediaRouter", "NetworkTimeServiceQuerying", "OptimizationHints", "PaintHolding", "PreconnectToSearch",
    "TcpPortRandomizationWin", "ThirdPartyStoragePartitioning",
)
DISABLED_FEATURES = PLAYWRIGHT_DISABLED_FEATURES + ("WebUIOmniboxPopup", "WebUIOmniboxAimPopup")


class WebHost(EnvironmentHost):
    """Shared Chromium + loopback server; ``create(options)`` gives a session (see :class:`WebOptions`).

    Args:
        executable_path: the Chromium binary (Debian's; Playwright's own download is not used).
        headless: run without a display.
        extra_args: more Chromium switches, appended to :data:`CHROMIUM_ARGS`.
        **defaults: default :class:`WebOptions` for every session (a session's options override them).
    """

    domain: ClassVar[str] = "web"
    options_model: ClassVar[type[WebOptions]] = WebOptions

    def __init__(self, executable_path: str = CHROMIUM, headless: bool = True,
                 extra_args: tuple[str, ...] = (), **defaults: Any):
        WebOptions(**defaults)  # fail early on a bad default
        self.executable_path = executable_path
        self.headless = headless
        self.extra_args = tuple(extra_args)
        self.defaults = defaults
        self.apps = AppStore()
        self.server = LocalServer([miniwob_mount(), *webapp_routes(self.apps)])
        self._playwright: Playwright | None = None
        self.browser: Browser | None = None
        self.browser_version = ""
        self.launches = 0
        self._envs: weakref.WeakSet[WebEnvironment] = weakref.WeakSet()
        self._env_browser: weakref.WeakKeyDictionary[WebEnvironment, Browser] = weakref.WeakKeyDictionary()
        self._lock = asyncio.Lock()
        self._started = False
        self._sink: socket.socket | None = None
        self._workdir: Path | None = None
        #: Chromium's control group (root with control groups only), weighted by the sessions it serves.
        self._cgroup: cgroups.Cgroup | None = None
        #: How Chromium is started (never as root); set at the first launch.
        self.launcher: BrowserLaunch | None = None
        #: True when Chromium runs with its own sandbox, False when it could not (see ``sandbox_error``).
        self.sandbox: bool | None = None
        self.sandbox_error = ""

    # ---- shared resources ----------------------------------------------------------------------------
    @property
    def server_origin(self) -> str:
        return self.server.origin

    @property
    def own_ports(self) -> tuple[int, ...]:
        return (self.server.port,)

    @property
    def proxy_sink(self) -> str:
        """A loopback address that refuses every connection: the proxy of every session (see UrlPolicy)."""
        return f"http://127.0.0.1:{self._sink.getsockname()[1]}"

    async def start(self) -> None:
        async with self._lock:
            if self._started:
                return
            await self.server.start()
            self._sink = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._sink.bind(("127.0.0.1", 0))  # bound, never listening: connections to it are refused
            self._playwright = await async_playwright().start()
            await self._launch()
            self._started = True

    async def _launch(self) -> None:
        if self.browser is not None:
            try:
                await asyncio.wait_for(self.browser.close(), 10.0)
            except (TimeoutError, PlaywrightError) as err:  # the old browser is dead: best effort
                log.debug("closing the dead browser failed: %s", err)
        if self.launcher is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="mintgym-web-"))
            self._cgroup = _browser_group()
            self.launcher = browser_launch(self.executable_path, self._workdir, self._cgroup)
            self._weigh()
        options = {
            "executable_path": self.launcher.executable, "env": self.launcher.env, "headless": self.headless,
            "args": [*CHROMIUM_ARGS, "--disable-features=" + ",".join(DISABLED_FEATURES), *self.extra_args]}
        if self.sandbox is not False:
            try:
                self.browser = await self._playwright.chromium.launch(chromium_sandbox=True, **options)
                self.sandbox = True
            except PlaywrightError as err:  # no user namespaces here (e.g. Docker's default seccomp profile)
                self.sandbox = False
                self.sandbox_error = str(err).splitlines()[0][:300]
                log.warning("Chromium's sandbox is unavailable (%s); running it without, as %s",
                            self.sandbox_error, self.launcher.user)
        if self.sandbox is False:
            self.browser = await self._playwright.chromium.launch(chromium_sandbox=False, **options)
        self.browser_version = self.browser.version
        self.launches += 1
        log.info("launched Chromium %s (launch %d)", self.browser_version, self.launches)

    async def healthy(self) -> bool:
        return self.browser is not None and self.browser.is_connected()

    async def stop(self) -> None:
        async with self._lock:
            for env in list(self._envs):
                await env.close()
            if self.browser is not None:
                try:
                    await asyncio.wait_for(self.browser.close(), 15.0)
                except (TimeoutError, PlaywrightError) as err:
                    log.warning("closing Chromium failed: %s", err)
                self.browser = None
            if self._playwright is not None:
                await self._playwright.stop()
                self._playwright = None
            await self.server.stop()
            if self._sink is not None:
                self._sink.close()
                self._sink = None
            if self._workdir is not None:
                shutil.rmtree(self._workdir, ignore_errors=True)
                self._workdir = self.launcher = None
            if self._cgroup is not None:
                self._cgroup.remove()
                self._cgroup = None
            self._started = False

    # ---- sessions ------------------------------------------------------------------------------------
    async def create(self, options: dict[str, Any]) -> WebEnvironment:
        try:
            opts = WebOptions(**{**self.defaults, **(options or {})})
        except ValidationError as err:
            raise ValueError(f"bad web session options: {err.errors()[0]['loc']}: {err.errors()[0]['msg']} "
                             f"(known options: {', '.join(WebOptions.model_fields)})") from None
        if not self._started:
            await self.start()
        async with self._lock:
            if not await self.healthy():
                log.warning("Chromium is gone; relaunching it for new sessions")
                await self._launch()
            browser = self.browser
        env = WebEnvironment(self, opts, secrets.token_hex(16))
        self._envs.add(env)
        self._weigh()
        self._env_browser[env] = browser
        try:
            await env.start()
        except BaseException:
            await env.close()
            raise
        return env

    def browser_connected(self, env: WebEnvironment) -> bool:
        """True while the browser ``env`` was created in still runs."""
        browser = self._env_browser.get(env)
        return browser is not None and browser.is_connected()

    def forget(self, env: WebEnvironment) -> None:
        self._envs.discard(env)
        self.apps.drop(env.session_token)
        self._weigh()

    def _weigh(self) -> None:
        """Chromium's CPU weight: one sandboxed session's per session it serves (at least one)."""
        if self._cgroup is not None:
            try:
                self._cgroup.set_cpu_weight(max(1, len(self._envs)))
            except OSError as err:
                log.debug("cannot weigh Chromium's control group: %s", err)

    @property
    def session_count(self) -> int:
        return len(self._envs)

    def describe(self) -> dict[str, Any]:
        return {"browser": self.browser_version, "executable": self.executable_path,
                "browser_user": self.launcher.user if self.launcher else None, "sandbox": self.sandbox,
                "isolation": "one browser context per session", "server": self.server_origin,
                "sessions": self.session_count, "launches": self.launches}


def _browser_group() -> cgroups.Cgroup | None:
    """A control group for Chromium where they can be made (as root), else None."""
    if cgroups.probe()[0]:
        return None
    try:
        return cgroups.Cgroup.create("web", cgroups.Limits())
    except OSError as err:
        log.warning("no control group for Chromium (%s): its CPU share is that of one process session", err)
        return None
