"""Red team: the env server's API and auth, attacked over HTTP on 127.0.0.1 (real servers: LocalProvider
subprocesses and ``python -m mintgym.server``), each attack asserting containment: refused with a 4xx (never
a 500 or a 2xx it should not get), the other session untouched, the server still serving."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time

import httpx
import psutil
import pytest

from mintgym.runtime.local import LocalProvider

SECRET = "api-redteam-token-a71c3d9e"
CAP_WIDTH = 2000


@pytest.fixture(scope="module")
def guarded():
    """A null server on loopback with a token and an operator cap on ``width``."""
    prov = LocalProvider()
    handle = prov.start("null", token=SECRET, options={"max_options": {"width": CAP_WIDTH}})
    prov.wait_ready(handle, 60)
    yield handle
    prov.stop(handle)


@pytest.fixture(scope="module")
def exposed():
    """A null server bound to every interface, started without a token (tests still talk to 127.0.0.1)."""
    prov = LocalProvider(bind="0.0.0.0")
    handle = prov.start("null")
    prov.wait_ready(handle, 60)
    yield handle
    prov.stop(handle)


@pytest.fixture(scope="module")
def tokenless():
    """A null server on loopback without a token (the default of ``mintgym.make``)."""
    prov = LocalProvider()
    handle = prov.start("null")
    prov.wait_ready(handle, 60)
    yield handle
    prov.stop(handle)


def _url(handle) -> str:
    return "http://127.0.0.1:" + handle.base_url.rsplit(":", 1)[1]


def _auth(token) -> dict:
    return {"Authorization": f"Bearer {token}"} if token else {}


@pytest.fixture
def victim(guarded):
    """A session of another client that must stay untouched."""
    url = _url(guarded)
    sid = httpx.post(f"{url}/v1/sessions", headers=_auth(SECRET), json={}, timeout=30).json()["session_id"]
    resp = httpx.post(f"{url}/v1/sessions/{sid}/reset", headers=_auth(SECRET), json={"task_id": "null/echo"},
                      timeout=30)
    assert resp.status_code == 200
    yield sid
    httpx.delete(f"{url}/v1/sessions/{sid}", headers=_auth(SECRET), timeout=30)


def _still_fine(handle, sid: str | None = None) -> None:
    url = _url(handle)
    assert httpx.get(f"{url}/v1/health", timeout=10).status_code == 200
    if sid is not None:
        shot = httpx.get(f"{url}/v1/sessions/{sid}/screenshot", headers=_auth(SECRET), timeout=10)
        assert shot.status_code == 200, shot.text


# ---- measured attacks of issue 17 ----------------------------------------------------------------------

def test_off_loopback_bind_always_has_a_token(exposed):
    assert exposed.token, "a server bound to 0.0.0.0 started without a token"
    url = _url(exposed)
    assert httpx.post(f"{url}/v1/sessions", json={}, timeout=30).status_code == 401
    created = httpx.post(f"{url}/v1/sessions", json={}, headers=_auth(exposed.token), timeout=30)
    assert created.status_code == 201


@pytest.mark.parametrize("path", ["/openapi.json", "/docs", "/redoc", "/v1/spec", "/v1/sessions"])
def test_schema_docs_and_routes_need_the_token(exposed, path):
    resp = httpx.get(_url(exposed) + path, timeout=10)
    assert resp.status_code in (401, 404), (path, resp.status_code)
    assert "MintGym" not in resp.text and "paths" not in resp.text
    if path == "/openapi.json":
        assert httpx.get(_url(exposed) + path, headers=_auth(exposed.token), timeout=10).status_code == 200


def test_health_says_nothing_without_the_token(exposed):
    body = httpx.get(_url(exposed) + "/v1/health", timeout=10).json()
    assert set(body) == {"status"}, body
    full = httpx.get(_url(exposed) + "/v1/health", headers=_auth(exposed.token), timeout=10).json()
    assert full["domain"] == "null"


def test_token_flag_is_refused_and_never_on_the_command_line(guarded):
    proc = psutil.Process(int(guarded.ident))
    assert not any(SECRET in part for part in proc.cmdline())
    done = subprocess.run([sys.executable, "-m", "mintgym.server", "null", "--port", "0", "--token", "abc"],
                          capture_output=True, text=True, timeout=60, check=False, env=_env_without_token())
    assert done.returncode != 0 and "--token" in done.stderr and "MINTGYM_TOKEN" in done.stderr


def test_passed_socket_off_loopback_needs_a_token():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("0.0.0.0", 0))
    listener.listen(8)
    try:
        done = subprocess.run([sys.executable, "-m", "mintgym.server", "null", "--fd", str(listener.fileno())],
                              pass_fds=[listener.fileno()], capture_output=True, text=True, timeout=60, check=False,
                              env=_env_without_token())
    finally:
        listener.close()
    assert done.returncode != 0 and "refusing to serve on 0.0.0.0" in done.stderr, done.stderr[-500:]


def test_token_file_must_be_private(tmp_path):
    path = tmp_path / "token"
    path.write_text("file-token-123\n")
    os.chmod(path, 0o644)
    done = subprocess.run([sys.executable, "-m", "mintgym.server", "null", "--port", "0", "--token-file", str(path)],
                          capture_output=True, text=True, timeout=60, check=False, env=_env_without_token())
    assert done.returncode != 0 and "chmod 600" in done.stderr, done.stderr[-500:]
    os.chmod(path, 0o600)
    with _serve_on_fd("--token-file", str(path)) as (url, pid):
        assert httpx.get(f"{url}/v1/sessions", timeout=5).status_code == 401
        assert httpx.get(f"{url}/v1/sessions", headers=_auth("file-token-123"), timeout=5).status_code == 200
        assert "file-token-123" not in " ".join(psutil.Process(pid).cmdline())


@contextlib.contextmanager
def _serve_on_fd(*args: str):
    """``python -m mintgym.server null`` on a loopback socket this test bound; yields (url, pid)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "mintgym.server", "null", "--fd", str(listener.fileno()), *args],
                            pass_fds=[listener.fileno()], env=_env_without_token(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    listener.close()
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url, proc.pid
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("host_header",
                         ["rebind.attacker.example", "rebind.attacker.example:{port}", "127.0.0.1.nip.io",
                                         "127.1", "0.0.0.0:{port}", ""])
def test_tokenless_server_refuses_rebound_names(tokenless, host_header):
    url = _url(tokenless)
    port = url.rsplit(":", 1)[1]
    resp = httpx.post(f"{url}/v1/sessions", json={}, headers={"Host": host_header.format(port=port)}, timeout=10)
    assert resp.status_code == 421, resp.status_code
    for name in (f"127.0.0.1:{port}", f"localhost:{port}"):
        assert httpx.get(f"{url}/v1/health", headers={"Host": name}, timeout=10).status_code == 200


# ---- wrong tokens --------------------------------------------------------------------------------------

@pytest.mark.parametrize("header", ["", "Bearer", "Bearer wrong", f"bearer {SECRET}", f"Bearer {SECRET}x",
                                    f"Bearer {SECRET[:-1]}", f"Basic {SECRET}", f"Bearer  {SECRET}",
                                    "Bearer " + "a" * 20000, f"Bearer {SECRET}\u00e9".encode().decode("latin-1")])
def test_wrong_tokens_are_refused(guarded, victim, header):
    url = _url(guarded)
    headers = {"Authorization": header.encode("latin-1")} if header else {}
    for method, path in (("GET", "/v1/sessions"), ("DELETE", f"/v1/sessions/{victim}"),
                         ("POST", f"/v1/sessions/{victim}/evaluate"), ("POST", f"/v1/sessions/{victim}/oracle")):
        resp = httpx.request(method, url + path, headers=headers, timeout=10)
        assert resp.status_code in (400, 401, 431), (method, path, resp.status_code)
    _still_fine(guarded, victim)


# ---- options -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("options, expect", [({"width": -5}, "[16, 7680]"), ({"width": 0}, "[16, 7680]"),
                                             ({"width": "abc"}, "width"), ({"height": 10**12}, "[16, 4320]"),
                                             ({"evil": 1}, "env option evil: unknown key"),
                                             ({"width": CAP_WIDTH + 1}, "cap"),
                                             ({"width": 1.5}, "width"), ({"width": [1, 2]}, "width")])
