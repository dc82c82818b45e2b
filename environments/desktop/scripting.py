"""Building blocks for oracles: scripted solutions that act only through the shared desktop actions."""

from __future__ import annotations

from typing import AsyncIterator

from mintgym.action_spaces import ActionModel, Click, Key, Type, Wait
from mintgym.environments.desktop.env import DesktopEnvironment


async def wait_for_window(env: DesktopEnvironment, title: str, *, present: bool = True,
                          timeout: float = 30.0, poll: float = 0.3) -> AsyncIterator[ActionModel]:
    """Yield ``wait`` actions until a window whose title contains ``title`` exists (or is gone)."""
    waited = 0.0
    while waited < timeout:
        titles = [t for _, t in await env.windows()]
        if any(title.lower() in t.lower() for t in titles) == present:
            return
        yield Wait(seconds=poll)
        waited += poll
    raise RuntimeError(f"oracle: window {title!r} {'never appeared' if present else 'never closed'} "
                       f"(windows: {[t for _, t in await env.windows()]})")


async def terminal(env: DesktopEnvironment, *commands: str, settle: float = 1.0) -> AsyncIterator[ActionModel]:
    """Open a terminal with ctrl+alt+t, like a user would, and type each command followed by Enter."""
    before = len([t for _, t in await env.windows() if t == "Terminal"])
    yield Key(keys=("ctrl", "alt", "t"))
    waited = 0.0
    while len([t for _, t in await env.windows() if t == "Terminal"]) <= before:
        if waited > 30:
            raise RuntimeError("oracle: ctrl+alt+t opened no terminal")
        if waited in (4.0, 10.0):  # the shortcut was swallowed (WM still starting): press it again
            yield Key(keys=("ctrl", "alt", "t"))
        yield Wait(seconds=1.0)
        waited += 1.0
    # Focus may stay on a window that just appeared elsewhere: click into the new terminal.
    wid = [w for w, t in await env.windows() if t == "Terminal"][-1]
    x, y, width, height = await env.window_rect(wid)
    yield Click(x=min(max(0, x + width // 2), env.screen_size[0] - 1),
                y=min(max(0, y + height // 2), env.screen_size[1] - 1))
    yield Wait(seconds=0.5)  # the shell prints its prompt before it reads input
    for command in commands:
        yield Type(text=command + "\n")
        yield Wait(seconds=settle)
