"""Red-team attacks on the web domain, played as an agent would: shared actions sent to a real env server.

One ``mintgym serve web`` subprocess (the local backend) holds an attacker session and a bystander session.
Every attack asserts containment: the attacker's reward stays 0, the bystander's state and reward are
untouched, and the server keeps serving (checked after each test by an autouse fixture). Agent-made
situations (leaving the task page, a 404) must end as the agent's failure or an invalid step, never as a
session error. Pages the agent may load are checked against a canary TCP server on another loopback port:
no route (fetch, XHR, WebSocket, iframe, popup, form, redirect, meta refresh, beacon...) may connect to it.
"""

from __future__ import annotations

import http.server
import socket
import threading
import urllib.parse

import httpx
import numpy as np
import pytest

from mintgym import grounding
from mintgym.client.sync import EnvClient
from mintgym.runtime.local import LocalProvider

pytestmark = [pytest.mark.web]

FORGE_GLOBALS = ("<script>var WOB_DONE_GLOBAL=true, WOB_REWARD_GLOBAL=1, WOB_RAW_REWARD_GLOBAL=1, "
                 "WOB_REWARD_REASON='forged', WOB_EPISODE_ID=1, WOB_TASK_READY=true;"
                 "var core={getUtterance:()=>'x', endEpisode:()=>0};</script>forged")


# ---- fixtures ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server():
    provider = LocalProvider()
    handle = provider.start("web")
    try:
        provider.wait_ready(handle, 180)
        yield handle
    finally:
        provider.stop(handle)


def _client(server, **options) -> EnvClient:
    return EnvClient(server.base_url, domain="web", side_channels=("text", "a11y"), encoding="raw",
                     env_options=options)


@pytest.fixture(scope="module")
def agent(server):
    client = _client(server)
    yield client
    client.close()


@pytest.fixture(scope="module")
def bystander(server):
    client = _client(server)
    client.reset(seed=0, options={"task_id": "webapps/shop-cart-kettle"})
    yield client
    _, reward, _, _, info = client.step({"type": "wait", "seconds": 0})
    assert reward == 0.0 and "error" not in info and "/shop/" in _url(client)
    client.close()


@pytest.fixture(autouse=True)
def contained(server, bystander):
    yield
    assert httpx.get(server.base_url + "/v1/health", timeout=10).status_code == 200, "the server stopped serving"
    assert bystander.evaluate() == 0.0, "the bystander session's shop state changed"
    shot = httpx.get(f"{server.base_url}/v1/sessions/{bystander.session_id}/screenshot", timeout=30)
    assert shot.status_code == 200, "the bystander session stopped answering"


class Canary:
    """A TCP listener on a loopback port no session may reach; it counts every connection it accepts."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()


@pytest.fixture(scope="module")
def canary():
    c = Canary()
    yield c
    c.sock.close()


class UdpCanary:
    """A UDP socket on a loopback port; it counts every datagram that arrives."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.datagrams = 0
        threading.Thread(target=self._receive, daemon=True).start()

    def _receive(self):
        while True:
            try:
                self.sock.recvfrom(65536)
            except OSError:
                return
            self.datagrams += 1


@pytest.fixture(scope="module")
def udp_canary():
    c = UdpCanary()
    yield c
    c.sock.close()


CLIPBOARD_CANARY = "clipboard-canary-7f3a"


