"""Layer 1: one episode of a task on an environment -- the step semantics every transport shares.

The env server and the in-process client both drive an :class:`Episode`, so step counting, action
validation, termination and reward are defined once:

* an invalid or unparseable action counts as a step, changes nothing, gets reward 0 and ``info["error"]``;
* ``done`` ends the episode (terminated); ``max_steps`` truncates it; the task may end it too;
* the reward is ``task.evaluate(env)`` when the episode ends, 0 before;
* a fault the agent's own action caused (its code killed the sandbox, it navigated off the task, it
  typed what the input layer cannot handle) is the agent's failure, never an infrastructure error: the
  environment raises :class:`AgentFault` from ``execute`` and the episode ends there, terminated, with
  reward 0, ``info["failure"]`` giving the reason and ``info["agent_fault"] = True``. Rollouts train on
  it like any failure and evaluations never retry it. Only faults outside the agent's reach (a killed
  server, a browser that crashed on its own) raise :class:`~mintgym.errors.EnvironmentCrashed`;
* an exception from the task's own code (``setup``, ``evaluate``, ``finished``, ``oracle``, ``teardown``, or a
  score outside [0, 1]) is re-raised as :class:`~mintgym.errors.TaskError`, whose message points at the
  task author's file and line (:func:`task_error`), so every front end can show where their code failed.
"""

from __future__ import annotations

import inspect
import os
import random
import sys
import sysconfig
import time
import traceback
import uuid
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from mintgym.action_spaces import ActionModel, Done, InvalidAction, Zoom
from mintgym.env import declarations
from mintgym.env.core import Environment, Task
from mintgym.errors import EpisodeStateError, MintGymError, TaskError, TaskUnavailable
from mintgym.observe import SIDE_CHANNELS
from mintgym.types import Observation

T = TypeVar("T")
#: Frames of these folders are MintGym's, Python's or an installed library's: not shown as the task author's.
_NOT_AUTHORS = tuple(os.path.join(Path(p).resolve(), "")
                     for p in (Path(__file__).parents[1], *(sysconfig.get_paths()[k]
                                                            for k in ("stdlib", "purelib", "platlib"))))
#: At most this many of the author's frames are shown (the innermost ones).
MAX_TASK_FRAMES = 6


def enlarge_region(shot: np.ndarray, region: tuple[int, int, int, int]) -> np.ndarray:
    """The region (x1, y1, x2, y2) of ``shot`` scaled up to the full frame size."""
    from PIL import Image

    x1, y1, x2, y2 = region
    height, width = shot.shape[:2]
    crop = Image.fromarray(shot[y1:y2, x1:x2])
    return np.asarray(crop.resize((width, height), Image.Resampling.LANCZOS), dtype=np.uint8)


def _authors_root(task: Task) -> str | None:
    """The folder of the package that defines ``task``'s class (its frames are shown even when installed)."""
    top = sys.modules.get(type(task).__module__.split(".")[0])
    where = getattr(top, "__file__", None)
    if not where or top.__name__ == "mintgym":
        return None
    path = Path(where).resolve()
    return os.path.join(path.parent, "") if path.name == "__init__.py" else str(path)


def task_error(task: Task, call: str, err: BaseException) -> TaskError:
    """A :class:`TaskError` for ``err``, raised by ``task``'s ``call``: its first line says what raised and
    where (the innermost frame of the task author's code), the next lines are the author's frames only."""
    frames = traceback.extract_tb(err.__traceback__)[1:]  # [0] is the Episode's own call
    root = _authors_root(task)
    mine = [f for f in frames
            if (root and str(Path(f.filename).resolve()).startswith(root))
            or not str(Path(f.filename).resolve()).startswith(_NOT_AUTHORS)]
    shown = (mine or frames[-1:])[-MAX_TASK_FRAMES:]
    what = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    at = f" at {shown[-1].filename}:{shown[-1].lineno} ({shown[-1].name})" if shown else ""
    lines = [f"task {task.id!r} {call}() raised {what}{at}"]
    for f in shown:
        lines.append(f'  File "{f.filename}", line {f.lineno}, in {f.name}')
        if f.line:
            lines.append(f"    {f.line}")
    return TaskError("\n".join(lines))


