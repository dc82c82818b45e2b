"""Tabs in web sessions: the text channel lists them, the ``tab`` action opens, shows and closes them within the URL
policy, and no tab can forge or hide a MiniWoB reward (the scorer reads the episode's own page, tab 0)."""

from __future__ import annotations

import re

import pytest
import pytest_asyncio

from mintgym.action_spaces import Click, Done, Goto, Tab
from mintgym.env import registration
from mintgym.env.episode import Episode
from mintgym.environments.web import grounding
from mintgym.environments.web.env import MAX_TABS

pytestmark = [pytest.mark.web, pytest.mark.asyncio(loop_scope="module")]

CLICK_BUTTON = "miniwob/click-button"


@pytest_asyncio.fixture(loop_scope="module")
async def episode(env):
    return Episode(env, frozenset({"text", "a11y"}))


def _tabs(text: str) -> tuple[int, list[str]]:
    """(shown tab, URLs in order) from the text channel."""
    lines = [line for line in text.splitlines() if re.match(r"^[* ] \[\d+\] ", line)]
    shown = [i for i, line in enumerate(lines) if line.startswith("*")]
    assert len(shown) == 1, text
    return shown[0], [line.rsplit(" ", 1)[1] for line in lines]


async def _target_click(a11y: str, instruction: str) -> Click:
    """The click an agent reading the grounded channel makes on click-button's target."""
    target = re.search(r'"([^"]+)"', instruction).group(1)
    button = next(e for e in grounding.parse(a11y) if e.role == "button" and e.name == target)
    x, y = grounding.click_point(a11y, button.id)
    return Click(x=x, y=y)


async def test_text_channel_lists_tabs_and_the_shown_one(episode):
    obs, _ = await episode.reset(registration.task(CLICK_BUTTON), seed=0)
    task_url = episode.env.main_page.url
    assert _tabs(obs.text) == (0, [task_url])
    out = await episode.step(Tab(op="new"))
    assert "error" not in out.info and _tabs(out.observation.text) == (1, [task_url, "about:blank"])
    assert out.observation.screenshot.shape == (210, 160, 3)
    assert episode.env.page.viewport_size == {"width": 160, "height": 210}
    out = await episode.step(Tab(op="switch", index=0))
    assert _tabs(out.observation.text) == (0, [task_url, "about:blank"])
    out = await episode.step(Tab(op="close", index=1))
    assert "error" not in out.info and _tabs(out.observation.text) == (0, [task_url])
    await episode.step(Tab(op="new"))
    out = await episode.step(Tab(op="close"))  # index -1: the shown tab
    assert _tabs(out.observation.text) == (0, [task_url])


async def test_bad_tab_actions_are_invalid_steps(episode, host):
    await episode.reset(registration.task(CLICK_BUTTON), seed=0)
    env_port = 1 + max(host.own_ports)
    for action, message in [
        (Tab(op="close", index=0), "tab 0 holds the task"),
        (Tab(op="switch", index=3), "there is no tab 3"),
        (Tab(op="switch"), "needs the index"),
        (Tab(op="new", index=2), "takes no index"),
        (Tab(op="close", url="about:blank"), "url is only for"),
        (Tab(op="new", url="data:text/html,<h1>mine</h1>"), "tab refused: scheme 'data'"),
        (Tab(op="new", url="javascript:alert(1)"), "tab refused"),
        (Tab(op="new", url="file:///etc/passwd"), "tab refused"),
        (Tab(op="new", url=f"http://127.0.0.1:{env_port}/v1/sessions"), "tab refused: loopback port"),
        (Tab(op="new", url="http://93.184.216.34/"), "tab refused"),
    ]:
        out = await episode.step(action)
        assert message in out.info.get("error", ""), (action, out.info)
        assert len(episode.env._pages) == 1 and episode.env.page is episode.env.main_page
    for _ in range(MAX_TABS - 1):
        assert "error" not in (await episode.step(Tab(op="new"))).info
    out = await episode.step(Tab(op="new"))
    assert f"{MAX_TABS} tabs are open" in out.info["error"]
    obs, _ = await episode.reset(registration.task(CLICK_BUTTON), seed=0)  # reset closes every other tab
    assert _tabs(obs.text)[1] == [episode.env.main_page.url]


async def test_solving_the_task_in_another_tab_does_not_score(episode):
    await episode.reset(registration.task(CLICK_BUTTON), seed=1)
    env = episode.env
    out = await episode.step(Tab(op="new", url=env.main_page.url))
    assert "error" not in out.info
    # the copy of the task page shows MiniWoB's START cover: start an episode there and solve it
    out = await episode.step(Click(x=80, y=105))
    instruction = await env.page.evaluate("() => core.getUtterance()")
    out = await episode.step(await _target_click(out.observation.a11y, instruction))
    assert await env.page.evaluate("() => WOB_DONE_GLOBAL && WOB_RAW_REWARD_GLOBAL") == 1
    assert not out.terminated and out.reward == 0.0 and not out.info["miniwob"]["done"]
    out = await episode.step(Done())
    assert out.terminated and out.reward == 0.0
    assert not env.task_info["miniwob"]["done"] and env.task_info["miniwob"]["raw_reward"] == 0.0


async def test_the_task_tab_still_scores_after_tabs_were_used(episode):
    obs, _ = await episode.reset(registration.task(CLICK_BUTTON), seed=2)
    env = episode.env
    await episode.step(Tab(op="new", url=env.main_page.url))
    await episode.step(Goto(url="about:blank"))  # leaving the page of another tab is no failure
    out = await episode.step(Tab(op="switch", index=0))
    assert "failure" not in out.info and not out.terminated
    out = await episode.step(await _target_click(out.observation.a11y, obs.instruction))
    assert out.terminated and out.reward == 1.0


async def test_leaving_the_task_page_in_tab_0_still_ends_the_episode(episode):
    await episode.reset(registration.task(CLICK_BUTTON), seed=3)
    env = episode.env
    await episode.step(Tab(op="new", url=env.main_page.url))
    await episode.step(Tab(op="switch", index=0))
    out = await episode.step(Goto(url=env.main_page.url))  # the same URL loaded again is another document
    assert out.terminated and out.reward == 0.0 and out.info["agent_fault"] is True