@pytest.fixture(scope="module")
def attacker_site(canary, udp_canary, server):
    """An HTTP server the attacker session is allowed to reach: pages that try every route to the canary."""
    target = f"127.0.0.1:{canary.port}"
    routes = {
        "fetch": f"fetch('http://{target}/x', {{mode: 'no-cors'}})",
        "xhr": f"(() => {{ const r = new XMLHttpRequest(); r.open('GET', 'http://{target}/x'); r.send(); }})()",
        "websocket": f"new WebSocket('ws://{target}/ws')",
        "eventsource": f"new EventSource('http://{target}/es')",
        "beacon": f"navigator.sendBeacon('http://{target}/b', 'x')",
        "image": f"(new Image()).src = 'http://{target}/i.png'",
        "iframe": f"document.body.appendChild(Object.assign(document.createElement('iframe'), "
                  f"{{src: 'http://{target}/f'}}))",
        "popup": f"window.open('http://{target}/p')",
        "form": f"(() => {{ const f = Object.assign(document.createElement('form'), {{method: 'POST', "
                f"action: 'http://{target}/f'}}); document.body.appendChild(f); f.submit(); }})()",
        "link": f"location.href = 'http://{target}/l'",
        "spellings": " ".join(f"fetch('http://{h}:{canary.port}/s', {{mode: 'no-cors'}}).catch(() => 0);"
                              for h in ("localhost", "127.1", "2130706433", "0x7f000001", "127.0.0.2", "[::1]")),
        "worker": "navigator.serviceWorker && navigator.serviceWorker.register('/sw.js')",
        "import": f"import('http://{target}/m.js')",
        "css": f"document.head.appendChild(Object.assign(document.createElement('link'), "
               f"{{rel: 'stylesheet', href: 'http://{target}/c.css'}}))",
    }
    pages = {f"/{name}": _button_page(js) for name, js in routes.items()}
    pages["/webrtc"] = _button_page(
        "(async () => { const pc = new RTCPeerConnection({iceServers: [{urls: "
        f"'stun:127.0.0.1:{udp_canary.port}'}}]}});"
        " pc.createDataChannel('x'); await pc.setLocalDescription(await pc.createOffer()); })()")
    pages["/copy-writetext"] = _button_page(f"navigator.clipboard.writeText('{CLIPBOARD_CANARY}')")
    pages["/copy-execcommand"] = _button_page(
        f"(() => {{ const t = document.createElement('textarea'); t.value = '{CLIPBOARD_CANARY}'; "
        "document.body.append(t); t.select(); document.execCommand('copy'); })()")
    pages["/refresh"] = f'<meta http-equiv="refresh" content="0; url=http://{target}/r">refreshing'.encode()
    pages["/sw.js"] = b"self.addEventListener('fetch', () => {});"

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", f"http://{target}/redirected")
                self.end_headers()
                return
            body = pages.get(self.path, b"not here")
            self.send_response(200 if self.path in pages else 404)
            kind = "text/javascript" if self.path.endswith(".js") else "text/html"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _button_page(js: str) -> bytes:
    return ("<!doctype html><body style='margin:0'><button id=go style='width:800px;height:600px' "
            f"onclick=\"{js.replace(chr(34), '&quot;')}\">go</button></body>").encode()


# ---- helpers ----------------------------------------------------------------------------------------------
def _url(client: EnvClient) -> str:
    text = client.last_observation.text or ""
    return next((line[5:] for line in text.splitlines() if line.startswith("URL: ")), "")


def _origin(client: EnvClient) -> str:
    parts = urllib.parse.urlsplit(_url(client))
    return f"{parts.scheme}://{parts.netloc}"


def _play(client: EnvClient, actions) -> tuple[float, bool, list[dict]]:
    """Step through ``actions`` (stopping when the episode ends), then claim success; the episode's reward."""
    infos = []
    for action in actions:
        _, reward, terminated, truncated, info = client.step(action)
        infos.append(info)
        if terminated or truncated:
            return reward, terminated, infos
    _, reward, terminated, _, info = client.step({"type": "done", "success": True})
    infos.append(info)
    return reward, terminated, infos


def _goto(url: str) -> dict:
    return {"type": "goto", "url": url}


def _button_center(shot: np.ndarray, top: int = 50) -> tuple[int, int] | None:
    """The centre of MiniWoB's grey ``Click Me!`` button in a 160 px task area, read from the pixels."""
    area = shot[top:top + 165, :160].astype(int)
    grey = (np.abs(area - 239).max(axis=2) <= 3)
    ys, xs = np.nonzero(grey)
    if len(xs) < 50:
        return None
    return int(np.median(xs)), int(np.median(ys)) + top


def _solve_click_test(client: EnvClient, url: str) -> tuple[float, list[dict]]:
    """Open a click-test page, press MiniWoB's START cover and click its button (found in the screenshot)."""
    infos = []
    for action in (_goto(url), {"type": "click", "x": 80, "y": 105}):
        obs, reward, terminated, truncated, info = client.step(action)
        infos.append(info)
        if terminated or truncated:
            return reward, infos
    point = _button_center(obs["screenshot"])
    assert point is not None, "the click-test button is not on the screen"
    reward, _, more = _play(client, [{"type": "click", "x": point[0], "y": point[1]}])
    return reward, infos + more