def test_session_options_are_typed_bounded_and_capped(guarded, victim, options, expect):
    resp = httpx.post(f"{_url(guarded)}/v1/sessions", headers=_auth(SECRET), json={"env_options": options}, timeout=30)
    assert resp.status_code == 422, resp.text
    assert expect in resp.json()["error"]["message"]
    _still_fine(guarded, victim)


def test_options_within_the_cap_work(guarded):
    resp = httpx.post(f"{_url(guarded)}/v1/sessions", headers=_auth(SECRET), json={"env_options": {"width": CAP_WIDTH}},
                      timeout=30)
    assert resp.status_code == 201 and resp.json()["screen_size"][0] == CAP_WIDTH
    httpx.delete(f"{_url(guarded)}/v1/sessions/{resp.json()['session_id']}", headers=_auth(SECRET), timeout=10)


# ---- ids, bodies, encodings ------------------------------------------------------------------------------

@pytest.mark.parametrize("sid", ["..%2F..%2Fv1%2Fspec", "../../etc/passwd", "%00", "x" * 5000, "0" * 32,
                                 "%2e%2e", "\u202e" + "a" * 31])
def test_foreign_or_malformed_session_ids(guarded, victim, sid):
    for method, path in (("GET", f"/v1/sessions/{sid}/screenshot"), ("POST", f"/v1/sessions/{sid}/step"),
                         ("DELETE", f"/v1/sessions/{sid}")):
        resp = httpx.request(method, _url(guarded) + path, headers=_auth(SECRET), json={"action_text": "wait()"},
                             timeout=10)
        assert resp.status_code in (404, 405, 422), (method, sid[:20], resp.status_code)
    _still_fine(guarded, victim)


