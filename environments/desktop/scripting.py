"""Building blocks for oracles: scripted solutions that act only through the shared desktop actions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

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


#: How much of a typed command must show up in the terminal to count as arrived: its start, which bash
#: echoes on the prompt's line before any wrap at the terminal's right edge.
ECHO_PREFIX = 40


async def terminal(env: DesktopEnvironment, *commands: str, settle: float = 1.0, tries: int = 3,
                   echo_timeout: float = 4.0) -> AsyncIterator[ActionModel]:
    """Open a terminal with ctrl+alt+t, like a user would, and type each command followed by Enter.

    Like a user, it looks for the command in the terminal before waiting for it to work: a window that
    takes the focus just then (an app still starting up raises itself over the terminal) gets the keys
    instead. Then it opens a new terminal, which comes up on top with the focus, and types the command
    there, up to ``tries`` times; it raises if the command never showed up."""
    have_terminal = False
    for command in commands:
        for attempt in range(tries):
            if attempt or not have_terminal:
                old_logs = set(env.terminal_logs())
                async for action in _open_terminal(env):
                    yield action
                have_terminal = True
            marks = {log: len(env.terminal_text(log)) for log in env.terminal_logs() if log not in old_logs}
            yield Type(text=command + "\n")
            waited = 0.0
            while not _echoed(env, old_logs, marks, command[:ECHO_PREFIX]):
                if waited >= echo_timeout:
                    break
                yield Wait(seconds=1.0)
                waited += 1.0
            else:
                break
        else:
            raise RuntimeError(f"oracle: {command[:ECHO_PREFIX]!r} never showed up in the terminal after "
                               f"{tries} tries (windows: {[t for _, t in await env.windows()]})")
        yield Wait(seconds=settle)


async def _open_terminal(env: DesktopEnvironment) -> AsyncIterator[ActionModel]:
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


def _echoed(env: DesktopEnvironment, old_logs: set[Path], marks: dict[Path, int], text: str) -> bool:
    """Whether ``text`` appeared in a terminal opened since ``old_logs`` (after what it showed at ``marks``)."""
    return any(text in env.terminal_text(log)[marks.get(log, 0):]
               for log in env.terminal_logs() if log not in old_logs)
