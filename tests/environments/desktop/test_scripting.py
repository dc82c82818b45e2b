"""Oracle building blocks on a real desktop session: the terminal helper when another window takes the focus."""

import asyncio

import pytest

from mintgym.action_spaces import Click, Type
from mintgym.environments.desktop.scripting import terminal, wait_for_window

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _play(env, actions, after_click):
    """Execute the oracle's actions; after each click into a terminal, ``after_click()`` may act."""
    played = []
    async for action in actions:
        played.append(action)
        await env.execute(action)
        if isinstance(action, Click):
            await after_click()
    return played


async def _thief(env):
    """An editor window that can take the focus away from the terminal (keys typed into it do nothing)."""
    await env.launch(["mousepad"])
    async for wait in wait_for_window(env, "Mousepad"):
        await env.execute(wait)

    async def steal():
        assert await env.activate_window("Mousepad")
        await asyncio.sleep(0.5)  # the window manager moves the focus
    return steal


async def test_terminal_types_again_in_a_new_terminal_when_another_window_took_the_keys(env):
    await env.reset(None, 0)
    steal = await _thief(env)
    stolen = []

    async def steal_once():
        if not stolen:
            stolen.append(True)
            await steal()

    played = await _play(env, terminal(env, "echo arrived >> ~/Desktop/t.txt"), steal_once)
    assert len([a for a in played if isinstance(a, Type)]) == 2  # typed again, into a second terminal
    assert len([t for _, t in await env.windows() if t == "Terminal"]) == 2
    for _ in range(50):
        if (env.home / "Desktop/t.txt").exists():
            break
        await asyncio.sleep(0.1)
    assert (env.home / "Desktop/t.txt").read_text() == "arrived\n"             # the command ran once


async def test_terminal_raises_when_the_command_never_shows_up(env):
    await env.reset(None, 0)
    steal = await _thief(env)
    with pytest.raises(RuntimeError, match=r"'echo lost' never showed up in the terminal after 2 tries"):
        await _play(env, terminal(env, "echo lost", tries=2, echo_timeout=1.0), steal)
    assert not (env.home / "Desktop/t.txt").exists()