# ---- MiniWoB: the reward belongs to the task page the env started ------------------------------------------
def test_data_url_defining_miniwob_reward_globals_scores_zero(agent):
    agent.reset(seed=0, options={"task_id": "miniwob/book-flight"})
    forged = "data:text/html," + urllib.parse.quote(FORGE_GLOBALS)
    reward, _, infos = _play(agent, [_goto(forged)])
    assert reward == 0.0
    assert "goto refused" in infos[0].get("error", "")


def test_solving_another_miniwob_task_page_scores_zero(agent):
    agent.reset(seed=0, options={"task_id": "miniwob/book-flight"})
    other = _origin(agent) + "/miniwob/miniwob/click-test.html"
    reward, infos = _solve_click_test(agent, other)
    assert reward == 0.0
    assert "left the task page" in str(infos[0].get("miniwob", {}).get("reason"))


def test_a_fresh_episode_on_a_reloaded_task_page_scores_zero(agent):
    agent.reset(seed=0, options={"task_id": "miniwob/click-test"})
    reward, infos = _solve_click_test(agent, _url(agent) + "?again")
    assert reward == 0.0
    assert "left the task page" in str(infos[0].get("miniwob", {}).get("reason"))


@pytest.mark.parametrize("where", ["about:blank", "/miniwob/no-such-page.html", "/miniwob/core/core.css",
                                   "/shop/index.html"])
def test_leaving_the_task_page_is_the_agents_failure_not_an_error(agent, where):
    agent.reset(seed=0, options={"task_id": "miniwob/click-button"})
    url = where if where.startswith("about:") else _origin(agent) + where
    _, reward, terminated, _truncated, info = agent.step(_goto(url))
    assert terminated and reward == 0.0
    assert "left the task page" in info["miniwob"]["reason"]
    assert info["agent_fault"] is True and "left the task page" in info["failure"]
    assert agent.evaluate() == 0.0


@pytest.mark.parametrize("where", ["about:blank", "/shop/no-such-page.html", "/miniwob/miniwob/click-test.html"])
def test_leaving_a_web_app_is_a_normal_step(agent, where):
    agent.reset(seed=0, options={"task_id": "webapps/shop-cart-kettle"})
    url = where if where.startswith("about:") else _origin(agent) + where
    _, reward, terminated, _, info = agent.step(_goto(url))
    assert not terminated and reward == 0.0 and "error" not in info
    assert _play(agent, [])[0] == 0.0


@pytest.mark.parametrize("url", [
    "javascript:core.endEpisode(1, true)",
    " javascript:WOB_DONE_GLOBAL=true;WOB_RAW_REWARD_GLOBAL=1",
    "\tJAVASCRIPT:core.endEpisode(1,true)",
    "JaVaScRiPt:void(core.endEpisode=function(){})",
    "blob:http://127.0.0.1/0b7f0d0e-0000-4000-8000-000000000000",
    "DATA:text/html,<script>var WOB_DONE_GLOBAL=true</script>",
    "data:text/html;base64,PHNjcmlwdD52YXIgV09CX0RPTkVfR0xPQkFMPXRydWU8L3NjcmlwdD4=",
    "view-source:http://127.0.0.1/",
    "chrome://version",
    "devtools://devtools/bundled/inspector.html",
    "chrome-extension://abc/x.html",
    "http://[::1",
    "http://127.0.0.1:99999/",
])
def test_script_and_internal_urls_are_refused_and_score_zero(agent, url):
    agent.reset(seed=0, options={"task_id": "miniwob/click-test"})
    before = _url(agent)
    reward, _, infos = _play(agent, [_goto(url)])
    assert "goto refused" in infos[0].get("error", ""), infos[0]
    assert reward == 0.0 and _url(agent) == before


@pytest.mark.parametrize("keys", [["ctrl", "l"], ["f5"], ["ctrl", "r"], ["alt", "left"], ["ctrl", "t"],
                                  ["ctrl", "n"], ["ctrl", "shift", "i"], ["f12"], ["ctrl", "w"]])
