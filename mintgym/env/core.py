"""Layer 1: the server-side contracts every domain implements.

* :class:`EnvironmentHost` -- one per env server process: the shared, expensive part (one Chromium, the
  Xvfb pool, an adb connection) and a factory for per-session environments.
* :class:`Environment` -- one per session: executes typed actions and takes screenshots. Its domain
  hooks (the page, the home directory, adb shell, the sandbox state) are what tasks read.
* :class:`Task` -- sets an environment up, scores its real state in [0, 1], and can ship an oracle: a
  scripted solution acting only through the shared actions.

All methods are coroutines: one server runs many sessions on one event loop. Blocking work goes to a
thread (``asyncio.to_thread``) or a subprocess.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from mintgym.action_spaces import ActionModel, ActionSet, action_set_for
from mintgym.types import TaskInfo

if TYPE_CHECKING:
    import random


class Environment(abc.ABC):
    """One session's world. Subclasses set ``domain`` and implement the abstract coroutines.

    ``execute`` raises :class:`~mintgym.action_spaces.InvalidAction` for an agent mistake (the step then
    counts with ``info["error"]`` and state must be unchanged) and
    :class:`~mintgym.errors.EnvironmentCrashed` when the environment itself died.
    """

    domain: ClassVar[str]

    #: The answer given by the last ``done`` action of this episode (None until then).
    answer: str | None = None
    #: The success flag of the last ``done`` action.
    claimed_success: bool | None = None
    #: The side channels the session's observations will ask for (set by the Episode before any reset),
    #: for environments that must prepare at reset what a channel reads (the desktop's AT-SPI bus).
    requested_channels: frozenset[str] = frozenset()

    @property
    def action_set(self) -> ActionSet:
        """The actions this environment accepts; defaults to the domain's set."""
        return action_set_for(self.domain)

    @property
    @abc.abstractmethod
    def screen_size(self) -> tuple[int, int]:
        """(width, height) of the screenshots, in pixels. Fixed for an episode; a reset onto a task of
        another pack may change it (web tasks carry their viewport)."""

    async def start(self) -> None:
        """Acquire per-session resources (a browser context, a display). Called once before reset."""
        return None  # an optional hook: nothing to do by default

    @abc.abstractmethod
    async def reset(self, task: Task, seed: int | None) -> None:
        """Bring the environment to a fresh state for ``task`` (the task's setup runs afterwards)."""

    @abc.abstractmethod
    async def execute(self, action: ActionModel) -> None:
        """Carry out one validated action of this environment's action set."""

    @abc.abstractmethod
    async def screenshot(self) -> np.ndarray:
        """The current screen as RGB uint8 (H, W, 3), H and W from ``screen_size``."""

    async def side_channels(self, wanted: frozenset[str]) -> dict[str, str]:
        """Optional text channels (``text``, ``a11y``); only those asked for are computed."""
        return {}

    async def alive(self) -> bool:
        """False once the environment's browser, display, emulator or sandbox is gone."""
        return True

    def step_info(self) -> dict[str, Any]:
        """Facts about the last step for ``info`` (e.g. MiniWoB's raw reward); JSON-serializable."""
        return {}

    async def close(self) -> None:
        """Release everything; must be safe to call twice."""
        return None  # an optional hook: nothing to do by default

    def describe(self) -> dict[str, Any]:
        """Facts for the server's spec (isolation level, app versions); JSON-serializable."""
        return {}


class EnvironmentHost(abc.ABC):
    """What one env server hosts: shared resources, and a factory for per-session environments."""

    domain: ClassVar[str]

    async def start(self) -> None:
        """Start shared resources (e.g. launch the browser). Called once when the server starts."""
        return None  # an optional hook: nothing to do by default

    @abc.abstractmethod
    async def create(self, options: dict[str, Any]) -> Environment:
        """A new, started environment for one session."""

    async def stop(self) -> None:
        """Stop shared resources. Called once when the server shuts down."""
        return None  # an optional hook: nothing to do by default

    async def healthy(self) -> bool:
        """False when the shared part (the browser process, the adb server) is gone."""
        return True

    def describe(self) -> dict[str, Any]:
        return {}


class SimpleHost(EnvironmentHost):
    """A host with no shared resources: each session constructs ``env_cls(**options)``."""

    env_cls: ClassVar[type[Environment]]

    def __init__(self, **defaults: Any):
        self.defaults = defaults

    async def create(self, options: dict[str, Any]) -> Environment:
        env = self.env_cls(**{**self.defaults, **options})
        await env.start()
        return env


@dataclass
class Task(abc.ABC):
    """A goal in one domain, set up on and scored from an environment's real state.

    ``instruction`` may be replaced by ``setup`` (MiniWoB reads it from the page, generated tasks
    from their seed). ``evaluate`` returns a score in [0, 1] computed from the environment, never
    from the agent's claims alone.
    """

    id: str
    instruction: str
    max_steps: int = 15
    family: str = ""
    tags: tuple[str, ...] = field(default=())

    domain: ClassVar[str]

    async def setup(self, env: Environment, rng: random.Random) -> str | None:
        """Lay the task's state on a freshly reset environment. May return the instruction."""
        return None

    @abc.abstractmethod
    async def evaluate(self, env: Environment) -> float:
        """Score the environment's current state in [0, 1]."""

    async def finished(self, env: Environment) -> bool:
        """True when the environment itself ended the episode (e.g. a MiniWoB task timed out)."""
        return False

    def oracle(self, env: Environment) -> AsyncIterator[ActionModel]:
        """A scripted solution: yields shared actions one at a time, reading env state as it goes."""
        raise NotImplementedError(f"task {self.id!r} ships no oracle")

    def has_oracle(self) -> bool:
        return type(self).oracle is not Task.oracle

    def unavailable(self) -> str | None:
        """Why this task cannot run on this machine (a missing app, needs the internet), else None."""
        return None

    async def teardown(self, env: Environment) -> None:
        """Undo anything setup did outside the environment (servers, files)."""
        return None  # an optional hook: nothing to do by default

    def info(self) -> TaskInfo:
        return TaskInfo(self.id, self.domain, self.instruction, self.max_steps, self.family, tuple(self.tags),
                        self.unavailable())
