"""DesktopEnvironment: one session's own X display, window manager, apps and sandboxed user.

Every episode starts in a fresh world: reset kills every process of the session at once (its control
group), ends the episode's namespaces, empties everything the session could write, and starts a new X
server, namespaces and window manager before the task's setup runs. A session that goes over its memory or
process limit has its episode ended as the agent's failure (:class:`~mintgym.env.episode.AgentFault`).

Input goes through XTEST on a per-session python-xlib connection; screenshots come from the X
server's memory through mss (MIT-SHM). All X calls of a session run on one dedicated thread, so a hung
X server blocks neither the event loop nor the other sessions; a call that does not return in
``x_timeout`` seconds marks the session crashed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from mintgym import grounding
from mintgym.action_spaces import ActionModel, Click, Drag, InvalidAction, Key, Move, Scroll, Type, Wait
from mintgym.env.core import Environment, Task
from mintgym.env.episode import AgentFault
from mintgym.environments.desktop import accessibility
from mintgym.environments.desktop.devtools import DevToolsBridge
from mintgym.environments.desktop.display import XServer, wait_for_wm
from mintgym.environments.desktop.namespace import SessionNamespace, hidden_dirs
from mintgym.environments.desktop.sandbox import CommandResult, Sandbox, SessionLimits
from mintgym.environments.desktop.template import DUMP_SCRIPT, TERMINAL_LOGS, build_template, write_session_bin
from mintgym.environments.desktop.xinput import UntypableText, XInput
from mintgym.errors import EnvironmentCrashed

T = TypeVar("T")

#: Seconds a reset (new X server, namespaces and window manager) may take before the session counts as hung: far
#: more than one X call's ``x_timeout``, since on a loaded machine the three process starts take seconds.
RESET_SECONDS = 60.0
#: Where OSWorld tasks (and users' habits) put the home directory; mapped onto the session's home.
OSWORLD_HOME = "/home/user"
#: Terminal control sequences (CSI, OSC, charset and keypad modes) and carriage returns in a terminal log.
TERMINAL_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>]|\r")


class DesktopEnvironment(Environment):
    domain: ClassVar[str] = "desktop"

    def __init__(self, width: int = 1280, height: int = 720, x_timeout: float = 10.0,
                 template: Path | None = None, egress: bool = False, accessibility: bool = False,
                 memory_mb: int = SessionLimits.memory_mb, processes: int = SessionLimits.processes,
                 cpus: float = SessionLimits.cpus, disk_mb: int = SessionLimits.disk_mb):
        if not (64 <= int(width) <= 7680 and 64 <= int(height) <= 4320):
            raise ValueError(f"desktop size {width}x{height} is out of range (64..7680 x 64..4320)")
        self._size = (int(width), int(height))
        self.x_timeout = float(x_timeout)
        self.egress = bool(egress)
        self.limits = SessionLimits(int(memory_mb), int(processes), float(cpus), int(disk_mb))
        #: The session's limit counters when this episode started (a rise ends the episode).
        self._limit_base: dict[str, int] = {}
        #: Run the session's AT-SPI bus from the start of every episode (see :mod:`.accessibility`).
        self.accessibility = bool(accessibility)
        #: The id of the task the session was last set up for (a task's setup sets it; caches key on it).
        self.task_key: str | None = None
        self._template = template
        self.sandbox: Sandbox | None = None
        self.xserver: XServer | None = None
        self.wm = None
        self._xlib = None
        self._input: XInput | None = None
        self._mss = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._crashed: str | None = None
        #: An X call never returned: the session's X thread is stuck, so even a reset cannot help.
        self._hung = False
        self._closed = False
        self.last_reset_seconds: float | None = None
        self._lock = threading.Lock()
        self._devtools: DevToolsBridge | None = None
        #: The accessibility snapshot the last set-of-marks screenshot was drawn from (its frame's a11y listing).
        self._frame_snapshot: grounding.Snapshot | None = None

    # -- facts -----------------------------------------------------------------------------------
    @property
    def screen_size(self) -> tuple[int, int]:
        return self._size

    @property
    def home(self) -> Path:
        """The session's home directory (what ``/home/user`` and ``~`` mean inside the session)."""
        return self._box().home

    @property
    def display_name(self) -> str:
        if self.xserver is None:
            raise RuntimeError("the desktop session is not started")
        return self.xserver.name

    def path(self, p: str) -> Path:
        """Map a path as tasks write it (``/home/user/x``, ``~/x``, relative) into this session."""
        if p == OSWORLD_HOME or p.startswith(OSWORLD_HOME + "/"):
            return self.home / p[len(OSWORLD_HOME) + 1:]
        if p == "~" or p.startswith("~/"):
            return self.home / p[2:]
        if not p.startswith("/"):
            return self.home / p
        return Path(p)

    def describe(self) -> dict[str, Any]:
        box = self.sandbox
        isolation = "process" if not (box and box.privileged) else "user+namespaces" if box.namespace else "user"
        return {"isolation": isolation, "display": getattr(self.xserver, "name", None),
                "user": box.name if box else None, "screen_size": list(self._size),
                "containment": box.containment if box else None}

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="desktop-x")
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._pool, self._start_sync)
        except BaseException:
            await self.close()
            raise

    def _start_sync(self) -> None:
        self._template = self._template or build_template()
        self.sandbox = Sandbox.acquire(self.limits)
        write_session_bin(self.sandbox.root / "bin")
        self._begin_world()

    def _begin_world(self) -> None:
        """A fresh world for the next episode: the home template, an X server, namespaces and the WM."""
        box = self._box()
        box.fresh_world(self._template)
        if self.xserver is None:
            self.xserver = XServer.start(*self._size, sandbox=box)
        else:
            self.xserver.restart(*self._size, sandbox=box)
        if box.privileged:
            box.namespace = SessionNamespace.start(box.root, box.rw, self.xserver.number,
                                                   hide=hidden_dirs((str(self._template.parent),)),
                                                   home_link=(OSWORLD_HOME, str(box.home)), egress=self.egress)
        elif self.egress:
            raise RuntimeError("egress needs the session's own network namespace (run the server as root)")
        accessibility.stop_bus(box)
        if self.accessibility or self.requested_channels & {"a11y", "som"}:
            accessibility.start_bus(box, self.xserver.name)
        self._xlib = self.xserver.connect()
        self._input = XInput(self._xlib)
        import mss

        self._mss = mss.MSS(display=self.xserver.name)
        self.wm = box.spawn(["openbox", "--sm-disable"], self.display_name, log_name="openbox")
        wait_for_wm(self._xlib, self.wm)
        self._input.move(self._size[0] // 2, self._size[1] // 2)
        self._limit_base = box.limit_hits()

    def _end_world(self) -> None:
        """Kill every process of the session (its X server included) and end the episode's namespaces."""
        for closer in (getattr(self._mss, "close", None), getattr(self._xlib, "close", None)):
            if closer is not None:
                try:
                    closer()
                except Exception:  # noqa: BLE001 -- the X server may be gone already; ending must not fail
                    pass
        self._mss = self._xlib = self._input = None
        box = self._box()
        box.kill_all()
        if box.namespace is not None:
            box.namespace.stop(wait=False)  # its processes are dead already
            box.namespace = None

    async def reset(self, task: Task, seed: int | None) -> None:
        """End every process and the namespaces of the last episode, then start a fresh world."""
        if self._closed or self._hung:
            raise EnvironmentCrashed(f"desktop session crashed: {self._crashed or 'closed'}")
        started = time.perf_counter()
        await self._call(self._reset_sync, check_alive=False, timeout=RESET_SECONDS)
        self._crashed = None
        self.last_reset_seconds = time.perf_counter() - started

    def _reset_sync(self) -> None:
        self._end_world()
        self._begin_world()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._devtools is not None:
            await self._devtools.close()
            self._devtools = None
        pool, self._pool = self._pool, None
        if pool is not None:
            loop = asyncio.get_running_loop()
            try:
                await asyncio.wait_for(loop.run_in_executor(pool, self._close_sync), 20)
            except (TimeoutError, RuntimeError):
                self._close_sync(force=True)
            pool.shutdown(wait=False, cancel_futures=True)
        else:
            self._close_sync()

    def _close_sync(self, force: bool = False) -> None:
        if self.sandbox is not None:
            try:
                self.sandbox.kill_all()
            except RuntimeError:
                pass
        for closer in (getattr(self._mss, "close", None), getattr(self._xlib, "close", None)):
            if closer is not None and not force:
                try:
                    closer()
                except Exception:  # noqa: BLE001 -- the X server may already be gone; closing must not fail
                    pass
        self._mss = self._xlib = self._input = None
        if self.xserver is not None:
            self.xserver.stop()
            self.xserver = None
        if self.sandbox is not None:
            self.sandbox.release()
            self.sandbox = None

    async def alive(self) -> bool:
        if self._crashed or self._closed or self.xserver is None:
            return False
        if not self.xserver.alive():
            self._crashed = f"Xvfb {self.xserver.name} exited with code {self.xserver.proc.returncode}"
            return False
        return True

    # -- actions and pixels ----------------------------------------------------------------------
    async def execute(self, action: ActionModel) -> None:
        try:
            if isinstance(action, Wait):
                await self._ensure_alive()
                await asyncio.sleep(action.seconds)
            else:
                await self._call(self._execute_sync, action)
        except EnvironmentCrashed:
            self._raise_if_over_limits()
            raise
        self._raise_if_over_limits()

    def _raise_if_over_limits(self) -> None:
        """End the episode as the agent's failure once the session went over its memory or process limit."""
        box = self.sandbox
        if box is None or not self._limit_base:
            return
        hits = box.limit_hits()
        if hits["oom_kills"] > self._limit_base.get("oom_kills", 0):
            reason = f"memory limit of {self.limits.memory_mb} MiB (the kernel killed a process of it)"
        elif hits["refused_forks"] > self._limit_base.get("refused_forks", 0):
            reason = f"limit of {self.limits.processes} processes (a fork was refused)"
        else:
            return
        self._limit_base = {}
        # Nothing of the episode runs on (a fork bomb would spin until the next reset); the X server stays,
        # so the episode's last frame can still be taken.
        x_pid = self.xserver.proc.pid if self.xserver is not None and self.xserver.alive() else None
        try:
            box.kill_all(spare=(x_pid,) if x_pid else ())
        except RuntimeError:
            pass
        raise AgentFault(f"the session went over its {reason}; its processes were ended")

    def _execute_sync(self, action: ActionModel) -> None:
        inp = self._input
        if isinstance(action, Click):
            inp.click(action.x, action.y, action.button, action.clicks)
        elif isinstance(action, Move):
            inp.move(action.x, action.y)
        elif isinstance(action, Drag):
            inp.drag(action.x1, action.y1, action.x2, action.y2)
        elif isinstance(action, Scroll):
            inp.scroll(action.x, action.y, action.dx, action.dy)
        elif isinstance(action, Type):
            try:
                inp.type_text(action.text, budget_seconds=self.x_timeout)  # longer: refused, nothing typed
            except UntypableText as err:
                raise InvalidAction(str(err)) from None
        elif isinstance(action, Key):
            inp.key_combo(action.keys)
        else:
            raise TypeError(f"the desktop cannot execute {action.type!r}")

    async def screenshot(self) -> np.ndarray:
        """The screen's pixels; with the ``som`` channel, the marks of the accessibility snapshot taken with
        them drawn on (that snapshot is the frame's ``a11y`` listing too)."""
        shot = await self._call(self._grab_sync)
        if "som" not in self.requested_channels:
            return shot
        self._frame_snapshot = await self.grounding()
        return grounding.draw_marks(shot, self._frame_snapshot)

    def _grab_sync(self) -> np.ndarray:
        shot = self._mss.grab({"left": 0, "top": 0, "width": self._size[0], "height": self._size[1]})
        bgra = np.frombuffer(shot.raw, dtype=np.uint8).reshape(self._size[1], self._size[0], 4)
        return bgra[..., [2, 1, 0]]  # one gather into a new RGB array: cheaper than a reversed-axis copy

    async def side_channels(self, wanted: frozenset[str]) -> dict[str, str]:
        channels = {}
        if "text" in wanted:
            titles = [t for _, t in await self.windows()]
            channels["text"] = "windows: " + "; ".join(titles)
        if "a11y" in wanted:
            snap, self._frame_snapshot = self._frame_snapshot, None
            channels["a11y"] = grounding.render(snap if snap is not None else await self.grounding())
        return channels

    # -- accessibility -----------------------------------------------------------------------------
    async def enable_accessibility(self) -> None:
        """Start the session's AT-SPI bus now (apps started from here on expose their tree); for tasks
        that read the tree. Reset turns it off again unless the session or its channels want it."""
        box = self._box()
        if not accessibility.bus_running(box):
            await self._call(accessibility.start_bus, box, self.display_name)

    async def accessibility_tree(self, timeout: float = 30.0) -> dict[str, Any]:
        """The session's AT-SPI tree as :mod:`.a11y_dump` reads it (raises AccessibilityUnavailable when
        the session runs no bus)."""
        box = self._box()
        if not accessibility.bus_running(box):
            raise accessibility.AccessibilityUnavailable(
                "this session runs no AT-SPI bus: create it with the option accessibility=true or ask for "
                "the a11y side channel")
        script = str(box.root / "bin" / DUMP_SCRIPT)
        result = await self.run([accessibility.SYSTEM_PYTHON, "-I", script], timeout=timeout)
        if result.returncode != 0:
            raise accessibility.AccessibilityUnavailable(
                f"reading the accessibility tree failed (exit {result.returncode}): {result.stderr.strip()[-300:]}")
        return accessibility.parse_dump(result.stdout)

    async def grounding(self) -> grounding.Snapshot:
        """The grounded elements on screen now (the ``a11y`` side channel's data)."""
        try:
            tree = await self.accessibility_tree()
        except (accessibility.AccessibilityUnavailable, ValueError, TimeoutError) as err:
            return grounding.Snapshot((), error=str(err))
        return accessibility.snapshot(tree, self._size)

    # -- domain hooks for tasks ------------------------------------------------------------------
    async def run(self, command: list[str] | str, *, shell: bool = False, timeout: float = 60.0,
                  env: dict[str, str] | None = None) -> CommandResult:
        """Run a command as the session user (HOME in the session directory) and wait for it."""
        await self._ensure_alive()
        return await self._box().run(command, self.display_name, shell=shell, timeout=timeout, extra_env=env)

    async def launch(self, command: list[str] | str, *, shell: bool = False, env: dict[str, str] | None = None) -> int:
        """Start an app as the session user without waiting; returns its pid."""
        await self._ensure_alive()
        argv = ["/bin/bash", "-c", command if isinstance(command, str) else " ".join(command)] if shell else command
        if isinstance(argv, str):
            argv = [argv]
        proc = self._box().spawn(argv, self.display_name, extra_env=env, log_name="apps")
        return proc.pid

    async def windows(self) -> list[tuple[int, str]]:
        """(window id, title) of every managed top-level window, oldest first."""
        return await self._call(self._windows_sync)

    def _windows_sync(self) -> list[tuple[int, str]]:
        d = self._xlib
        root = d.screen().root
        prop = root.get_full_property(d.intern_atom("_NET_CLIENT_LIST"), 0)
        found = []
        utf8 = d.intern_atom("UTF8_STRING")
        for wid in (prop.value if prop else []):
            win = d.create_resource_object("window", wid)
            try:
                name = win.get_full_property(d.intern_atom("_NET_WM_NAME"), utf8)
                title = name.value.decode(errors="replace") if name else (win.get_wm_name() or "")
            except Exception:  # the window vanished between the list and the query
                continue
            found.append((int(wid), str(title)))
        return found

    async def window_rect(self, wid: int) -> tuple[int, int, int, int]:
        """(x, y, width, height) of a window on the screen, in screenshot pixels."""
        return await self._call(self._rect_sync, wid)

    def _rect_sync(self, wid: int) -> tuple[int, int, int, int]:
        win = self._xlib.create_resource_object("window", wid)
        geo = win.get_geometry()
        pos = win.translate_coords(self._xlib.screen().root, 0, 0)
        return -pos.x, -pos.y, geo.width, geo.height

    async def activate_window(self, title: str, *, exact: bool = False) -> bool:
        """Raise and focus the first window whose title contains (or equals) ``title``."""
        for wid, name in await self.windows():
            if (name == title) if exact else (title.lower() in name.lower()):
                await self._call(self._activate_sync, wid)
                return True
        return False

    async def close_window(self, title: str) -> bool:
        for wid, name in await self.windows():
            if title.lower() in name.lower():
                await self._call(self._client_message, wid, "_NET_CLOSE_WINDOW", [0, 2, 0, 0, 0])
                return True
        return False

    def _activate_sync(self, wid: int) -> None:
        self._client_message(wid, "_NET_ACTIVE_WINDOW", [2, 0, 0, 0, 0])

    def _client_message(self, wid: int, atom: str, data: list[int]) -> None:
        from Xlib import X
        from Xlib.protocol import event

        d = self._xlib
        win = d.create_resource_object("window", wid)
        msg = event.ClientMessage(window=win, client_type=d.intern_atom(atom), data=(32, data))
        d.screen().root.send_event(msg, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
        d.sync()

    def terminal_logs(self) -> list[Path]:
        """Output logs of the terminals opened through ``mintgym-terminal``, newest last."""
        logs = self._box().list_files(self.home / TERMINAL_LOGS)
        return [path for path, _ in sorted(logs, key=lambda item: item[1]) if path.suffix == ".log"]

    def terminal_text(self, log: Path) -> str:
        """What a terminal log shows: its text with the control sequences removed ('' before it exists)."""
        return TERMINAL_ESCAPES.sub("", self.read_text(log) or "")

    def devtools(self) -> DevToolsBridge:
        """The server's bridge to the DevTools port of a browser running in this session (see :mod:`.devtools`)."""
        if self._devtools is None:
            self._devtools = DevToolsBridge(self.connect)
        return self._devtools

    def connect(self, port: int) -> socket.socket:
        """A TCP connection to ``port`` on the session's own loopback (its network namespace)."""
        box = self._box()
        if box.namespace is not None:
            return box.namespace.connect(port)
        return socket.create_connection(("127.0.0.1", port), timeout=5.0)  # no namespace: the host's loopback

    # -- the session's files, as the server may touch them ----------------------------------------
    def read_bytes(self, path: str | Path, max_bytes: int = 64 * 2**20) -> bytes | None:
        """A session file's bytes (``/home/user/...``, ``~/...`` or relative to home), or None when it is
        missing, a link, not the session user's, or over ``max_bytes``: what a scorer sees as no file."""
        try:
            return self._box().read_bytes(self.path(str(path)), max_bytes)
        except (OSError, ValueError):
            return None

    def read_text(self, path: str | Path, max_bytes: int = 64 * 2**20) -> str | None:
        data = self.read_bytes(path, max_bytes)
        return None if data is None else data.decode(errors="replace")

    def is_file(self, path: str | Path) -> bool:
        return self._box().is_file(self.path(str(path)))

    def write_bytes(self, path: str | Path, data: bytes) -> Path:
        """Create or replace a session file as the session user's (no link followed); returns its path."""
        target = self.path(str(path))
        self._box().write_bytes(target, data)
        return target

    def fetch_file(self, path: str | Path, max_bytes: int = 256 * 2**20) -> Path | None:
        """Copy a session file out to a folder only the server can read, as OSWorld copies a file out of
        its VM before scoring; None when :meth:`read_bytes` refuses it."""
        data = self.read_bytes(path, max_bytes)
        if data is None:
            return None
        folder = self._box().log_dir / "fetched"
        folder.mkdir(mode=0o700, exist_ok=True)
        target = folder / f"{len(list(folder.iterdir())):04d}-{Path(str(path)).name}"
        target.write_bytes(data)
        return target

    # -- plumbing --------------------------------------------------------------------------------
    def _box(self) -> Sandbox:
        if self.sandbox is None:
            raise RuntimeError("the desktop session is not started (or already closed)")
        return self.sandbox

    async def _ensure_alive(self) -> None:
        if not await self.alive():
            raise EnvironmentCrashed(f"desktop session crashed: {self._crashed or 'closed'}")

    async def _call(self, fn: Callable[..., T], *args: Any, check_alive: bool = True,
                    timeout: float | None = None) -> T:
        """``fn(*args)`` on the session's X thread, within ``timeout`` seconds (``x_timeout`` when None)."""
        if check_alive:
            await self._ensure_alive()
        timeout = self.x_timeout if timeout is None else timeout
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._pool, fn, *args)
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            self._hung = True
            self._crashed = f"X call {fn.__name__} did not return within {timeout:g} s"
            raise EnvironmentCrashed(f"desktop session crashed: {self._crashed}") from None
        except (ConnectionError, OSError) as err:
            if not await self.alive() or _is_x_connection_error(err):
                self._crashed = self._crashed or f"lost the X connection: {err}"
                raise EnvironmentCrashed(f"desktop session crashed: {self._crashed}") from err
            raise
        except Exception as err:
            if _is_x_connection_error(err) or not await self.alive():
                self._crashed = self._crashed or f"lost the X connection: {err}"
                raise EnvironmentCrashed(f"desktop session crashed: {self._crashed}") from err
            raise


def _is_x_connection_error(err: BaseException) -> bool:
    from Xlib.error import ConnectionClosedError

    name = type(err).__name__
    return (isinstance(err, ConnectionClosedError) or name in {"ScreenShotError"}
            or "connection" in str(err).lower() and "X" in str(err))
