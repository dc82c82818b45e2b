"""Layer 2: the sync client's HTTP/1.1 transport on the standard library's ``http.client``.

One keep-alive connection per client. Measured here, a 2.7 MB raw frame takes about 0.6 ms through
``http.client`` against 6.6 ms through httpx (which reads bodies in 64 KiB pieces), so the gymnasium
client's hot path uses this. Connections idle longer than the server's keep-alive are reopened before
a request rather than retried after it, so a step is never sent twice.
"""

from __future__ import annotations

import http.client
import json as jsonlib
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from mintgym.errors import ServerError

#: Reopen a connection idle for longer than this (the env server keeps connections 75 s).
IDLE_REOPEN_SECONDS = 60.0


@dataclass
class HttpResponse:
    status_code: int
    headers: dict[str, str]
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self):
        return jsonlib.loads(self.content)


class HttpTransport:
    def __init__(self, base_url: str, headers: dict[str, str] | None = None, timeout: float = 120.0):
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"env server URL must be http:// or https://, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.prefix = parts.path.rstrip("/")
        self._cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self._host, self._port = parts.hostname, parts.port
        self.headers = dict(headers or {})
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None
        self._last_used = 0.0
        self.closed = False

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is not None and time.monotonic() - self._last_used > IDLE_REOPEN_SECONDS:
            self._conn.close()
            self._conn = None
        if self._conn is None:
            self._conn = self._cls(self._host, self._port, timeout=self.timeout)
        return self._conn

    def request(self, method: str, path: str, json: dict | None = None) -> HttpResponse:
        if self.closed:
            raise ServerError("this client is closed")
        body = None if json is None else jsonlib.dumps(json).encode()
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/json"
        retryable = method in ("GET", "DELETE")
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.request(method, self.prefix + path, body=body, headers=headers)
                resp = conn.getresponse()
                content = resp.read()
                self._last_used = time.monotonic()
                if resp.getheader("connection", "").lower() == "close":
                    conn.close()
                    self._conn = None
                return HttpResponse(resp.status, {k.lower(): v for k, v in resp.getheaders()}, content)
            except TimeoutError as err:
                self._drop()
                raise ServerError(f"env server at {self.base_url} did not answer {method} {path} "
                                  f"within {self.timeout:.0f}s") from err
            except (http.client.HTTPException, OSError) as err:
                self._drop()
                if retryable and attempt == 0:
                    continue
                raise ServerError(f"env server at {self.base_url} failed on {method} {path}: "
                                  f"{type(err).__name__}: {err}") from err
        raise AssertionError("unreachable")

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        self._drop()
        self.closed = True
