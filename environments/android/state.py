"""What task evaluators read from a device, behind one small interface.

:class:`DeviceState` is all an evaluator may use; :class:`AdbDeviceState` answers it over adb
(``settings get``, ``content query``, files in /sdcard, ``dumpsys``, ``sqlite3`` as root). Keeping the
evaluators on this interface lets their scoring rules be read and tested apart from a device.
"""

from __future__ import annotations

import shlex
from typing import Protocol, runtime_checkable

from mintgym.environments.android import commands as C
from mintgym.environments.android.adb import AdbDevice, AdbError


@runtime_checkable
class DeviceState(Protocol):
    async def setting(self, namespace: str, key: str) -> str | None:
        """``settings get NAMESPACE KEY`` (namespace: system, secure, global); None when unset."""

    async def content_query(self, uri: str, columns: tuple[str, ...] | None = None,
                            where: str | None = None) -> list[dict[str, str]]:
        """Rows of a content provider (``content query --uri ...``)."""

    async def files(self, directory: str) -> list[str]:
        """Names of the entries of a directory on the device; [] when it does not exist."""

    async def read_file(self, path: str) -> str | None:
        """A file's text, None when it does not exist."""

    async def foreground_package(self) -> str | None:
        """The package of the focused window."""

    async def sqlite(self, database: str, sql: str) -> list[list[str]] | None:
        """Rows of a query on an app database (needs root); None when the database cannot be read."""


class AdbDeviceState:
    """:class:`DeviceState` over an :class:`AdbDevice`."""

    def __init__(self, device: AdbDevice):
        self.device = device

    async def setting(self, namespace: str, key: str) -> str | None:
        if namespace not in ("system", "secure", "global"):
            raise ValueError(f"settings namespace must be system, secure or global, not {namespace!r}")
        out = (await self.device.shell(f"settings get {namespace} {shlex.quote(key)}")).strip()
        return None if out in ("", "null") else out

    async def content_query(self, uri: str, columns: tuple[str, ...] | None = None,
                            where: str | None = None) -> list[dict[str, str]]:
        cmd = "content query --uri " + shlex.quote(uri)
        if columns:
            cmd += " --projection " + shlex.quote(":".join(columns))
        if where:
            cmd += " --where " + shlex.quote(where)
        return C.parse_content_rows(await self.device.shell(cmd, check=False), columns)

    async def files(self, directory: str) -> list[str]:
        out = await self.device.shell(f"ls -1 {shlex.quote(directory)} 2>/dev/null", check=False)
        return [line.strip() for line in out.splitlines() if line.strip()]

    async def read_file(self, path: str) -> str | None:
        out = await self.device.shell(f"[ -f {shlex.quote(path)} ] && cat {shlex.quote(path)} || echo __MISSING__",
                                      check=False)
        return None if out.strip() == "__MISSING__" else out

    async def foreground_package(self) -> str | None:
        return await self.device.foreground_package()

    async def sqlite(self, database: str, sql: str) -> list[list[str]] | None:
        cmd = f"[ -f {shlex.quote(database)} ] && sqlite3 -separator '|' {shlex.quote(database)} {shlex.quote(sql)}"
        try:
            out = await self.device.root_shell(cmd)
        except AdbError:  # no root or no such database: nothing to score from
            return None
        return [line.split("|") for line in out.splitlines() if line.strip()]