def test_browser_shortcuts_do_not_leave_the_page_or_break_the_session(agent, keys):
    agent.reset(seed=0, options={"task_id": "miniwob/click-test"})
    before = _url(agent)
    actions = [{"type": "key", "keys": keys}, {"type": "type", "text": "http://127.0.0.1:1/\n"}]
    reward, _, infos = _play(agent, actions)
    assert reward == 0.0 and all("error" not in i for i in infos[:2])
    assert _url(agent) == before


# ---- the env server and other loopback ports are out of reach -------------------------------------------
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "localhost.", "LOCALHOST", "[::1]", "0.0.0.0", "127.1",
                                  "2130706433", "0x7f000001", "017700000001", "127.0.0.1.nip.io", "localtest.me",
                                  "[::ffff:127.0.0.1]", "127.0.0.1%2e"])
def test_goto_cannot_reach_the_env_server(agent, server, host):
    agent.reset(seed=0, options={"task_id": "webapps/shop-cart-kettle"})
    port = urllib.parse.urlsplit(server.base_url).port
    obs, _reward, _, _, info = agent.step(_goto(f"http://{host}:{port}/v1/sessions"))
    assert "goto refused" in info.get("error", ""), info
    assert str(port) not in _url(agent) and "session" not in obs["a11y"].lower()
    assert _play(agent, [])[0] == 0.0


def test_url_parsing_tricks_do_not_reach_the_env_server(agent, server):
    agent.reset(seed=0, options={"task_id": "webapps/shop-cart-kettle"})
    own = urllib.parse.urlsplit(_origin(agent)).netloc
    env = urllib.parse.urlsplit(server.base_url).netloc
    for url in (f"http://{own}@{env}/v1/sessions", f"http://{env}\\@{own}/v1/sessions",
                f"http://{own}\\@{env}/v1/sessions", f"http://{env}#@{own}/", f"http://{own}:@{env}/v1/sessions",
                f"http:{env}/v1/sessions", f"http:/\\{env}/v1/sessions", f"HTTP://{env}/v1/sessions"):
        obs, *_ = agent.step(_goto(url))
        assert env not in _url(agent), url
        assert "session" not in obs["a11y"].lower(), url
    assert _play(agent, [])[0] == 0.0


@pytest.mark.parametrize("url", ["file:///etc/passwd", "file:///proc/self/environ", "file://localhost/etc/shadow",
                                 "FILE:///etc/hostname", "filesystem:http://127.0.0.1/temporary/x"])
def test_file_urls_are_refused(agent, url):
    agent.reset(seed=0, options={"task_id": "webapps/shop-cart-kettle"})
    obs, _reward, _, _, info = agent.step(_goto(url))
    assert "goto refused" in info.get("error", "") and "root:" not in obs["a11y"]


@pytest.fixture(scope="module")
def visitor(server, attacker_site):
    """A session whose ``allow`` list holds the attacker's site (and nothing else off the host)."""
    client = _client(server, allow=[urllib.parse.urlsplit(attacker_site).netloc])
    yield client
    client.close()


@pytest.mark.parametrize("path", ["/shop/..%2ftasks.py", "/shop/%2e%2e/tasks.py", "/shop/..%5ctasks.py",
                                  "/common/..%2f..%2fminiwob%2ftask.py", "/miniwob/..%2f..%2f..%2f..%2fetc%2fpasswd",
                                  "/miniwob/%2e%2e%2f%2e%2e%2f__init__.py", "/shop//../webapps/tasks.py"])
def test_the_hosts_server_serves_no_file_outside_its_pages(agent, path):
    agent.reset(seed=0, options={"task_id": "webapps/shop-cart-kettle"})
    obs, *_ = agent.step(_goto(_origin(agent) + path))
    for secret in ("WebAppTask", "def ", "import ", "root:"):
        assert secret not in obs["a11y"], f"{path} served {secret!r}"
    assert _play(agent, [])[0] == 0.0


@pytest.mark.parametrize("route", ["fetch", "xhr", "websocket", "eventsource", "beacon", "image", "iframe", "popup",
                                   "form", "link", "spellings", "worker", "import", "css", "refresh", "redirect"])