def test_oversized_bodies_are_refused(guarded, victim):
    url = f"{_url(guarded)}/v1/sessions/{victim}/step"
    big = b'{"action_text": "' + b"a" * (2 * 2**20) + b'"}'
    resp = httpx.post(url, headers={**_auth(SECRET), "content-type": "application/json"}, content=big, timeout=30)
    assert resp.status_code == 413

    def chunks():
        for _ in range(64):
            yield b"a" * 65536

    try:
        resp = httpx.post(url, headers={**_auth(SECRET), "content-type": "application/json"}, content=chunks(),
                          timeout=30)
        assert resp.status_code == 413
    except httpx.HTTPError:
        pass  # the server may cut the stream off: also a refusal
    _still_fine(guarded, victim)


@pytest.mark.parametrize("body", [b"[" * 200000 + b"]" * 200000, b'{"action_text": "\xff\xfe\xfd"}', b"\x00" * 1000,
                                  b'{"action": {"type": "click", "x": 1e400, "y": 1}}',
                                  b'{"action": {"type": "click", "x": 100000000000000000000000, "y": 1}}',
                                  b'{"action_text": "click(x=1, y=\\u0000)"}', b'{"action_text": "\\ud800"}',
                                  '{"action_text": "type(text=\\"\u202e\U0001F600\u0301\\")"}'.encode()])
def test_malformed_json_never_crashes(guarded, victim, body):
    resp = httpx.post(f"{_url(guarded)}/v1/sessions/{victim}/step",
                      headers={**_auth(SECRET), "content-type": "application/json"}, content=body, timeout=30)
    assert resp.status_code < 500, (resp.status_code, resp.text[:300])
    _still_fine(guarded, victim)


@pytest.mark.parametrize("query", ["encoding=..%2F..%2Fetc%2Fpasswd", "jpeg_quality=1" + "0" * 40, "as_json=maybe",
                                   "encoding=png&" + "x=1&" * 2000])
def test_bad_query_parameters(guarded, victim, query):
    resp = httpx.get(f"{_url(guarded)}/v1/sessions/{victim}/screenshot?{query}", headers=_auth(SECRET), timeout=10)
    assert resp.status_code < 500
    _still_fine(guarded, victim)


