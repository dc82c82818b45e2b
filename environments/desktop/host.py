"""DesktopHost: the env server's factory of desktop sessions (each its own Xvfb, WM and user)."""

from __future__ import annotations

import shutil
import weakref
from typing import Any, ClassVar

from mintgym.env.core import EnvironmentHost
from mintgym.environments.desktop import namespace
from mintgym.environments.desktop.env import DesktopEnvironment
from mintgym.environments.desktop.options import DesktopOptions
from mintgym.environments.isolation import cgroups

REQUIRED_BINARIES = ("Xvfb", "openbox", "xterm", "xauth", "xhost")
APPS = {"terminal": "xterm", "editor": "mousepad", "calc": "localc", "writer": "lowriter", "viewer": "feh",
        "browser": "chromium", "vlc": "vlc", "gimp": "gimp", "impress": "loimpress"}


class DesktopHost(EnvironmentHost):
    """Sessions share nothing but the home template; options: :class:`DesktopOptions`."""

    domain: ClassVar[str] = "desktop"
    options_model = DesktopOptions

    def __init__(self, **defaults: Any):
        self.defaults = defaults
        self.sessions: weakref.WeakSet[DesktopEnvironment] = weakref.WeakSet()

    async def start(self) -> None:
        missing = [b for b in REQUIRED_BINARIES if shutil.which(b) is None]
        if missing:
            raise RuntimeError(f"the desktop host needs {', '.join(missing)} installed")

    async def create(self, options: dict[str, Any]) -> DesktopEnvironment:
        checked = DesktopOptions.model_validate(options).model_dump(exclude_unset=True)  # in-process use too
        env = DesktopEnvironment(**{**self.defaults, **checked})
        await env.start()
        self.sessions.add(env)
        return env

    async def stop(self) -> None:
        for env in list(self.sessions):
            await env.close()
        self.sessions.clear()

    async def healthy(self) -> bool:
        return all(shutil.which(b) for b in REQUIRED_BINARIES)

    def describe(self) -> dict[str, Any]:
        namespaces = namespace.available()
        limits = cgroups.probe()[0]
        return {"apps": {name: bool(shutil.which(binary)) for name, binary in APPS.items()},
                "isolation": "one X display and one unprivileged user per session; "
                             + (f"no namespaces ({namespaces})" if namespaces else
                                "per episode its own network, IPC, mount and PID namespaces and an allow-list root"),
                "limits": f"not enforced: {limits}" if limits else
                          "memory_mb, processes and cpus enforced by the session's control group; disk_mb by its tmpfs"}