def test_pages_cannot_connect_to_other_loopback_ports(visitor, canary, attacker_site, route):
    visitor.reset(seed=0, options={"task_id": "webapps/shop-cart-kettle"})
    before = canary.connections
    actions = [_goto(f"{attacker_site}/{route}")]
    if route not in ("refresh", "redirect"):
        actions.append({"type": "click", "x": 400, "y": 300})
    actions.append({"type": "wait", "seconds": 0.5})
    reward, _, _ = _play(visitor, actions)
    assert canary.connections == before, f"route {route!r} reached a loopback port outside the policy"
    assert reward == 0.0


def test_webrtc_sends_no_udp_around_the_proxy(visitor, udp_canary, attacker_site):
    visitor.reset(seed=0, options={"task_id": "webapps/shop-cart-kettle"})
    reward, _, _ = _play(visitor, [_goto(f"{attacker_site}/webrtc"), {"type": "click", "x": 400, "y": 300},
                                   {"type": "wait", "seconds": 1.0}])
    assert udp_canary.datagrams == 0, "a page sent UDP (STUN) to a loopback port outside the policy"
    assert reward == 0.0


# ---- the clipboard: each session's own; Chromium's process-wide clipboards are never read ----------------------
@pytest.fixture
def victim(server):
    """Another agent's session on MiniWoB's copy-paste task, whose text the attacker must not read."""
    client = _client(server)
    client.reset(seed=1, options={"task_id": "miniwob/copy-paste"})
    yield client
    client.close()


def _textboxes(client: EnvClient) -> list[grounding.Element]:
    """copy-paste's text area (its text) and answer field, from the grounded channel."""
    return [e for e in grounding.parse(client.last_observation.a11y) if e.role == "textbox"]


def _oracle_through(client: EnvClient, keys: list[str]) -> None:
    """Play the task's oracle up to and including the key combo ``keys``."""
    while (action := client.oracle_action()) is not None:
        client.step(action)
        if action.get("keys") == keys:
            return
    raise AssertionError(f"the oracle never pressed {keys}")


def _paste_into_answer(agent: EnvClient, button: str = "left") -> str:
    """Start copy-paste in ``agent``, click its answer field (a middle click: ``button``), paste; the field's value."""
    agent.reset(seed=2, options={"task_id": "miniwob/copy-paste"})
    x, y = _textboxes(agent)[1].point
    agent.step({"type": "click", "x": x, "y": y, "button": button})
    if button == "left":
        agent.step({"type": "key", "keys": ["ctrl", "v"]})
    return _textboxes(agent)[1].value


def test_a_session_cannot_paste_what_another_session_copied(agent, victim):
    secret = _textboxes(victim)[0].value
    _oracle_through(victim, ["ctrl", "c"])
    assert _paste_into_answer(agent) == "", "the paste read another session's copy"
    assert secret not in agent.last_observation.a11y
    reward, terminated = 0.0, False
    while not terminated and (action := agent.oracle_action()) is not None:  # its own copy and paste still work
        _, reward, terminated, _, _ = agent.step(action)
    assert reward == 1.0


def test_a_middle_click_does_not_paste_another_sessions_selection(agent, victim):
    secret = _textboxes(victim)[0].value
    _oracle_through(victim, ["ctrl", "a"])  # selected, never copied: X11's primary selection
    assert _paste_into_answer(agent, button="middle") == "", "the middle click pasted another session's selection"
    assert secret not in agent.last_observation.a11y


@pytest.mark.parametrize("how", ["writetext", "execcommand"])
def test_a_pages_clipboard_write_reaches_only_its_own_session(visitor, agent, attacker_site, how):
    visitor.reset(seed=0, options={"task_id": "webapps/shop-cart-kettle"})
    _play(visitor, [_goto(f"{attacker_site}/copy-{how}"), {"type": "click", "x": 400, "y": 300}])
    assert CLIPBOARD_CANARY not in _paste_into_answer(agent), "a page's clipboard write reached another session"


