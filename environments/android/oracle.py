"""Building blocks for oracles: find an element in the uiautomator tree, then act on it with shared actions.

An oracle is an async generator of actions; these helpers are async generators too, used as
``async for a in tap(env, "Network & internet"): yield a``. They read the screen through
``env.ui_nodes()`` (the same tree an agent gets in its a11y side channel) and only ever *act* through
Tap / Swipe / Scroll / Type / OpenApp, so an oracle proves a task is solvable through the action set.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from mintgym.action_spaces import ActionModel, Scroll, Swipe, Tap, Type
from mintgym.environments.android import uitree

if TYPE_CHECKING:
    from mintgym.environments.android.env import AndroidEnvironment

#: Pop-ups stock apps show on first launch (permissions, onboarding), in the order they are answered.
POPUP_LABELS = ("While using the app", "Only this time", "Allow", "Got it", "Skip", "Not now", "No thanks",
                "Dismiss", "Continue", "OK")


class OracleStuck(RuntimeError):
    """The oracle could not find what it needs on screen (the app's UI differs from what it expects)."""


async def locate(env: AndroidEnvironment, *labels: str, scrolls: int = 4, exact: bool = True,
                 resource_id: str | None = None, class_name: str | None = None,
                 looks: int = 3) -> AsyncIterator[ActionModel | uitree.UiNode]:
    """Yield scroll actions until a node matching ``labels`` is visible, then yield that node last."""
    width, height = env.screen_size
    for _ in range(scrolls + 1):
        for _look in range(looks):  # screens animate in: look again before scrolling
            node = uitree.find(await env.ui_nodes(), *labels, resource_id=resource_id, class_name=class_name,
                               exact=exact)
            if node is not None:
                yield node
                return
            await asyncio.sleep(0.7)
        yield Scroll(x=width // 2, y=height * 2 // 3, dx=0, dy=height // 3)
    raise OracleStuck(f"no element {labels or resource_id!r} on screen after {scrolls} scrolls")


async def tap(env: AndroidEnvironment, *labels: str, **kwargs) -> AsyncIterator[ActionModel]:
    """Tap the centre of the element (or its clickable row) whose text or description is one of ``labels``."""
    async for item in locate(env, *labels, **kwargs):
        if isinstance(item, uitree.UiNode):
            x, y = uitree.tap_target(item).center
            yield Tap(x=x, y=y)
        else:
            yield item


async def tap_if_present(env: AndroidEnvironment, *labels: str, exact: bool = True) -> AsyncIterator[ActionModel]:
    """Tap one of ``labels`` if it is on screen now; otherwise do nothing."""
    node = uitree.find(await env.ui_nodes(), *labels, exact=exact)
    if node is not None:
        x, y = uitree.tap_target(node).center
        yield Tap(x=x, y=y)


async def dismiss_popups(env: AndroidEnvironment, rounds: int = 3,
                         labels: tuple[str, ...] = POPUP_LABELS) -> AsyncIterator[ActionModel]:
    """Answer first-run dialogs (permission prompts, tips) until none is left, at most ``rounds`` times."""
    for _ in range(rounds):
        await asyncio.sleep(0.5)
        node = uitree.find(await env.ui_nodes(), *labels)
        if node is None:
            return
        x, y = uitree.tap_target(node).center
        yield Tap(x=x, y=y)


async def type_into(env: AndroidEnvironment, labels: tuple[str, ...], text: str,
                    **kwargs) -> AsyncIterator[ActionModel]:
    """Tap the field labelled ``labels`` (its hint text or description), then type ``text``."""
    async for action in tap(env, *labels, **kwargs):
        yield action
    yield Type(text=text)


async def drag_seekbar(env: AndroidEnvironment, fraction: float) -> AsyncIterator[ActionModel]:
    """Drag the first SeekBar on screen from its thumb region to ``fraction`` (0 = left end, 1 = right end)."""
    async for item in locate(env, class_name="SeekBar", scrolls=1):
        if isinstance(item, uitree.UiNode):
            x1, y1, x2, y2 = item.bounds
            cy = (y1 + y2) // 2
            target = x1 + 1 if fraction <= 0 else x2 - 2 if fraction >= 1 else int(x1 + fraction * (x2 - x1))
            start = (x1 + x2) // 2
            yield Tap(x=start, y=cy)
            yield Swipe(x1=start, y1=cy, x2=target, y2=cy, duration=0.8)
        else:
            yield item


async def settings_path(env: AndroidEnvironment, *steps: tuple[str, ...]) -> AsyncIterator[ActionModel]:
    """Tap through Settings screens: each step is a tuple of alternative labels (they differ by version)."""
    for labels in steps:
        async for action in tap(env, *labels):
            yield action
