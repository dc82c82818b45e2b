"""AndroidEnvironment: one session on one device, every ANDROID action carried out over adb.

Coordinates are screen pixels of ``screencap``, which are also the pixels ``input tap`` takes, so a tap
at (x, y) lands on what the screenshot draws at (x, y). Rotation is pinned to portrait at start so the
frame size stays fixed for the session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from mintgym.action_spaces import (
    ActionModel,
    Back,
    Home,
    InvalidAction,
    Key,
    LongPress,
    OpenApp,
    Scroll,
    Swipe,
    Tap,
    Type,
    Wait,
)
from mintgym.env.core import Environment
from mintgym.environments.android import apps as app_names
from mintgym.environments.android import commands as C
from mintgym.environments.android import uitree
from mintgym.environments.android.adb import AdbDevice, AdbError, AdbTimeout
from mintgym.environments.android.state import AdbDeviceState
from mintgym.errors import EnvironmentCrashed

if TYPE_CHECKING:
    from mintgym.env.core import Task


class AndroidEnvironment(Environment):
    """One device, one session. ``snapshot`` names an emulator snapshot restored on every reset."""

    domain: ClassVar[str] = "android"
    #: The action types ``execute`` carries out (``zoom`` and ``done`` are handled by the Episode).
    EXECUTES: ClassVar[tuple[type[ActionModel], ...]] = (Tap, LongPress, Swipe, Scroll, Type, Key, Back, Home,
                                                         OpenApp, Wait)

    def __init__(self, device: AdbDevice, snapshot: str | None = None, settle: float = 0.5,
                 on_close: Callable[[str], None] | None = None):
        self.device = device
        self.snapshot = snapshot
        self.settle = float(settle)
        self.state = AdbDeviceState(device)
        self._on_close = on_close
        self._size: tuple[int, int] | None = None
        self._wm_size: tuple[int, int] | None = None
        self._density: int | None = None
        self._closed = False
        #: Per-episode task parameters (the contact to create, the file to delete), set by the task's setup.
        self.episode: dict[str, Any] = {}

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def screen_size(self) -> tuple[int, int]:
        if self._size is None:
            raise RuntimeError("AndroidEnvironment.screen_size before start()")
        return self._size

    async def start(self) -> None:
        if await self.device.state() != "device":
            raise EnvironmentCrashed(f"Android device {self.device.serial!r} is not online")
        await self._wait_boot()
        await self.device.lock_portrait()
        self._wm_size = await self.device.screen_size()
        self._density = await self.device.density()
        shot = await self.device.screencap()
        got = (shot.shape[1], shot.shape[0])
        if got == self._wm_size or got == self._wm_size[::-1]:
            self._size = got  # the transposed case is a device whose natural orientation is landscape
        else:
            raise EnvironmentCrashed(
                f"{self.device.serial}: screencap is {got[0]}x{got[1]} but `wm size` says "
                f"{self._wm_size[0]}x{self._wm_size[1]}; taps would miss, so the session is refused"
            )

    async def _wait_boot(self, timeout: float = 120.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not await self.device.boot_completed():
            if loop.time() > deadline:
                raise EnvironmentCrashed(f"{self.device.serial}: boot did not complete within {timeout:g} s")
            await asyncio.sleep(1.0)

    async def reset(self, task: Task, seed: int | None) -> None:
        self.episode = {}
        if self.snapshot:
            await self.device.snapshot_load(self.snapshot)
            await self._wait_boot()
            await self.device.lock_portrait()
        await self.device.keyevent(C.NAMED_KEYCODES["home"])

    async def alive(self) -> bool:
        return not self._closed and await self.device.state() == "device"

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._on_close is not None:
            self._on_close(self.device.serial)

    def describe(self) -> dict[str, Any]:
        return {"serial": self.device.serial, "wm_size": self._wm_size, "density": self._density,
                "snapshot": self.snapshot, "adb_port": self.device.server.port}

    # -- actions ---------------------------------------------------------------------------
    async def execute(self, action: ActionModel) -> None:
        try:
            await self._execute(action)
        except AdbError as err:
            if isinstance(err, AdbTimeout) or await self.device.state() != "device":
                raise EnvironmentCrashed(f"Android device {self.device.serial!r} went away: {err}") from err
            # the device is fine but refused this command (e.g. `input keycombination` before Android 13)
            raise InvalidAction(f"{action.type}: the device refused it: {err}") from err
        if self.settle and not isinstance(action, Wait):
            await asyncio.sleep(self.settle)

    async def _execute(self, action: ActionModel) -> None:
        d = self.device
        if isinstance(action, Tap):
            await d.tap(action.x, action.y)
        elif isinstance(action, LongPress):
            await d.long_press(action.x, action.y, action.duration)
        elif isinstance(action, Swipe):
            await d.swipe(action.x1, action.y1, action.x2, action.y2, action.duration)
        elif isinstance(action, Scroll):
            if action.dx == 0 and action.dy == 0:
                raise InvalidAction("scroll: dx and dy are both 0")
            await d.swipe(*C.scroll_swipe(action.x, action.y, action.dx, action.dy, self.screen_size), 0.4)
        elif isinstance(action, Type):
            await d.type_text(action.text)
        elif isinstance(action, Key):
            await d.keys(action.keys)
        elif isinstance(action, Back):
            await d.keyevent(C.NAMED_KEYCODES["back"])
        elif isinstance(action, Home):
            await d.keyevent(C.NAMED_KEYCODES["home"])
        elif isinstance(action, OpenApp):
            await self.open_app(action.app)
        elif isinstance(action, Wait):
            await asyncio.sleep(action.seconds)
        else:
            raise InvalidAction(f"the Android environment cannot execute {action.type!r}")

    async def open_app(self, name: str) -> str:
        """Launch an app by name or package; returns the package. Unknown names are InvalidAction."""
        installed = await self.device.packages()
        package = app_names.resolve_app(name, installed, [])
        if package is None:
            launchable = await self.device.launcher_packages()
            package = app_names.resolve_app(name, installed, launchable)
            if package is None:
                shown = ", ".join(sorted(launchable)[:40]) or "none found"
                raise InvalidAction(f"open_app: no installed app matches {name!r}; launcher apps: {shown}")
        await self.device.launch(package)
        return package

    # -- observation -----------------------------------------------------------------------
    async def screenshot(self) -> np.ndarray:
        shot = await self.device.screencap()
        if (shot.shape[1], shot.shape[0]) != self.screen_size:
            raise EnvironmentCrashed(
                f"{self.device.serial}: the screen is now {shot.shape[1]}x{shot.shape[0]}, was "
                f"{self.screen_size[0]}x{self.screen_size[1]} (rotated or resized during the session)"
            )
        return shot

    async def ui_nodes(self) -> list[uitree.UiNode]:
        """The current window's uiautomator nodes (the a11y side channel and the oracles read these)."""
        return uitree.parse_dump(await self.device.ui_dump())

    async def side_channels(self, wanted: frozenset[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        if "a11y" in wanted:
            out["a11y"] = uitree.render(await self.ui_nodes())
        if "text" in wanted:
            out["text"] = f"foreground app: {await self.device.foreground_package() or 'unknown'}"
        return out
