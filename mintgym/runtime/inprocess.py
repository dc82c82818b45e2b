"""Layer 3: a gymnasium env running its Environment in this process, on a private event loop thread.

Same observations, spaces and step semantics as :class:`~mintgym.client.sync.EnvClient` (both drive an
:class:`~mintgym.env.episode.Episode`), without HTTP. Useful for debugging and as the overhead baseline.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import gymnasium as gym

from mintgym.action_spaces import ActionModel, InvalidAction
from mintgym.env import declarations, registration
from mintgym.env.episode import Episode
from mintgym.server.sessions import resolve_task
from mintgym.spaces import action_space, fit_screen, gym_info, observation_space, observation_to_dict


class InProcessEnv(gym.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, domain: str, *, task_id: str | None = None, side_channels: tuple[str, ...] = (),
                 env_options: dict | None = None, host_options: dict | None = None):
        self.domain = domain
        self.task_id = task_id
        self.side_channels = tuple(side_channels)
        self.render_mode = "rgb_array"
        self._volatile = declarations.declaration(domain).volatile_info
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mintgym-inprocess", daemon=True)
        self._thread.start()
        self._host = registration.host_class(domain)(**(host_options or {}))
        self._call(self._host.start())
        self.env = self._call(self._host.create(dict(env_options or {})))
        self.episode = Episode(self.env, frozenset(self.side_channels))
        try:  # the first reset's task: its screen is the observation space's
            task = resolve_task(task_id, domain, None)
        except LookupError:
            task = None
        self.screen_size = declarations.task_screen_size(domain, task, self.env.screen_size)
        self.observation_space = observation_space(self.screen_size, self.side_channels)
        self.action_space = action_space(self.env.action_set, self.screen_size)
        self.last_observation = None
        self._closed = False

    def _call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        task = resolve_task((options or {}).get("task_id", self.task_id), self.domain, self.episode.task)
        obs, info = self._call(self.episode.reset(task, seed))
        self.last_observation = obs
        fit_screen(self, obs)
        return observation_to_dict(obs, self.side_channels), gym_info(info, self._volatile)

    def step(self, action: str | ActionModel | dict):
        parse_error = None
        if isinstance(action, str):
            try:
                action = self.env.action_set.parse(action, screen_size=self.screen_size)
            except InvalidAction as err:
                action, parse_error = None, str(err)
        outcome = self._call(self.episode.step(action, parse_error))
        self.last_observation = outcome.observation
        info = gym_info(outcome.info, self._volatile)
        return (observation_to_dict(outcome.observation, self.side_channels), outcome.reward, outcome.terminated,
                outcome.truncated, info)

    def evaluate(self) -> float:
        return self._call(self.episode.evaluate())

    def oracle_action(self) -> dict | None:
        action = self._call(self.episode.oracle_action())
        return None if action is None else action.to_json()

    def render(self):
        return None if self.last_observation is None else self.last_observation.screenshot

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._call(self.env.close())
            self._call(self._host.stop())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        super().close()
