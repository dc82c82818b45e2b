"""A thin async layer over the ``adb`` binary: an adb server on a loopback port, and one device.

Every call runs ``adb -P PORT [-s SERIAL] ...`` as an asyncio subprocess under a timeout, so a wedged
device or server can never hang the event loop; a timeout or a vanished device raises
:class:`~mintgym.errors.EnvironmentCrashed` (the session must be replaced), a device that was never there
raises :class:`NoDeviceError` (a :class:`~mintgym.errors.BackendError`).

The adb binary is used rather than a Python client so the wire protocol stays adb's own and every
command can be copied into a terminal to reproduce a problem.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import socket
from dataclasses import dataclass

import numpy as np

from mintgym.action_spaces import InvalidAction
from mintgym.environments.android import commands as C
from mintgym.errors import BackendError, EnvironmentCrashed

DEFAULT_TIMEOUT = 20.0
#: What adb itself prints (as opposed to the device command) when the device is not there.
_DEVICE_GONE = re.compile(r"error: (device '.*' not found|device offline|no devices/emulators found|closed)")

HOW_TO_ATTACH = (
    "Start an emulator, e.g. `emulator -avd <name> -no-window -no-snapshot-save` (the emulator and "
    "system images come with the Android SDK command-line tools: "
    "https://developer.android.com/tools/sdkmanager, then `sdkmanager \"emulator\" "
    "\"system-images;android-33;google_apis;x86_64\"` and `avdmanager create avd`), or connect a phone "
    "with USB debugging enabled (or `adb connect HOST:PORT` for network debugging); check it with "
    "`adb devices`, then pass its serial with --serial (e.g. `mintgym serve android --serial emulator-5554`)."
)


class NoDeviceError(BackendError):
    """No usable Android device is attached (absent, offline or unauthorized)."""


class AdbError(EnvironmentCrashed):
    """An adb command failed for a reason that is not the agent's (the device or server misbehaved)."""


class AdbTimeout(AdbError):
    """An adb command outlived its timeout and was killed (a wedged device or server)."""


@dataclass(frozen=True)
class AdbResult:
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def error_text(self) -> str:
        return (self.stderr or self.stdout).decode("utf-8", "replace").strip()


