"""OSWorld's getters that read the desktop's accessibility tree, run as OSWorld's own code.

``accessibility_tree`` returns the session's AT-SPI tree in OSWorld's XML (:mod:`..accessibility`). The
getters that find the active tab's URL in that tree (the address bar's text, ``goto_prefix`` in front)
and then read the page over Chrome's DevTools (``active_url_from_accessTree``, ``active_tab_html_parse``,
``active_tab_url_parse``, ``url_dashPart``, ``url_path_parse``, ``macys_product_url_parse``) are
desktop-env's own functions, loaded by :func:`~.metric_loader.load_getter_module` and called in a worker
thread (they use Playwright's sync API) with :class:`VMView`, which answers what they ask of OSWorld's
``DesktopEnv``: the VM's address and Chrome's DevTools port (the session's port, bridged to the server's
loopback) and the controller's tree.

The session's ``google-chrome`` is Chromium, whose tree names its application ``Chromium``; OSWorld's code
looks for ``Google Chrome`` on x86 machines (its VM runs Chrome), so the XML handed to these getters and
to ``check_accessibility_tree`` names it so there.
"""

from __future__ import annotations

import asyncio
import platform
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
    """The parts of OSWorld's ``DesktopEnv`` its Chrome getters use, for one session at one moment."""

    def __init__(self, devtools_url: str | None, tree_xml: str | None):
        parts = urlsplit(devtools_url) if devtools_url else None
        self.vm_ip = parts.hostname if parts else "127.0.0.1"
        self.chromium_port = parts.port if parts else 0
        #: OSWorld's fallback (launch Chrome through the VM server) is done before the call instead.
        self.server_port = None
        self.controller = self
        self._tree_xml = tree_xml

    def get_accessibility_tree(self) -> str | None:
        return self._tree_xml


async def tree_xml(env: DesktopEnvironment) -> str | None:
    """The session's tree in OSWorld's XML, or None when it has none (as OSWorld's controller answers)."""
    try:
        tree = await env.accessibility_tree()
    except (accessibility.AccessibilityUnavailable, ValueError, TimeoutError):
        return None
    return accessibility.osworld_xml(tree, APP_NAMES)


async def accessibility_tree(env: DesktopEnvironment, config: dict) -> str | None:
    return await tree_xml(env)


def _osworld(name: str, needs_browser: bool):
    async def getter(env: DesktopEnvironment, config: dict) -> Any:
        from mintgym.environments.desktop.osworld.chrome import ensure_browser
        from mintgym.environments.desktop.osworld.metric_loader import load_getter_module

        function = getattr(load_getter_module("chrome"), f"get_{name}")
        devtools_url = None
        if needs_browser:
            await ensure_browser(env)  # what OSWorld's getter does itself when it cannot connect
            devtools_url = await env.devtools().start()
        view = VMView(devtools_url, await tree_xml(env))
        return await asyncio.to_thread(function, view, dict(config))

    getter.__name__ = name
    return getter


GETTERS = {
    "accessibility_tree": accessibility_tree,
    "active_url_from_accessTree": _osworld("active_url_from_accessTree", needs_browser=False),
    "active_tab_html_parse": _osworld("active_tab_html_parse", needs_browser=True),
    "active_tab_url_parse": _osworld("active_tab_url_parse", needs_browser=False),
    "url_dashPart": _osworld("url_dashPart", needs_browser=False),
    "url_path_parse": _osworld("url_path_parse", needs_browser=False),
    "macys_product_url_parse": _osworld("macys_product_url_parse", needs_browser=False),
}
