"""Layer 0: the gymnasium spaces of the shared observation and of text actions.

An env made for a task has its spaces fixed when it is made: the screenshot shape is the screen its task
declares (see :func:`mintgym.env.declarations.task_screen_size`), and :class:`ActionText` samples actions
its action set accepts on that screen (:func:`fit_screen`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from gymnasium import spaces

from mintgym.observe import TEXT_CHANNELS
from mintgym.types import Observation

if TYPE_CHECKING:
    from mintgym.action_spaces import ActionModel, ActionSet

MAX_TEXT = 1 << 20
#: The longest action text the env server takes (``StepRequest.action_text``).
MAX_ACTION_TEXT = 100_000


class FreeText(spaces.Text):
    """A Text space that contains any string up to ``max_length`` characters (instructions, URLs, a11y).

    gymnasium's Text only contains strings over its sampling charset; instructions contain any Unicode.
    Samples are still drawn from the (alphanumeric) charset.
    """

    def __init__(self, max_length: int = MAX_TEXT, *, min_length: int = 0, seed=None):
        super().__init__(max_length=max_length, min_length=min_length, seed=seed)

    def contains(self, x) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"FreeText({self.min_length}, {self.max_length})"


class ActionText(FreeText):
    """Action text in the canonical call form (``click(x=10, y=20)``); contains any non-empty string the
    server takes, and ``sample()`` draws an action the env accepts: a pointer action of ``action_set`` (click,
    scroll, tap, zoom, ...) at uniform points on a ``screen_size`` screen, other fields at their defaults.

    >>> from mintgym.action_spaces import DESKTOP
    >>> space = ActionText(DESKTOP, (160, 210), seed=0)
    >>> DESKTOP.parse(space.sample(), screen_size=(160, 210)).type in ("click", "move", "drag", "scroll")
    True
    """

    def __init__(self, action_set: ActionSet, screen_size: tuple[int, int], *, seed=None):
        super().__init__(MAX_ACTION_TEXT, min_length=1, seed=seed)
        self.action_set = action_set
        self.screen_size = (int(screen_size[0]), int(screen_size[1]))
        self._pointer_types = [t for t in action_set.types if _pointer_only(t)]

    def sample(self, mask=None, probability=None) -> str:
        if mask is not None or probability is not None:
            raise ValueError("ActionText.sample takes no mask or probability: it samples actions, not characters")
        from mintgym.action_spaces import render_action

        return render_action(self._sample_action(), screen_size=self.screen_size)

    def _sample_action(self) -> ActionModel:
        from mintgym.action_spaces import Wait

        if not self._pointer_types:  # a set without pointer actions: waiting changes nothing
            if "wait" not in self.action_set:
                raise ValueError(f"action set {self.action_set.name!r} has no action to sample (no pointer action, "
                                 "no wait); sample its actions yourself")
            return Wait(seconds=0)
        kind = self._pointer_types[int(self.np_random.integers(len(self._pointer_types)))]
        width, height = self.screen_size
        fields: dict[str, int] = {}
        for fx, fy in kind.points:
            fields[fx], fields[fy] = int(self.np_random.integers(width)), int(self.np_random.integers(height))
        if len(kind.points) == 2:  # a region or a stroke: first corner above and left of the second
            (ax, ay), (bx, by) = kind.points
            fields[ax], fields[bx] = sorted((fields[ax], fields[bx]))
            fields[ay], fields[by] = sorted((fields[ay], fields[by]))
            fields[bx], fields[by] = min(fields[bx] + 1, width - 1), min(fields[by] + 1, height - 1)
        return self.action_set.validate(kind(**fields), self.screen_size)

    def __repr__(self) -> str:
        return f"ActionText({self.action_set.name!r}, {self.screen_size[0]}x{self.screen_size[1]})"

    def __eq__(self, other) -> bool:
        return (isinstance(other, ActionText) and other.action_set.name == self.action_set.name
                and other.screen_size == self.screen_size)

    __hash__ = None  # mutable like every gymnasium space


def _pointer_only(kind: type[ActionModel]) -> bool:
    """Whether every required field of action type ``kind`` is a point coordinate (and it has a point)."""
    coordinates = {name for point in kind.points for name in point}
    required = {name for name, f in kind.model_fields.items() if f.is_required()}
    return bool(coordinates) and required <= coordinates


def observation_space(screen_size: tuple[int, int], side_channels=()) -> spaces.Dict:
    """``Dict(screenshot=Box(0, 255, (H, W, 3), uint8), instruction=Text, domain=Text, step=Box)``."""
    width, height = screen_size
    fields = {
        "screenshot": spaces.Box(0, 255, (height, width, 3), np.uint8),
        "instruction": FreeText(),
        "domain": FreeText(64),
        "step": spaces.Box(0, np.iinfo(np.int64).max, (), np.int64),
    }
    for name in side_channels:
        if name in TEXT_CHANNELS:  # "som" changes the screenshot, it adds no field
            fields[name] = FreeText()
    return spaces.Dict(fields)


def fit_screen(env, obs: Observation) -> None:
    """Keep ``env``'s spaces true to a frame of another size: an env made for one task (``env.task_id`` set)
    has its spaces fixed at make time, as gymnasium's contract wants, and refuses it (a reset onto a task with
    another screen needs an env of its own); a domain env (no task) takes the new screen size."""
    if tuple(obs.screen_size) == tuple(env.screen_size):
        return
    width, height = obs.screen_size
    if env.task_id is not None:
        raise ValueError(f"this {width}x{height} frame does not fit the observation space of the env made for "
                         f"{env.task_id!r} ({env.screen_size[0]}x{env.screen_size[1]} frames): a task with another "
                         "screen size needs an env of its own (mintgym.make(task_id))")
    env.screen_size = (width, height)
    env.observation_space = observation_space(env.screen_size, env.side_channels)
    if isinstance(env.action_space, ActionText):
        env.action_space = ActionText(env.action_space.action_set, env.screen_size)


def observation_to_dict(obs: Observation, side_channels=()) -> dict:
    """The gymnasium form of an observation (frame_id travels in info, so equal seeds give equal dicts)."""
    out = {"screenshot": obs.screenshot, "instruction": obs.instruction, "domain": obs.domain,
           "step": np.array(obs.step, dtype=np.int64)}
    for name in side_channels:
        if name in TEXT_CHANNELS:
            out[name] = getattr(obs, name) or ""
    return out


def action_space(action_set: ActionSet | None = None, screen_size: tuple[int, int] | None = None) -> FreeText:
    """Actions are text in the canonical function-call form (``click(x=10, y=20)``); the client also takes
    typed actions and dicts. With the env's action set and screen, samples are actions it accepts."""
    if action_set is None or screen_size is None:
        return FreeText(MAX_ACTION_TEXT, min_length=1)
    return ActionText(action_set, screen_size)


#: Per-episode and timing fields kept out of gymnasium's ``info`` so equal seeds give equal infos
#: (gymnasium's checker requires it); the typed ``last_observation.frame_id`` still ties frames to actions.
VOLATILE_INFO = ("frame_id", "episode_id", "step_seconds")


def gym_info(info: dict, volatile: tuple[str, ...] = ()) -> dict:
    """``info`` without :data:`VOLATILE_INFO` and the ``volatile`` dotted paths (a domain's
    ``Declaration.volatile_info``)."""
    out = {k: v for k, v in info.items() if k not in VOLATILE_INFO}
    for path in volatile:
        *parents, last = path.split(".")
        holder = out
        for key in parents:
            if not isinstance(holder.get(key), dict):
                break
            holder[key] = dict(holder[key])  # copied, so the caller's info keeps the field
            holder = holder[key]
        else:
            holder.pop(last, None)
    return out