def adb_binary(path: str | None = None) -> str:
    """The adb executable: ``path``, ``$MINTGYM_ADB``, or ``adb`` on PATH."""
    found = shutil.which(path or os.environ.get("MINTGYM_ADB") or "adb")
    if not found:
        raise BackendError(
            "the `adb` binary was not found (install Android platform-tools, or `apt-get install adb`, "
            "or set MINTGYM_ADB to its path)"
        )
    return found


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def run_adb(binary: str, port: int, args: list[str], timeout: float = DEFAULT_TIMEOUT,
                  stdin: bytes | None = None) -> AdbResult:
    """Run ``adb -P port *args``; kill it and raise AdbError when it outlives ``timeout`` seconds."""
    env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(port)}
    proc = await asyncio.create_subprocess_exec(
        binary, "-P", str(port), *args,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except TimeoutError:
        try:
            proc.kill()
        except ProcessLookupError:  # it exited just as the timeout fired (uvloop raises here)
            pass
        await proc.wait()
        raise AdbTimeout(f"`adb {' '.join(args)}` did not finish within {timeout:g} s") from None
    return AdbResult(proc.returncode if proc.returncode is not None else -1, out, err)


class AdbServer:
    """An adb server on a loopback port: started (and later killed) by us, or one already running there."""

    def __init__(self, port: int | None = None, adb_path: str | None = None):
        self.binary = adb_binary(adb_path)
        self.port = int(port) if port is not None else free_port()
        self.owned = False

    async def start(self, timeout: float = 15.0) -> None:
        """Start the server unless one already listens on the port (that one is used, never killed)."""
        if port_in_use(self.port):
            self.owned = False
            return
        result = await run_adb(self.binary, self.port, ["start-server"], timeout)
        if result.returncode != 0:
            raise BackendError(f"could not start an adb server on port {self.port}: {result.error_text}")
        self.owned = True

    async def stop(self, timeout: float = 10.0) -> None:
        """Kill the server if this object started it; safe to call twice."""
        if self.owned:
            self.owned = False
            await run_adb(self.binary, self.port, ["kill-server"], timeout)

    async def devices(self, timeout: float = 10.0) -> dict[str, str]:
        """serial -> state for every device the server sees."""
        result = await run_adb(self.binary, self.port, ["devices"], timeout)
        if result.returncode != 0:
            raise BackendError(f"`adb devices` failed on port {self.port}: {result.error_text}")
        return C.parse_devices(result.text)

    async def alive(self) -> bool:
        return port_in_use(self.port)

    async def select(self, serial: str | None, settle: float = 2.0) -> str:
        """The serial to use: ``serial`` if it is attached and ready, else the only ready device.

        A fresh server finds running emulators by scanning ports, so an empty list is re-read for up to
        ``settle`` seconds before giving up.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settle
        while True:
            devices = await self.devices()
            ready = [s for s, state in devices.items() if state == "device"]
            if (serial in ready) if serial else ready:
                break
            if loop.time() >= deadline:
                break
            await asyncio.sleep(0.25)
        listing = ", ".join(f"{s} ({st})" for s, st in devices.items()) or "none"
        if serial:
            if serial in ready:
                return serial
            if serial in devices:
                raise NoDeviceError(
                    f"Android device {serial!r} is attached but {devices[serial]} (adb server on port "
                    f"{self.port}); an unauthorized phone must accept the USB-debugging prompt, an offline "
                    f"emulator may still be booting. Devices: {listing}."
                )
            raise NoDeviceError(
                f"no Android device {serial!r} is attached (adb server on port {self.port} sees: {listing}). "
                + HOW_TO_ATTACH
            )
        if not ready:
            raise NoDeviceError(
                f"no Android device is attached (adb server on port {self.port} sees: {listing}). " + HOW_TO_ATTACH
            )
        if len(ready) > 1:
            raise NoDeviceError(f"several Android devices are attached ({listing}); choose one with --serial")
        return ready[0]


class AdbDevice:
    """One device behind an adb server. Every method is a coroutine with a timeout."""

    def __init__(self, server: AdbServer, serial: str, timeout: float = DEFAULT_TIMEOUT):
        self.server = server
        self.serial = serial
        self.timeout = timeout
        self._has_adb_keyboard: bool | None = None
        self._root: bool | None = None

    # -- transport -------------------------------------------------------------------------
    async def adb(self, *args: str, timeout: float | None = None, stdin: bytes | None = None) -> AdbResult:
        result = await run_adb(self.server.binary, self.server.port, ["-s", self.serial, *args],
                               timeout or self.timeout, stdin)
        err = result.error_text
        if result.returncode != 0 and _DEVICE_GONE.search(err):
            raise AdbError(f"Android device {self.serial!r} is gone: {err}")
        return result

    async def shell(self, command: str, timeout: float | None = None, check: bool = True) -> str:
        """Run one device shell line; with ``check`` a non-zero exit raises AdbError with its output."""
        result = await self.adb("shell", command, timeout=timeout)
        if check and result.returncode != 0:
            raise AdbError(f"`adb -s {self.serial} shell {command}` failed ({result.returncode}): {result.error_text}")
        return result.text

    async def exec_out(self, command: str, timeout: float | None = None) -> bytes:
        """Binary-clean stdout of a device command (``exec-out`` does not translate line endings)."""
        result = await self.adb("exec-out", command, timeout=timeout)
        if result.returncode != 0:
            raise AdbError(f"`adb -s {self.serial} exec-out {command}` failed: {result.error_text}")
        return result.stdout

    async def state(self) -> str:
        result = await run_adb(self.server.binary, self.server.port, ["-s", self.serial, "get-state"], 10.0)
        return result.text.strip() if result.returncode == 0 else "absent"

    # -- screen ----------------------------------------------------------------------------
    async def screencap(self) -> np.ndarray:
        data = await self.exec_out("screencap -p")
        try:
            return C.decode_png(data)
        except ValueError as err:
            raise AdbError(f"{self.serial}: {err}") from None

    async def screen_size(self) -> tuple[int, int]:
        return C.parse_wm_size(await self.shell("wm size"))

    async def density(self) -> int | None:
        return C.parse_wm_density(await self.shell("wm density"))

    async def lock_portrait(self) -> None:
        """Turn auto-rotate off and pin rotation 0, so the screen size stays fixed for a session."""
        await self.shell("settings put system accelerometer_rotation 0; settings put system user_rotation 0")

    # -- input -----------------------------------------------------------------------------
    async def tap(self, x: int, y: int) -> None:
        await self.shell(C.tap_command(x, y))

    async def swipe(self, x1: int, y1: int, x2: int, y2: int, seconds: float) -> None:
        await self.shell(C.swipe_command(x1, y1, x2, y2, seconds), timeout=seconds + self.timeout)

    async def long_press(self, x: int, y: int, seconds: float) -> None:
        await self.swipe(x, y, x, y, seconds)

    async def keyevent(self, code: int) -> None:
        await self.shell(f"input keyevent {int(code)}")

    async def keys(self, keys: tuple[str, ...]) -> None:
        await self.shell(C.key_command(keys))

    async def type_text(self, text: str) -> None:
        """Type text: ``input text`` for plain ASCII, else the ADBKeyBoard IME, else the clipboard + paste."""
        for chunk in C.text_chunks(text):
            if isinstance(chunk, int):
                await self.keyevent(chunk)
            elif C.is_plain_ascii(chunk):
                await self.shell(C.input_text_command(chunk))
            else:
                await self._type_unicode(chunk)

    async def has_adb_keyboard(self) -> bool:
        if self._has_adb_keyboard is None:
            listed = await self.shell("ime list -a -s", check=False)
            self._has_adb_keyboard = C.ADB_KEYBOARD_IME in listed.split()
        return self._has_adb_keyboard

    async def _type_unicode(self, text: str) -> None:
        """Non-ASCII text: the ADBKeyBoard IME when installed, else ``cmd clipboard`` + paste.

        ``cmd clipboard set-primary-clip`` exists on some builds only (it is not a stock AOSP shell
        command); ``service call clipboard`` is not used because its transaction codes and parcel layout
        change between Android versions. Without either, the action is refused with the fix named.
        """
        if await self.has_adb_keyboard():
            previous = (await self.shell("settings get secure default_input_method", check=False)).strip()
            await self.shell(f"ime enable {C.ADB_KEYBOARD_IME}; ime set {C.ADB_KEYBOARD_IME}")
            try:
                await self.shell(C.adb_keyboard_broadcast(text))
            finally:
                if previous and previous != "null" and previous != C.ADB_KEYBOARD_IME:
                    await self.shell("ime set " + shlex.quote(previous), check=False)
            return
        result = await self.adb("shell", C.clipboard_set_command(text))
        out = (result.text + result.stderr.decode("utf-8", "replace")).strip()
        refused = ("Unknown", "not found", "rror", "No shell command", "Can't find", "usage", "Usage")
        if result.returncode != 0 or any(marker in out for marker in refused):
            raise InvalidAction(
                "type: this device cannot type non-ASCII text: install the ADBKeyBoard IME "
                "(https://github.com/senzhk/ADBKeyBoard; `adb install ADBKeyboard.apk`) so MintGym can "
                f"commit it, or type ASCII only ({out.strip()[:120]})"
            )
        await self.keyevent(C.KEYCODE_PASTE)

    # -- apps ------------------------------------------------------------------------------
    async def packages(self) -> list[str]:
        return C.parse_packages(await self.shell("pm list packages"))

    async def launcher_packages(self) -> list[str]:
        out = await self.shell("cmd package query-activities --brief -a android.intent.action.MAIN "
                               "-c android.intent.category.LAUNCHER", check=False)
        pkgs = []
        for line in out.splitlines():
            line = line.strip()
            if "/" in line and " " not in line:
                pkg = line.split("/", 1)[0]
                if pkg not in pkgs:
                    pkgs.append(pkg)
        return pkgs

    async def launch(self, package: str) -> None:
        """Start ``package``'s launcher activity: the resolved component via ``am start``, else monkey."""
        out = await self.shell("cmd package resolve-activity --brief -c android.intent.category.LAUNCHER "
                               + shlex.quote(package), check=False)
        lines = [line.strip() for line in out.splitlines() if line.strip()]
        component = lines[-1] if lines and "/" in lines[-1] and " " not in lines[-1] else None
        if component:
            await self.shell("am start -W -n " + shlex.quote(component), timeout=30)
        else:
            await self.shell(C.launch_command(package), timeout=30)

    async def clear_app(self, package: str) -> None:
        await self.shell("pm clear " + shlex.quote(package), check=False)

    async def force_stop(self, package: str) -> None:
        await self.shell("am force-stop " + shlex.quote(package), check=False)

    async def foreground_package(self) -> str | None:
        return C.parse_foreground(await self.shell("dumpsys window", check=False))

    # -- state -----------------------------------------------------------------------------
    async def ui_dump(self) -> str:
        """The uiautomator XML of the current window (dumped to /sdcard, then read back)."""
        out = await self.shell("uiautomator dump /sdcard/window_dump.xml >/dev/null && cat /sdcard/window_dump.xml",
                               timeout=30, check=False)
        if "<hierarchy" not in out:
            raise AdbError(f"{self.serial}: uiautomator dump failed: {out.strip()[:200]}")
        return out

    async def is_root(self) -> bool:
        if self._root is None:
            uid = (await self.shell("id -u", check=False)).strip()
            self._root = uid == "0"
        return self._root

    async def root_shell(self, command: str, timeout: float | None = None) -> str:
        """Run as root: directly when adbd runs as root (``adb root``), else through ``su 0``."""
        if await self.is_root():
            return await self.shell(command, timeout=timeout)
        return await self.shell("su 0 sh -c " + shlex.quote(command), timeout=timeout)

    async def boot_completed(self) -> bool:
        return (await self.shell("getprop sys.boot_completed", check=False)).strip() == "1"

    async def snapshot_load(self, name: str) -> None:
        """Restore an emulator snapshot (``adb emu avd snapshot load NAME``); emulators only."""
        if not self.serial.startswith("emulator-"):
            raise BackendError(f"snapshot restore needs an emulator; {self.serial!r} is not one")
        result = await self.adb("emu", "avd", "snapshot", "load", name, timeout=120)
        if result.returncode != 0 or "KO" in result.text:
            raise AdbError(f"{self.serial}: could not load snapshot {name!r}: {result.error_text or result.text}")
