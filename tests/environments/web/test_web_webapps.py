"""The web-app pack: every task's oracle scores 1 and the untouched state 0, judged from server state;
sessions never see each other's state."""

from __future__ import annotations

import pytest

from mintgym.env import registration
from mintgym.env.episode import Episode
from mintgym.testing import check_task

pytestmark = [pytest.mark.web, pytest.mark.asyncio(loop_scope="module")]


@pytest.mark.parametrize("task", registration.tasks(prefix="webapps/"), ids=lambda t: t.id)
async def test_oracle_scores_one_and_untouched_zero(host, task):
    await check_task(host, task)


async def test_sessions_have_separate_state_and_reset_clears_it(host):
    task = registration.task("webapps/shop-cart-kettle")
    a, b = await host.create({}), await host.create({})
    try:
        ep_a, ep_b = Episode(a), Episode(b)
        await ep_a.reset(task, 0)
        await ep_b.reset(task, 0)
        while (action := await ep_a.oracle_action()) is not None and not ep_a.ended:
            await ep_a.step(action)
        assert await task.evaluate(a) == 1.0
        assert await task.evaluate(b) == 0.0
        assert host.apps.get(b.session_token).shop.cart == {}
        await b.open(f"{host.server_origin}/shop/cart.html")  # b's pages show its own, empty cart
        await b.page.wait_for_selector("#empty")
        await ep_a.reset(task, 0)
        assert host.apps.get(a.session_token).shop.cart == {}
    finally:
        await a.close()
        await b.close()
    assert a.session_token not in host.apps._states
