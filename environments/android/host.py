"""AndroidHost: the env server's shared part -- an adb server on a loopback port and the devices it serves.

``AndroidHost(serial="emulator-5554").start()`` starts (and on ``stop`` kills) its own adb server on a
free loopback port, or uses the one on ``adb_port`` if it already runs there (that one is left running),
and fails at once with :class:`~mintgym.environments.android.adb.NoDeviceError` (a BackendError) when the
device is not attached. Each session gets one device to itself; ``serial`` may list several
(``"emulator-5554,emulator-5556"``) to serve that many sessions.
"""

from __future__ import annotations

from typing import Any, ClassVar

from mintgym.env.core import EnvironmentHost
from mintgym.environments.android.adb import AdbDevice, AdbServer, NoDeviceError
from mintgym.environments.android.env import AndroidEnvironment
from mintgym.environments.android.options import AndroidOptions


class AndroidHost(EnvironmentHost):
    domain: ClassVar[str] = "android"
    options_model: ClassVar[type[AndroidOptions]] = AndroidOptions

    def __init__(self, serial: str | list[str] | None = None, adb_port: int | None = None,
                 adb_path: str | None = None, snapshot: str | None = None, settle: float = 0.5,
                 timeout: float = 20.0):
        if isinstance(serial, str):
            serial = [s.strip() for s in serial.split(",") if s.strip()]
        self.requested: list[str] = list(serial or [])
        self.adb_port = adb_port
        self.adb_path = adb_path
        self.snapshot = snapshot
        self.settle = settle
        self.timeout = timeout
        self.server: AdbServer | None = None
        self.serials: list[str] = []
        self._busy: set[str] = set()

    async def start(self) -> None:
        """Start the adb server and check every requested device; raise NoDeviceError naming the fix."""
        if self.server is not None:
            return
        server = AdbServer(self.adb_port, self.adb_path)
        await server.start()
        try:
            if self.requested:
                self.serials = [await server.select(s) for s in self.requested]
            else:
                self.serials = [await server.select(None)]
        except BaseException:
            await server.stop()
            raise
        self.server = server

    async def stop(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            await server.stop()

    async def healthy(self) -> bool:
        return self.server is not None and await self.server.alive()

    async def create(self, options: dict[str, Any]) -> AndroidEnvironment:
        """A started environment on a free device (option ``serial`` picks one; ``snapshot``, ``settle``)."""
        unknown = set(options) - {"serial", "snapshot", "settle"}
        if unknown:
            raise ValueError(f"unknown android session options {sorted(unknown)}; known: serial, snapshot, settle")
        if self.server is None:
            await self.start()
        server = self.server
        if server is None:
            raise NoDeviceError("the Android host's adb server is not running")
        wanted = options.get("serial")
        if wanted is not None and wanted not in self.serials:
            await server.select(wanted)  # raises NoDeviceError if it is not attached
            self.serials.append(wanted)
        free = [s for s in ([wanted] if wanted else self.serials) if s not in self._busy]
        if not free:
            raise NoDeviceError(
                f"every Android device of this host is serving a session ({', '.join(self.serials)}); "
                "attach another emulator and pass it with --serial, or close a session"
            )
        serial = free[0]
        self._busy.add(serial)
        env = AndroidEnvironment(
            AdbDevice(server, serial, self.timeout),
            snapshot=options.get("snapshot", self.snapshot),
            settle=float(options.get("settle", self.settle)),
            on_close=self._busy.discard,
        )
        try:
            await env.start()
        except BaseException:
            self._busy.discard(serial)
            raise
        return env

    def describe(self) -> dict[str, Any]:
        return {"adb_port": self.server.port if self.server else self.adb_port, "serials": list(self.serials),
                "busy": sorted(self._busy), "snapshot": self.snapshot}
