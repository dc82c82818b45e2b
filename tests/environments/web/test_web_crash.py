"""A crashed tab fails only its own session; a dead browser makes the host unhealthy and is relaunched."""

from __future__ import annotations

import asyncio
import os
import signal

import psutil
import pytest

from mintgym.action_spaces import Click
from mintgym.env import registration
from mintgym.env.episode import Episode
from mintgym.errors import EnvironmentCrashed

pytestmark = [pytest.mark.web, pytest.mark.asyncio(loop_scope="module")]
TASK = "webapps/shop-cart-kettle"


async def test_crashed_tab_fails_its_session_only(host):
    victim, bystander = await host.create({}), await host.create({})
    try:
        ep_v, ep_b = Episode(victim), Episode(bystander)
        await ep_v.reset(registration.task(TASK), 0)
        await ep_b.reset(registration.task(TASK), 0)
        cdp = await victim.context.new_cdp_session(victim.main_page)
        crash = asyncio.ensure_future(cdp.send("Page.crash"))  # no reply ever comes: the renderer is gone
        for _ in range(100):
            if not await victim.alive():
                break
            await asyncio.sleep(0.1)
        crash.cancel()
        assert not await victim.alive()
        with pytest.raises(EnvironmentCrashed):
            await ep_v.step(Click(x=10, y=10))
        assert await bystander.alive()
        out = await ep_b.step(Click(x=10, y=10))
        assert "error" not in out.info and out.observation.screenshot.shape == (600, 800, 3)
        assert await host.healthy()
    finally:
        await victim.close()
        await bystander.close()


def _browser_pids() -> list[int]:
    me = psutil.Process()
    return [p.pid for p in me.children(recursive=True)
            if "chrom" in p.name().lower() and "--type=" not in " ".join(p.cmdline())]


async def test_dead_browser_is_detected_and_relaunched(host):
    old = await host.create({})
    await Episode(old).reset(registration.task(TASK), 0)
    pids = _browser_pids()
    assert pids, "the browser process was not found"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    for _ in range(100):
        if not await host.healthy():
            break
        await asyncio.sleep(0.1)
    assert not await host.healthy()
    assert not await old.alive()
    with pytest.raises(EnvironmentCrashed):
        await old.execute(Click(x=1, y=1))
    await old.close()
    launches = host.launches
    fresh = await host.create({})
    try:
        assert host.launches == launches + 1 and await host.healthy()
        ep = Episode(fresh)
        obs, _ = await ep.reset(registration.task(TASK), 0)
        assert obs.screenshot.shape == (600, 800, 3)
    finally:
        await fresh.close()


async def test_server_session_manager_replaces_a_crashed_session(host):
    from mintgym.server.sessions import SessionFault, SessionManager

    manager = SessionManager(host, request_timeout=60)
    task = registration.task(TASK)
    victim = await manager.create(frozenset(), {})
    other = await manager.create(frozenset(), {})
    contexts = len(host.browser.contexts)
    try:
        await manager.reset(victim, task, 0)
        await manager.reset(other, task, 0)
        old_env = victim.env
        crash = asyncio.ensure_future(
            (await old_env.context.new_cdp_session(old_env.main_page)).send("Page.crash"))
        for _ in range(100):
            if not await old_env.alive():
                break
            await asyncio.sleep(0.1)
        crash.cancel()
        with pytest.raises(SessionFault) as fault:
            await manager.step(victim, Click(x=10, y=10), None)
        assert fault.value.code == "session_failed"
        assert victim.env is not old_env and victim.status == "needs_reset"
        assert len(host.browser.contexts) == contexts  # the crashed context was closed, a new one made
        await manager.reset(victim, task, 0)
        out = await manager.step(other, Click(x=10, y=10), None)
        assert "error" not in out.info
    finally:
        await manager.close_all()
