"""Shared by the desktop attack files: an in-process desktop host, two sessions on it, and the shell the agent
types into (commands started exactly as the session's own processes are: its user, namespaces and group)."""

import os
import shutil

import pytest
import pytest_asyncio

from mintgym.action_spaces import Key, Type, Wait

#: The marks of a desktop attack file: the desktop suite, and skipped where its sessions cannot be isolated.
DESKTOP_MARKS = [
    pytest.mark.desktop,
    pytest.mark.skipif(shutil.which("Xvfb") is None or shutil.which("openbox") is None,
                       reason="Xvfb and openbox are needed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="session isolation needs root (else the container is the boundary)"),
]
NOTES_TASK = "desktop/terminal-file-v0"
SOLVE = "echo 'hello desktop' > ~/Desktop/notes.txt"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def desktop_host():
    from mintgym.environments.desktop.host import DesktopHost

    host = DesktopHost()
    await host.start()
    yield host
    await host.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def desktop_pair(desktop_host):
    a, b = await desktop_host.create({}), await desktop_host.create({})
    await a.reset(None, 0)
    await b.reset(None, 0)
    yield a, b
    await a.close()
    await b.close()


async def sh(env, command: str, timeout: float = 30) -> str:
    """What ``command`` prints (stdout and stderr), run by the session's shell."""
    result = await env.run(command, shell=True, timeout=timeout)
    return (result.stdout + result.stderr).strip()


def type_in_terminal(env, command: str, settle: float = 6.0) -> None:
    """Open the session's terminal with its key binding and type ``command`` there, as an agent would."""
    env.step(Key(keys=("ctrl", "alt", "t")))
    env.step(Wait(seconds=3.0))
    env.step(Type(text=command + "\n"))
    env.step(Wait(seconds=settle))


def type_and_wait_for_the_end(env, command: str, seconds: int) -> tuple[float, dict] | None:
    """Type ``command`` into the terminal, then wait up to ``seconds`` one step a second for the episode to end;
    (reward, info) of the step that ended it, or None."""
    env.step(Key(keys=("ctrl", "alt", "t")))
    env.step(Wait(seconds=3.0))
    env.step(Type(text=command + "\n"))
    for _ in range(seconds):
        _obs, reward, terminated, _truncated, info = env.step(Wait(seconds=1.0))
        if terminated:
            return reward, info
    return None
