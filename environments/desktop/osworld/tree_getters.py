"""OSWorld's getters that need more of OSWorld's VM than a file, run as OSWorld's own code.

``accessibility_tree`` returns the session's AT-SPI tree in OSWorld's XML (:mod:`..accessibility`). The
getters that find the active tab's URL in that tree (the address bar's text, ``goto_prefix`` in front)
and then read the page over Chrome's DevTools (``active_url_from_accessTree``, ``active_tab_html_parse``,
``active_tab_url_parse``, ``url_dashPart``, ``url_path_parse``, ``macys_product_url_parse``) are
desktop-env's own functions, loaded by :func:`~.metric_loader.load_getter_module` and called in a worker
thread (they use Playwright's sync API) with :class:`VMView`, which answers what they ask of OSWorld's
``DesktopEnv``: the VM's address and ports (Chrome's DevTools, VLC's HTTP interface: the session's own
loopback ports, bridged to the server's loopback), a cache folder, and the controller's tree, files and
Python commands. So do ``content_from_vm_file``, ``info_from_website``, ``find_unpacked_extension_path``
``vscode_config`` (its key presses go through the session's pyautogui) and ``vlc_playing_info`` (the session's
``vlc`` serves its HTTP interface on the session's port 8080 with OSWorld's password).

The session's ``google-chrome`` is Chromium, whose tree names its application ``Chromium``; OSWorld's code
looks for ``Google Chrome`` on x86 machines (its VM runs Chrome), so the XML handed to these getters and
to ``check_accessibility_tree`` names it so there.
"""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
import tempfile
from typing import Any
from urllib.parse import urlsplit

from mintgym.environments.desktop import accessibility
from mintgym.environments.desktop.env import DesktopEnvironment

#: Application renames so OSWorld's selectors find the session's apps under their names in OSWorld's VM.
APP_NAMES = {} if "arm" in platform.machine().lower() or "aarch" in platform.machine().lower() \
    else {"Chromium": "Google Chrome"}
#: Getter types whose OSWorld code reads the tree: a task using one runs its session with the AT-SPI bus.
TREE_GETTERS = ("accessibility_tree", "active_url_from_accessTree", "active_tab_html_parse", "active_tab_url_parse",
                "url_dashPart", "url_path_parse", "macys_product_url_parse")


class VMView:
    """The parts of OSWorld's ``DesktopEnv`` its getters use, for one session at one moment.

    Called from the getter's worker thread: file reads go straight to the session's files, commands run
    on the server's event loop (``loop``) as the session user.
    """

    vm_platform = "Linux"
    current_use_proxy = False
    #: OSWorld's fallback (launch Chrome through the VM server) is done before the call instead.
    server_port = None

    def __init__(self, env: DesktopEnvironment | None = None, *, tree_xml: str | None = None,
                 ports: dict[str, str] | None = None, cache_dir: str | None = None,
                 loop: asyncio.AbstractEventLoop | None = None):
        self.vm_ip = "127.0.0.1"
        self.chromium_port = self.vlc_port = 0
        for name, url in (ports or {}).items():  # e.g. {"chromium_port": "http://127.0.0.1:40123"}
            setattr(self, name, urlsplit(url).port)
        self.cache_dir = cache_dir or ""
        self.controller = self
        self._env, self._tree_xml, self._loop = env, tree_xml, loop

    def get_accessibility_tree(self) -> str | None:
        return self._tree_xml

    def get_file(self, path: str) -> bytes | None:
        return None if self._env is None else self._env.read_bytes(path)

    def execute_python_command(self, code: str) -> dict:
        """Run ``code`` with the session's python (its pyautogui acts through XTEST), behind the prefix
        OSWorld's ``PythonController`` puts in front of every command."""
        if self._env is None or self._loop is None:
            raise RuntimeError("this view of the session runs no commands")
        run = self._env.run(["python", "-c", PYTHON_PREFIX.format(command=code)], timeout=90)
        result = asyncio.run_coroutine_threadsafe(run, self._loop).result()
        return {"status": "success", "output": result.stdout, "error": result.stderr, "returncode": result.returncode}


async def tree_xml(env: DesktopEnvironment) -> str | None:
    """The session's tree in OSWorld's XML, or None when it has none (as OSWorld's controller answers)."""
    try:
        tree = await env.accessibility_tree()
    except (accessibility.AccessibilityUnavailable, ValueError, TimeoutError):
        return None
    return accessibility.osworld_xml(tree, APP_NAMES)


async def accessibility_tree(env: DesktopEnvironment, config: dict) -> str | None:
    return await tree_xml(env)


#: What OSWorld's ``PythonController.execute_python_command`` runs before each command.
PYTHON_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; {command}"
#: Loopback ports inside the session that OSWorld's getters talk to, by the ``DesktopEnv`` attribute naming them.
PORTS = {"chromium_port": 1337, "vlc_port": 8080}


def _osworld(module: str, name: str, ports: tuple[str, ...] = (), tree: bool = False):
    async def getter(env: DesktopEnvironment, config: dict) -> Any:
        from mintgym.environments.desktop.devtools import DevToolsBridge
        from mintgym.environments.desktop.osworld.chrome import ensure_browser
        from mintgym.environments.desktop.osworld.metric_loader import load_getter_module

        function = getattr(load_getter_module(module), f"get_{name}")
        if "chromium_port" in ports:
            await ensure_browser(env)  # what OSWorld's getter does itself when it cannot connect
        bridges = {port: env.devtools() if port == "chromium_port" else DevToolsBridge(env.connect, PORTS[port])
                   for port in ports}
        try:
            urls = {port: await bridge.start() for port, bridge in bridges.items()}
            with tempfile.TemporaryDirectory(prefix="mintgym-osworld-getter-") as cache:
                view = VMView(env, tree_xml=await tree_xml(env) if tree else None, ports=urls,
                              cache_dir=cache, loop=asyncio.get_running_loop())
                result = await asyncio.to_thread(function, view, dict(config))
                return _kept(result, cache)
        finally:
            for port, bridge in bridges.items():
                if port != "chromium_port":  # the session keeps its DevTools bridge
                    await bridge.close()

    getter.__name__ = name
    return getter


def _kept(result: Any, cache: str) -> Any:
    """A path the getter wrote into the temporary cache, moved to a file that outlives the call."""
    if isinstance(result, str) and result.startswith(cache + os.sep) and os.path.isfile(result):
        fd, kept = tempfile.mkstemp(prefix="mintgym-osworld-", suffix=os.path.basename(result))
        os.close(fd)
        shutil.move(result, kept)
        return kept
    return result


GETTERS = {
    "accessibility_tree": accessibility_tree,
    "active_url_from_accessTree": _osworld("chrome", "active_url_from_accessTree", tree=True),
    "active_tab_html_parse": _osworld("chrome", "active_tab_html_parse", ("chromium_port",), tree=True),
    "active_tab_url_parse": _osworld("chrome", "active_tab_url_parse", tree=True),
    "url_dashPart": _osworld("chrome", "url_dashPart", tree=True),
    "url_path_parse": _osworld("chrome", "url_path_parse", tree=True),
    "macys_product_url_parse": _osworld("chrome", "macys_product_url_parse", tree=True),
    "info_from_website": _osworld("chrome", "info_from_website", ("chromium_port",)),
    "find_unpacked_extension_path": _osworld("chrome", "find_unpacked_extension_path"),
    "content_from_vm_file": _osworld("file", "content_from_vm_file"),
    "vlc_playing_info": _osworld("vlc", "vlc_playing_info", ("vlc_port",)),
    "vscode_config": _osworld("vscode", "vscode_config"),
}
