"""A small native desktop pack: everyday jobs in a terminal and a text editor, scored from files."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import ClassVar

from mintgym.action_spaces import ActionModel, Click, Key, Type, Wait
from mintgym.env.core import Environment, Task
from mintgym.environments.desktop.scripting import terminal, wait_for_window


@dataclass
class TerminalFileTask(Task):
    """Write a line into a new file on the Desktop, from the terminal."""

    domain: ClassVar[str] = "desktop"
    file_name: str = "notes.txt"
    line: str = "hello desktop"

    async def evaluate(self, env: Environment) -> float:
        text = env.read_text(f"~/Desktop/{self.file_name}")
        return float(text is not None and text.strip() == self.line)

    async def oracle(self, env: Environment) -> AsyncIterator[ActionModel]:
        async for action in terminal(env, f"echo '{self.line}' > ~/Desktop/{self.file_name}"):
            yield action


@dataclass
class EditorSaveTask(Task):
    """Type a shopping list into the open text editor (mousepad) and save it."""

    domain: ClassVar[str] = "desktop"
    file_name: str = "todo.txt"
    text: str = "buy milk – 2 €"

    async def setup(self, env: Environment, rng: random.Random) -> str | None:
        path = env.write_bytes(f"~/Documents/{self.file_name}", b"")
        await env.launch(["mousepad", str(path)])
        return None

    async def evaluate(self, env: Environment) -> float:
        text = env.read_text(f"~/Documents/{self.file_name}")
        return float(text is not None and text.strip() == self.text)

    async def oracle(self, env: Environment) -> AsyncIterator[ActionModel]:
        async for action in wait_for_window(env, self.file_name, timeout=60):
            yield action
        wid = [w for w, t in await env.windows() if self.file_name in t][-1]
        x, y, width, height = await env.window_rect(wid)
        yield Click(x=x + width // 2, y=y + height // 2)
        yield Type(text=self.text)
        yield Key(keys=("ctrl", "s"))
        yield Wait(seconds=1.0)


def tasks() -> list[Task]:
    return [
        TerminalFileTask(id="desktop/terminal-file-v0", max_steps=30, family="desktop",
                         instruction="Create a file notes.txt on the Desktop whose only line is: hello desktop"),
        EditorSaveTask(id="desktop/editor-save-v0", max_steps=30, family="desktop",
                       instruction="In the open text editor, type exactly 'buy milk – 2 €' and save the file."),
    ]