def _defined_at(task: Task, name: str) -> str:
    """``file:line`` of the task's method ``name`` (for errors about what it returned)."""
    method = getattr(type(task), name)
    try:
        return f"{inspect.getsourcefile(method)}:{inspect.getsourcelines(method)[1]}"
    except (OSError, TypeError):
        return f"{type(task).__module__}.{type(task).__qualname__}.{name}"


class AgentFault(Exception):
    """Raised by ``Environment.execute`` when the agent's own action broke the episode (not the platform).

    The episode ends as a failure with reward 0 and this message as its reason. The environment must
    still be able to ``reset`` afterwards (or report ``alive() == False``, and the server replaces it).
    """


@dataclass
class StepOutcome:
    observation: Observation
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)


class Episode:
    """Drives one task on one environment from reset to the end."""

    def __init__(self, env: Environment, side_channels: frozenset[str] = frozenset()):
        unknown = set(side_channels) - set(SIDE_CHANNELS)
        if unknown:
            raise ValueError(f"unknown side channels {sorted(unknown)}; known: {', '.join(SIDE_CHANNELS)}")
        if problem := declarations.unsupported_channels(env.domain, side_channels):
            raise ValueError(problem)
        self.env = env
        self.side_channels = frozenset(side_channels)
        env.requested_channels = self.side_channels
        self.task: Task | None = None
        #: This episode's step limit: the task's, or the lower cap given at reset.
        self.max_steps = 0
        self.instruction = ""
        self.step_count = 0
        self.ended = False
        self.episode_id = ""
        #: Why the agent's own action ended this episode (None unless it did).
        self.fault: str | None = None
        self._oracle: AsyncIterator[ActionModel] | None = None
        self._zoom: tuple[int, int, int, int] | None = None

    async def reset(self, task: Task, seed: int | None = None,
                    max_steps: int | None = None) -> tuple[Observation, dict[str, Any]]:
        """Start ``task``; ``max_steps`` caps this episode below the task's own limit (reaching the cap
        truncates, like the task's limit)."""
        reason = self._task_sync(task, "unavailable", task.unavailable)
        if reason:
            raise TaskUnavailable(f"task {task.id!r} cannot run here: {reason}")
        if self.task is not None:
            await self._task_call("teardown", self.task.teardown(self.env), self.task)
        self.task = task
        self.max_steps = min(task.max_steps, max_steps) if max_steps else task.max_steps
        self.step_count = 0
        self.ended = False
        self.fault = None
        self._oracle = None
        self._zoom = None
        self.episode_id = uuid.uuid4().hex[:12]
        self.env.answer = None
        self.env.claimed_success = None
        rng = random.Random(seed)
        await self.env.reset(task, seed)
        instruction = await self._task_call("setup", task.setup(self.env, rng))
        self.instruction = instruction if instruction is not None else task.instruction
        obs = await self.observe()
        return obs, {"task_id": task.id, "episode_id": self.episode_id, "seed": seed,
                     "max_steps": self.max_steps}

    async def observe(self, last_error: str | None = None) -> Observation:
        shot = await self.env.screenshot()
        zoom, self._zoom = self._zoom, None
        if zoom is not None:
            shot = enlarge_region(shot, zoom)
        channels = await self.env.side_channels(self.side_channels) if self.side_channels else {}
        return Observation(
            screenshot=shot,
            instruction=self.instruction,
            domain=self.env.domain,
            step=self.step_count,
            frame_id=f"{self.episode_id}-{self.step_count}",
            text=channels.get("text"),
            a11y=channels.get("a11y"),
            dom=channels.get("dom"),
            zoom=zoom,
            last_error=last_error,
        )

    async def step(self, action: ActionModel | dict | None, parse_error: str | None = None) -> StepOutcome:
        """Validate and execute ``action``; ``parse_error`` records an action the agent failed to express."""
        if self.task is None:
            raise EpisodeStateError("step() before reset(): reset the session first")
        if self.ended:
            raise EpisodeStateError("step() after the episode ended: call reset() to start a new one")
        info: dict[str, Any] = {}
        started = time.perf_counter()
        self.step_count += 1
        terminated = False
        try:
            if parse_error is not None:
                raise InvalidAction(parse_error)
            if action is None:
                raise InvalidAction("no action given")
            action = self.env.action_set.validate(action, self.env.screen_size)
            info["action"] = action.to_json()
            if isinstance(action, Done):
                self.env.answer = action.answer
                self.env.claimed_success = action.success
                terminated = True
            elif isinstance(action, Zoom):
                if not (action.x2 > action.x1 and action.y2 > action.y1):
                    raise InvalidAction("zoom: the region needs x2 > x1 and y2 > y1")
                self._zoom = (action.x1, action.y1, action.x2, action.y2)
            else:
                await self.env.execute(action)
        except InvalidAction as err:
            info["error"] = str(err)
        except AgentFault as fault:
            return await self._end_by_fault(str(fault) or type(fault).__name__, info, started)
        terminated = terminated or await self._task_call("finished", self.task.finished(self.env))
        truncated = not terminated and self.step_count >= self.max_steps
        reward = 0.0
        if terminated or truncated:
            reward = await self._score()
            self.ended = True
        obs = await self.observe(info.get("error"))
        extra = self.env.step_info()
        if extra:
            info.update({k: v for k, v in extra.items() if k not in ("error", "action")})
        info["step_seconds"] = time.perf_counter() - started
        return StepOutcome(obs, reward, terminated, truncated, info)

    async def _end_by_fault(self, reason: str, info: dict[str, Any], started: float) -> StepOutcome:
        """End the episode as the agent's failure: reward 0, whatever the environment's state says."""
        self.ended = True
        self.fault = reason
        info.update(error=reason, failure=reason, agent_fault=True)
        try:
            obs = await self.observe(reason)
        except Exception:  # noqa: BLE001 -- the environment may be too broken to show a frame: the episode still ends
            height, width = self.env.screen_size[1], self.env.screen_size[0]
            obs = Observation(screenshot=np.zeros((height, width, 3), dtype=np.uint8), instruction=self.instruction,
                              domain=self.env.domain, step=self.step_count,
                              frame_id=f"{self.episode_id}-{self.step_count}", last_error=reason)
        info["step_seconds"] = time.perf_counter() - started
        return StepOutcome(obs, 0.0, True, False, info)

    async def evaluate(self) -> float:
        if self.task is None:
            raise EpisodeStateError("evaluate() before reset()")
        if self.fault is not None:  # the agent broke its own episode: nothing it left behind scores
            return 0.0
        return await self._score()

    async def oracle_action(self) -> ActionModel | None:
        """The oracle's next action for the current state, or None when it has nothing left."""
        if self.task is None:
            raise EpisodeStateError("oracle_action() before reset()")
        if self._oracle is None:
            self._oracle = self._task_sync(self.task, "oracle", lambda: self.task.oracle(self.env).__aiter__())
        try:
            return await self._task_call("oracle", self._oracle.__anext__())
        except StopAsyncIteration:
            return None

    async def _score(self) -> float:
        """The task's ``evaluate``, checked to lie in [0, 1]."""
        reward = float(await self._task_call("evaluate", self.task.evaluate(self.env)))
        if not 0.0 <= reward <= 1.0:
            raise TaskError(f"task {self.task.id!r} evaluate() returned {reward}, outside [0, 1] "
                            f"(at {_defined_at(self.task, 'evaluate')})")
        return reward

    async def _task_call(self, call: str, awaitable: Awaitable[T], task: Task | None = None) -> T:
        """Await a call into the task's code; what it raises (other than MintGym's own errors, the end of an
        oracle, or a missing oracle) becomes a :class:`TaskError` pointing at the author's code."""
        try:
            return await awaitable
        except (MintGymError, StopAsyncIteration, NotImplementedError):
            raise
        except Exception as err:
            raise task_error(task or self.task, call, err) from err

    @staticmethod
    def _task_sync(task: Task, call: str, fn: Any) -> Any:
        """:meth:`_task_call` for the task's synchronous calls."""
        try:
            return fn()
        except (MintGymError, NotImplementedError):
            raise
        except Exception as err:
            raise task_error(task, call, err) from err
