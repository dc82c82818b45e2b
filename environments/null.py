"""The null environment: a fixed-size frame and no world behind it.

It measures what the env server and client add to a step (benchmarks/step_overhead.py) and serves the
core's own tests. Its one task, ``null/echo``, is solved by ``done(answer="ok")``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mintgym.action_spaces import ActionModel, Done
from mintgym.env.core import Environment, SimpleHost, Task


class NullOptions(BaseModel):
    """Options of a null session: the frame size, bounded."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    width: int = Field(1280, ge=16, le=7680)
    height: int = Field(720, ge=16, le=4320)


class NullEnvironment(Environment):
    domain: ClassVar[str] = "null"

    def __init__(self, width: int = 1280, height: int = 720):
        self._size = (int(width), int(height))
        self._frame = np.zeros((self._size[1], self._size[0], 3), dtype=np.uint8)
        self.actions: list[ActionModel] = []

    @property
    def action_set(self):
        from mintgym.action_spaces import DESKTOP

        return DESKTOP

    @property
    def screen_size(self) -> tuple[int, int]:
        return self._size

    async def reset(self, task: Task, seed: int | None) -> None:
        self.actions = []
        rng = np.random.default_rng(seed)
        self._frame[:] = rng.integers(0, 256, size=3, dtype=np.uint8)

    async def execute(self, action: ActionModel) -> None:
        self.actions.append(action)
        x = getattr(action, "x", None)
        y = getattr(action, "y", None)
        if x is not None and y is not None:
            self._frame[max(0, y - 2): y + 3, max(0, x - 2): x + 3] = 255

    async def screenshot(self) -> np.ndarray:
        return self._frame.copy()


class NullHost(SimpleHost):
    domain: ClassVar[str] = "null"
    env_cls = NullEnvironment
    options_model = NullOptions

    async def create(self, options: dict) -> Environment:
        """A session; its options (over the host's defaults) are checked by :class:`NullOptions` first."""
        checked = NullOptions.model_validate({**self.defaults, **(options or {})})
        return await super().create(checked.model_dump())


@dataclass
class EchoTask(Task):
    domain: ClassVar[str] = "null"

    async def evaluate(self, env: Environment) -> float:
        return 1.0 if env.answer == "ok" else 0.0

    async def oracle(self, env: Environment):
        yield Done(answer="ok")


def tasks() -> list[Task]:
    return [EchoTask(id="null/echo", instruction='Answer "ok".', max_steps=50, family="null")]
