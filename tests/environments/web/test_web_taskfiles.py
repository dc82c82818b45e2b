"""Web task files in a real Chromium: the page is served by the web host's loopback server, the oracle
scores 1 and the untouched page 0, and the attacks an agent could try to get reward 1 without doing the
task all score 0: a page of its own (refused), the task page loaded again, another task's page that already
shows the wanted state, a fragment or path it types, a popup, and reading the task file from the server."""

from __future__ import annotations

import json
import urllib.parse

import httpx
import pytest

from mintgym.action_spaces import Click, Goto, Type
from mintgym.env.episode import Episode
from mintgym.env.taskfiles import load_tasks

pytestmark = [pytest.mark.web, pytest.mark.asyncio(loop_scope="module")]

FORM = """<body style="margin:0; font: 20px sans-serif">
<input id="name" style="position:absolute; left:10px; top:10px; width:300px; height:40px">
<button id="go" style="position:absolute; left:10px; top:80px; width:150px; height:50px"
  onclick="if (document.getElementById('name').value === 'Ada') {
             document.getElementById('status').textContent = 'Welcome';
             history.pushState({}, '', 'welcome'); window.done = true; }">Join</button>
<p id="status" style="position:absolute; top:150px">Waiting</p></body>"""
#: Another task's page that already shows the state the first task's scorers want.
SOLVED = """<body><input id="name" value="Ada"><p id="status">Welcome</p>
<script>window.done = true; history.replaceState({}, '', 'welcome');</script></body>"""
TASKS = [
    {"id": "web/attack/join-v1", "domain": "web", "instruction": "Type Ada and press Join.", "viewport": [400, 300],
     "page": {"html": FORM}, "oracle": [{"fill": "#name", "text": "Ada"}, {"click_text": "Join"}],
     "scorer": [{"type": "field", "selector": "#name", "equals": "Ada"},
                {"type": "text", "selector": "#status", "equals": "Welcome"},
                {"type": "url", "path": "/welcome"}, {"type": "js", "expression": "window.done"}]},
    {"id": "web/attack/already-solved-v1", "domain": "web", "instruction": "Nothing.", "page": {"html": SOLVED},
     "scorer": {"type": "js", "expression": "window.done"}},
]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    path = tmp_path_factory.mktemp("taskfile") / "tasks.yaml"
    path.write_text(json.dumps(TASKS))
    return {t.id: t for t in load_tasks(path)}


async def _solve(ep: Episode, task) -> float:
    async for action in task.oracle(ep.env):
        assert "error" not in (await ep.step(action)).info
    return await ep.evaluate()


async def test_oracle_scores_one_and_the_untouched_page_zero(env, tasks):
    task = tasks["web/attack/join-v1"]
    ep = Episode(env)
    await ep.reset(task, 0)
    assert env.main_page.url == env.host.server_origin + task.base_path
    assert await task.evaluate(env) == 0.0
    assert await _solve(ep, task) == 1.0
    assert env.task_info["taskfile"]["scorers"] == [True, True, True, True]


async def test_typing_alone_is_not_the_task(env, tasks):
    task = tasks["web/attack/join-v1"]
    ep = Episode(env)
    await ep.reset(task, 0)
    await ep.step(Click(x=100, y=30))
    await ep.step(Type(text="Ada"))
    assert await task.evaluate(env) == 0.0
    assert env.task_info["taskfile"]["scorers"] == [True, False, False, False]


@pytest.mark.parametrize("where", ["data", "reload", "other-task", "404-path", "fragment"])
async def test_navigating_to_a_page_that_shows_the_wanted_state_scores_zero(env, tasks, where):
    task, solved = tasks["web/attack/join-v1"], tasks["web/attack/already-solved-v1"]
    ep = Episode(env)
    await ep.reset(solved, 0)  # the other task's page is served (and already "solved")
    await ep.reset(task, 0)
    base = env.host.server_origin + task.base_path
    target = {"data": "data:text/html," + urllib.parse.quote(SOLVED), "reload": base,
              "other-task": env.host.server_origin + solved.base_path, "404-path": base + "welcome",
              "fragment": base + "#welcome"}[where]
    out = await ep.step(Goto(url=target))
    if where == "data":
        assert "goto refused" in out.info["error"]
    assert await task.evaluate(env) == 0.0
    if where not in ("data", "fragment"):
        assert "no longer shows this episode's task page" in env.task_info["taskfile"]["reason"]
    if where == "other-task":
        assert await env.main_page.evaluate("window.done") is True  # the forged state is there, and ignored


async def test_a_page_of_the_agents_making_is_never_scored(env, tasks):
    task = tasks["web/attack/join-v1"]
    await Episode(env).reset(task, 0)
    await env.open("about:blank")  # as if the agent had reached a page of its own
    await env.main_page.set_content(SOLVED)
    assert await task.evaluate(env) == 0.0


async def test_a_popup_with_the_wanted_state_does_not_touch_the_score(env, tasks):
    task = tasks["web/attack/join-v1"]
    ep = Episode(env)
    await ep.reset(task, 0)
    popup = await env.context.new_page()
    await popup.goto(env.host.server_origin + tasks["web/attack/already-solved-v1"].base_path)
    assert await task.evaluate(env) == 0.0
    await popup.close()
    assert await _solve(ep, task) == 1.0


async def test_the_server_serves_the_page_and_nothing_beside_it(env, tasks):
    task = tasks["web/attack/join-v1"]
    await Episode(env).reset(task, 0)
    origin = env.host.server_origin
    async with httpx.AsyncClient(trust_env=False) as client:  # the server runs on this event loop
        assert "Join" in (await client.get(origin + task.base_path)).text
        for path in (task.base_path + "tasks.yaml", "/taskfiles/", "/taskfiles/" + "0" * 24 + "/",
                     task.base_path + "../", task.base_path.rstrip("/")):
            resp = await client.get(origin + path, follow_redirects=False)
            assert resp.status_code in (404, 307) and "Join" not in resp.text, path
