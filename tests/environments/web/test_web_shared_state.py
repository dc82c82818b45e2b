"""What one Chromium could share between the sessions (browser contexts) of a host, checked channel by channel:
storage, messaging, blob URLs, locks, the HTTP cache, connections, downloads and clipboard permissions stay per
session (docs/security.md lists each channel). The clipboard itself: test_web_clipboard.py."""

from __future__ import annotations

import glob
import http.server
import os
import threading

import pytest
import pytest_asyncio
from playwright.async_api import Error as PlaywrightError

pytestmark = [pytest.mark.web, pytest.mark.asyncio(loop_scope="module")]

DOWNLOAD = "mintgym-shared-state-download.txt"


@pytest.fixture(scope="module")
def site():
    """A keep-alive loopback site: ``/cached`` may be cached for an hour, ``/dl`` is a download; it records the
    (path, client port) of every request."""
    seen: list[tuple[str, int]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            seen.append((self.path, self.client_address[1]))
            body, headers = b"<!doctype html><title>site</title>", {"Content-Type": "text/html"}
            if self.path == "/cached":
                body, headers = b"cached", {"Content-Type": "text/plain", "Cache-Control": "max-age=3600"}
            elif self.path == "/dl":
                body, headers = b"secret", {"Content-Disposition": f"attachment; filename={DOWNLOAD}"}
            self.send_response(200)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{httpd.server_address[1]}", seen
    httpd.shutdown()
    httpd.server_close()


@pytest_asyncio.fixture(loop_scope="module")
async def pair(host, site):
    netloc, _ = site
    envs = [await host.create({"allow": [netloc]}) for _ in range(2)]
    for env in envs:
        await env.open(f"http://{netloc}/")
    yield envs
    for env in envs:
        await env.close()


async def test_storage_messaging_blobs_and_locks_stay_in_their_session(pair):
    a, b = pair
    await b.evaluate_js("() => { window.heard = []; window.channel = new BroadcastChannel('c');"
                        " channel.onmessage = (e) => heard.push(e.data); }")
    blob = await a.evaluate_js("""async () => {
        localStorage.k = 'a'; sessionStorage.k = 'a';
        await new Promise((done) => { const r = indexedDB.open('db');
                                      r.onupgradeneeded = () => r.result.createObjectStore('s');
                                      r.onsuccess = () => { r.result.close(); done(); }; });
        await (await caches.open('cache')).put('/x', new Response('a'));
        navigator.locks.request('lock', () => new Promise(() => {}));
        new BroadcastChannel('c').postMessage('from a');
        return URL.createObjectURL(new Blob(['a'])); }""")
    assert await a.evaluate_js("() => indexedDB.databases().then((d) => d.map((x) => x.name))") == ["db"]
    seen_by_b = await b.evaluate_js("""async (blob) => [localStorage.k, sessionStorage.k,
        (await indexedDB.databases()).length, (await caches.keys()).length,
        (await navigator.locks.query()).held.length, window.heard.length,
        await fetch(blob).then(() => 'read', () => 'unreachable')]""", blob)
    assert seen_by_b == [None, None, 0, 0, 0, 0, "unreachable"]


async def test_http_cache_and_connections_are_per_session(pair, site):
    (a, b), (netloc, seen) = pair, site
    seen.clear()
    for env in (a, b):
        assert await env.evaluate_js("(u) => fetch(u).then((r) => r.text())", f"http://{netloc}/cached") == "cached"
    assert [path for path, _ in seen] == ["/cached", "/cached"]  # b's fetch is not answered from a's cache
    for env in (a, a, b):
        await env.evaluate_js("(u) => fetch(u, {cache: 'no-store'}).then((r) => r.text())", f"http://{netloc}/")
    ports = [port for path, port in seen if path == "/"]
    assert ports[0] == ports[1] != ports[2]  # a reuses its keep-alive connection; b never gets it


async def test_downloads_are_refused_and_nothing_is_written(pair, host, site):
    a, _ = pair
    netloc, _ = site
    with pytest.raises(PlaywrightError, match="Download is starting"):
        await a.main_page.goto(f"http://{netloc}/dl")
    places = [os.path.expanduser("~"), "/tmp", str(host._workdir)]
    assert not [f for place in places for f in glob.glob(f"{place}/**/{DOWNLOAD}*", recursive=True)]


async def test_pages_cannot_read_the_browsers_clipboard(pair):
    a, _ = pair
    result = await a.evaluate_js("() => navigator.clipboard.readText().then(() => 'read', (e) => e.name)")
    assert result == "NotAllowedError"
    assert await a.evaluate_js("() => document.execCommand('paste')") is False
