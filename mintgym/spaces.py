"""Layer 0: the gymnasium spaces of the shared observation and of text actions."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from mintgym.types import Observation

MAX_TEXT = 1 << 20


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
        fields[name] = FreeText()
    return spaces.Dict(fields)


def follow_screen(env, screen_size: tuple[int, int]) -> None:
    """A reset onto a task with another viewport changes the frame size: ``env``'s space follows it."""
    if tuple(screen_size) != tuple(env.screen_size):
        env.screen_size = tuple(screen_size)
        env.observation_space = observation_space(env.screen_size, env.side_channels)


def observation_to_dict(obs: Observation, side_channels=()) -> dict:
    """The gymnasium form of an observation (frame_id travels in info, so equal seeds give equal dicts)."""
    out = {"screenshot": obs.screenshot, "instruction": obs.instruction, "domain": obs.domain,
           "step": np.int64(obs.step)}
    for name in side_channels:
        out[name] = getattr(obs, name) or ""
    return out


def action_space() -> FreeText:
    """Actions are text in the canonical function-call form (``click(x=10, y=20)``); the client
    also takes typed actions and dicts."""
    return FreeText(100_000, min_length=1)


#: Per-episode and timing fields kept out of gymnasium's ``info`` so equal seeds give equal infos
#: (gymnasium's checker requires it); the typed ``last_observation.frame_id`` still ties frames to actions.
VOLATILE_INFO = ("frame_id", "episode_id", "step_seconds")


def gym_info(info: dict) -> dict:
    return {k: v for k, v in info.items() if k not in VOLATILE_INFO}
