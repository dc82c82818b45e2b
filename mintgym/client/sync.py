"""Layer 2: the gymnasium client. ``EnvClient`` IS a ``gymnasium.Env``: wrappers, checkers and rollout
code cannot tell it from an in-process environment.

``reset(seed=, options={"task_id": ...})`` starts an episode; ``step(action)`` takes model text
(``"click(x=10, y=20)"``), a typed action or a dict. An invalid action is a step with reward 0 and
``info["error"]``; a dead environment raises :class:`~mintgym.errors.SessionFailed`.
``last_observation`` holds the typed :class:`~mintgym.types.Observation` (with ``frame_id``).

The spaces are fixed at construction: the screenshot is the screen of the env's task (the server answers it
when the session is created), and ``action_space.sample()`` gives actions the env accepts on that screen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

from mintgym.action_spaces import ActionModel
from mintgym.client import protocol
from mintgym.client.transport import HttpResponse, HttpTransport
from mintgym.env import declarations
from mintgym.errors import ServerError
from mintgym.spaces import action_space, fit_screen, gym_info, observation_space, observation_to_dict
from mintgym.types import Observation


class EnvClient(gym.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, base_url: str, *, domain: str, task_id: str | None = None, token: str | None = None,
                 encoding: str = "png", side_channels: tuple[str, ...] = (), env_options: dict | None = None,
                 timeout: float = 120.0, render_mode: str | None = "rgb_array",
                 on_close: Callable[[], None] | None = None):
        self.base_url = base_url.rstrip("/")
        self.domain = domain
        self.task_id = task_id
        self.encoding = encoding
        self.side_channels = tuple(side_channels)
        self.render_mode = render_mode
        self._volatile = declarations.declaration(domain).volatile_info
        self._on_close = on_close
        self._http = HttpTransport(self.base_url, protocol.headers(token), timeout)
        self.session_id: str | None = None
        self.last_observation: Observation | None = None
        try:
            resp = self._http.request("POST", "/v1/sessions",
                                      protocol.create_body(self.side_channels, env_options, task_id))
        except ServerError as err:
            self._http.close()
            raise ServerError(f"cannot reach the env server at {self.base_url}: {err}") from err
        try:
            protocol.raise_for_error(resp)  # an unknown task or bad options: nothing was created
        except BaseException:
            self._http.close()
            raise
        created = resp.json()
        self.session_id = created["session_id"]
        # Fixed here, before any reset: the server answered the screen of this env's task.
        self.screen_size = tuple(created["screen_size"])
        self.observation_space = observation_space(self.screen_size, self.side_channels)
        self.action_space = action_space(protocol.action_set_named(created["action_set"], domain), self.screen_size)

    # ---- gymnasium API -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        unknown = set(options) - {"task_id"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; the only option is 'task_id'")
        task_id = options.get("task_id", self.task_id)
        resp = self._post(f"/v1/sessions/{self.session_id}/reset",
                          protocol.reset_body(task_id, protocol.episode_seed(seed, self.np_random), self.encoding))
        obs, meta = protocol.decode_frame(resp)
        self.last_observation = obs
        fit_screen(self, obs)
        return observation_to_dict(obs, self.side_channels), gym_info(meta.info, self._volatile)

    def step(self, action: str | ActionModel | dict):
        resp = self._post(f"/v1/sessions/{self.session_id}/step", protocol.step_body(action, self.encoding))
        obs, meta = protocol.decode_frame(resp)
        self.last_observation = obs
        fit_screen(self, obs)
        info = gym_info(meta.info, self._volatile)
        return observation_to_dict(obs, self.side_channels), meta.reward, meta.terminated, meta.truncated, info

    def render(self):
        return None if self.last_observation is None else self.last_observation.screenshot

    def close(self) -> None:
        if self.session_id is not None:
            try:
                self._http.request("DELETE", f"/v1/sessions/{self.session_id}")
            except ServerError:
                pass  # the server is gone already
            self.session_id = None
        self._http.close()
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close()
        super().close()

    # ---- beyond gymnasium ------------------------------------------------------------------------
    def evaluate(self) -> float:
        resp = self._post(f"/v1/sessions/{self.session_id}/evaluate", {})
        protocol.raise_for_error(resp)
        return float(resp.json()["score"])

    def oracle_action(self) -> dict | None:
        """The task oracle's next action (a JSON action), for scripted test agents."""
        resp = self._post(f"/v1/sessions/{self.session_id}/oracle", {})
        protocol.raise_for_error(resp)
        return resp.json()["action"]

    def _post(self, path: str, body: dict) -> HttpResponse:
        if self.session_id is None:
            raise ServerError("this client is closed")
        return self._http.request("POST", path, body)