def test_slow_partial_requests_do_not_block_others(guarded, victim):
    port = int(_url(guarded).rsplit(":", 1)[1])
    slow = []
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(f"POST /v1/sessions/{victim}/step HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SECRET}\r\n"
                  "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"act".encode())
        slow.append(s)
    try:
        started = time.monotonic()
        _still_fine(guarded, victim)
        assert time.monotonic() - started < 10
    finally:
        for s in slow:
            s.close()
    _still_fine(guarded, victim)


def test_stalled_bodies_are_cut_off():
    with _serve_on_fd("--body-timeout", "1") as (url, _):
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1000\r\n\r\n{\"side")
            started = time.monotonic()
            answer = s.recv(4096)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert time.monotonic() - started < 8
        assert httpx.get(f"{url}/v1/health", timeout=5).status_code == 200


def test_huge_headers_and_smuggling_are_refused(guarded, victim):
    port = int(_url(guarded).rsplit(":", 1)[1])
    for raw in (f"GET /v1/sessions HTTP/1.1\r\nHost: x\r\nX-Big: {'a' * 200000}\r\n\r\n".encode(),
                (f"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SECRET}\r\nContent-Length: 4\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /v1/sessions HTTP/1.1\r\nHost: x\r\n\r\n").encode()):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            try:
                s.sendall(raw)
                answer = s.recv(4096)
            except OSError:
                answer = b""
        assert not answer.startswith(b"HTTP/1.1 2"), answer[:200]
    _still_fine(guarded, victim)


def test_methods_that_do_not_exist(guarded, victim):
    for method, path in (("DELETE", "/v1/health"), ("PUT", "/v1/sessions"), ("PATCH", f"/v1/sessions/{victim}"),
                         ("TRACE", "/v1/sessions")):
        resp = httpx.request(method, _url(guarded) + path, headers=_auth(SECRET), timeout=10)
        assert resp.status_code in (401, 404, 405), (method, path, resp.status_code)
    _still_fine(guarded, victim)


def test_deleting_one_session_leaves_the_other(guarded, victim):
    url = _url(guarded)
    other = httpx.post(f"{url}/v1/sessions", headers=_auth(SECRET), json={}, timeout=30).json()["session_id"]
    assert httpx.delete(f"{url}/v1/sessions/{other}", headers=_auth(SECRET), timeout=10).status_code == 200
    assert httpx.delete(f"{url}/v1/sessions/{other}", headers=_auth(SECRET), timeout=10).status_code == 404
    assert httpx.post(f"{url}/v1/sessions/{other}/step", headers=_auth(SECRET), json={"action_text": "wait()"},
                      timeout=10).status_code == 404
    _still_fine(guarded, victim)


def test_evaluate_before_the_end_does_not_leak_a_reward(guarded, victim):
    url = _url(guarded)
    step = httpx.post(f"{url}/v1/sessions/{victim}/step", headers=_auth(SECRET),
                      json={"action_text": 'done(answer="no")'}, timeout=10)
    assert step.status_code == 200
    score = httpx.post(f"{url}/v1/sessions/{victim}/evaluate", headers=_auth(SECRET), timeout=10).json()["score"]
    assert score == 0.0
    again = httpx.post(f"{url}/v1/sessions/{victim}/step", headers=_auth(SECRET),
                       json={"action_text": 'done(answer="ok")'},
                       timeout=10)
    assert again.status_code == 409  # the episode is over: no second answer


# ---- issue 34: agent-made faults are refused at the door, never a 500 -----------------------------------

@pytest.mark.parametrize("seed", [-1, -(2**63), -(10**30)])
def test_a_negative_seed_is_refused_with_a_422_naming_it(guarded, victim, seed):
    resp = httpx.post(f"{_url(guarded)}/v1/sessions/{victim}/reset", headers=_auth(SECRET),
                      json={"task_id": "null/echo", "seed": seed}, timeout=30)
    assert resp.status_code == 422, (resp.status_code, resp.text[:300])
    message = resp.json()["error"]["message"]
    assert "seed" in message and "greater than or equal to 0" in message and "\n" not in message, message
    fine = httpx.post(f"{_url(guarded)}/v1/sessions/{victim}/reset", headers=_auth(SECRET),
                      json={"task_id": "null/echo", "seed": 0}, timeout=30)
    assert fine.status_code == 200
    _still_fine(guarded, victim)


def _env_without_token() -> dict:
    env = dict(os.environ)
    env.pop("MINTGYM_TOKEN", None)
    return env
