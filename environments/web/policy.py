"""Which URLs a web session may load: the host's own loopback server, plus an explicit allow-list.

The default keeps the browser from becoming an open proxy: agent ``goto`` actions and every request a page
makes (sub-resources, fetch, forms, redirects) are checked against the same policy. Agent navigations are
stricter still (:meth:`UrlPolicy.check_goto`): a ``goto`` may open only http(s) pages and ``about:blank``,
never ``data:``, ``blob:`` or ``javascript:`` URLs, so the agent cannot load a page of its own making.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlsplit

_LOOPBACK_NAMES = ("localhost",)


def is_loopback(hostname: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1."""
    name = hostname.strip("[]").lower()
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class UrlPolicy:
    """Origins a session may reach.

    Args:
        own_ports: ports of the host's own loopback servers (always allowed on loopback).
        allow_loopback: allow every loopback port, not only the host's own servers.
        allow: extra ``host`` or ``host:port`` entries (non-loopback ones included) that are allowed.
    """

    own_ports: frozenset[int] = field(default=frozenset())
    allow_loopback: bool = False
    allow: tuple[str, ...] = ()

    def proxy_bypass(self) -> str:
        """Chromium's proxy bypass list for this policy: the hosts a session reaches directly.

        Sessions use a proxy that accepts no connection (see ``WebHost``), so any socket Chromium opens on its
        own (a preconnect for a navigation that routing then blocks) goes nowhere; only the host's servers and
        the allow-list are reached directly. ``<-loopback>`` removes Chromium's implicit loopback bypass.
        """
        entries = [f"127.0.0.1:{port}" for port in sorted(self.own_ports)] + [e.lower() for e in self.allow]
        if not self.allow_loopback:
            entries.insert(0, "<-loopback>")
        return ";".join(entries)

    def check_goto(self, url: str) -> str | None:
        """None when the agent may navigate to ``url`` (http(s) within :meth:`check`, or about:blank)."""
        if url == "about:blank":
            return None
        try:
            scheme = urlsplit(url).scheme.lower()
        except ValueError as err:
            return f"the URL cannot be parsed: {err}"
        if scheme not in ("http", "https"):
            return (f"scheme {scheme or '(none)'!r} is not allowed for navigation (only http, https and "
                    "about:blank); pages of the agent's own making (data:, blob:, javascript:) are never opened")
        return self.check(url)

    def check(self, url: str) -> str | None:
        """None when ``url`` may be loaded by a page, else the reason it may not."""
        if url in ("about:blank", "about:srcdoc") or url.startswith(("data:", "blob:")):
            return None
        try:
            parts = urlsplit(url)
        except ValueError as err:
            return f"the URL cannot be parsed: {err}"
        if parts.scheme not in ("http", "https", "ws", "wss"):
            return f"scheme {parts.scheme or '(none)'!r} is not allowed (only http and https)"
        host = (parts.hostname or "").lower()
        if not host:
            return "the URL has no host"
        try:
            port = parts.port or (443 if parts.scheme in ("https", "wss") else 80)
        except ValueError:
            return "the URL has an invalid port"
        for entry in self.allow:
            entry = entry.lower()
            if entry == host or entry == f"{host}:{port}":
                return None
        if is_loopback(host):
            if self.allow_loopback or port in self.own_ports:
                return None
            return (f"loopback port {port} is not one of this host's servers; "
                    "add it to the session option 'allow' or set 'allow_loopback'")
        return (f"{host} is not a loopback address; web sessions reach only the host's local servers "
                "unless the session option 'allow' lists the host")