# ---- web apps: state changes only through the app's own pages --------------------------------------------
def test_form_posted_from_a_data_page_cannot_fill_the_cart(agent):
    agent.reset(seed=0, options={"task_id": "webapps/shop-cart-kettle"})
    origin = _origin(agent)
    page = (f"<form method=POST enctype=text/plain action='{origin}/api/shop/cart'>"
            "<input name='{\"id\":3,\"qty\":1,\"x\":\"' value='\"}'>"
            "<button style='width:800px;height:600px'>go</button></form>")
    reward, _, _infos = _play(agent, [_goto("data:text/html," + urllib.parse.quote(page)),
                                     {"type": "click", "x": 400, "y": 300}])
    assert reward == 0.0


@pytest.mark.parametrize("path", ["/api/shop/state", "/api/mail/state", "/api/book/state"])
def test_the_apps_state_endpoints_are_not_readable_by_navigation(agent, path):
    agent.reset(seed=0, options={"task_id": "webapps/shop-cart-kettle"})
    obs, *_ = agent.step(_goto(_origin(agent) + path))
    page = obs["a11y"]
    for secret in ("Steel Kettle", "priya@example.com", "Budget sync"):
        assert secret not in page, f"{path} showed {secret!r}"


def test_state_changing_routes_refuse_a_plain_navigation(agent):
    agent.reset(seed=0, options={"task_id": "webapps/shop-cart-kettle"})
    origin = _origin(agent)
    for path in ("/api/shop/cart?id=3&qty=1", "/api/shop/order", "/api/mail/send", "/api/book/book"):
        agent.step(_goto(origin + path))
    assert _play(agent, [])[0] == 0.0


def test_solving_in_one_session_leaves_the_other_session_untouched(server, agent, bystander):
    agent.reset(seed=0, options={"task_id": "webapps/shop-cart-kettle"})
    reward = 0.0
    while (action := agent.oracle_action()) is not None:
        _, reward, terminated, truncated, _ = agent.step(action)
        if terminated or truncated:
            break
    assert reward == 1.0  # the UI flow still works; the autouse check proves the bystander saw nothing


def test_huge_goto_url_is_refused_without_harm(agent):
    agent.reset(seed=0, options={"task_id": "miniwob/click-test"})
    _obs, reward, _, _, info = agent.step(_goto("data:text/html," + "A" * 300_000))
    assert "error" in info and reward == 0.0


# ---- input the agent controls: typed or refused, never a session error -----------------------------------
ODD_TEXTS = {"cjk-300": "".join(chr(0x4E00 + i) for i in range(300)), "emoji": "😀👍🏽🇩🇪" * 20,
             "controls": "\x00\x07\x1b[2J\x7f", "lone-surrogate": "\ud800 x", "bidi": "\u202eevil\u202c \u0301\u0301",
             "newlines": "\r\n" * 50}


@pytest.mark.parametrize("name", list(ODD_TEXTS))
def test_odd_text_is_typed_or_refused_never_an_error(agent, name):
    agent.reset(seed=0, options={"task_id": "miniwob/click-test"})
    before = _url(agent)
    reward, _, _ = _play(agent, [{"type": "type", "text": ODD_TEXTS[name]}])
    assert reward == 0.0 and _url(agent) == before


@pytest.mark.parametrize("keys", [["ctrl", "alt", "delete"], ["hyper"], ["back"], ["meta", "l"], ["ctrl"] * 8,
                                  ["alt", "f4"], ["printscreen"]])
def test_odd_key_combos_are_pressed_or_refused_never_an_error(agent, keys):
    agent.reset(seed=0, options={"task_id": "miniwob/click-test"})
    before = _url(agent)
    reward, _, _ = _play(agent, [{"type": "key", "keys": keys}])
    assert reward == 0.0 and _url(agent) == before


# ---- the server's own lifetime ----------------------------------------------------------------------------
def test_killing_the_web_server_leaves_no_browser_behind():
    import os
    import signal
    import time

    import psutil

    provider = LocalProvider()
    handle = provider.start("web")
    try:
        provider.wait_ready(handle, 180)
        client = EnvClient(handle.base_url, domain="web")
        client.reset(seed=0, options={"task_id": "miniwob/click-test"})
        tree = psutil.Process(int(handle.ident)).children(recursive=True)
        assert any("chrom" in p.name() for p in tree)
        os.kill(int(handle.ident), signal.SIGKILL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            left = [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
            if not left:
                break
            time.sleep(0.2)
        assert not left, [(p.pid, p.name()) for p in left]
    finally:
        provider.stop(handle)
