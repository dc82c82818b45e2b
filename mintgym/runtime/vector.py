"""Layer 3: a gymnasium vector env over N sessions of one task on one env server, stepped in one request.

``MintVectorEnv("miniwob/click-test", 8)`` (or ``gymnasium.make_vec("mintgym/miniwob.click-test", 8)``) starts one env
server (or uses ``base_url=``), opens N sessions on it, and sends each ``step`` as one ``POST /v1/batch``: the server
steps the N sessions concurrently and answers every frame in one batch envelope (:mod:`mintgym.wire`). A
``gymnasium.vector.SyncVectorEnv`` over ``mintgym.make`` makes N round trips per step instead
(``benchmarks/vector_env.py`` compares them).

Autoreset follows gymnasium 1.x (``metadata["autoreset_mode"]``, chosen with ``autoreset_mode=``):

* ``NEXT_STEP`` (the default): the step after a sub-env's episode ended resets it (its action is ignored; reward
  0, not terminated, not truncated, the reset's info) -- in the same batch request as the others' steps;
* ``SAME_STEP``: an ended sub-env is reset within the step that ended it (a second batch request, only for the
  ended ones), its last observation and info in ``info["final_obs"]`` and ``info["final_info"]``;
* ``DISABLED``: nothing is reset; call ``reset(options={"reset_mask": mask})``.

Observations are batched like SyncVectorEnv's (``screenshot``: (N, H, W, 3) uint8; text fields: tuples), infos
with gymnasium's ``_key`` masks; actions are a sequence of N actions (text, dicts or typed actions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from mintgym.action_spaces import ActionModel
from mintgym.client import protocol
from mintgym.client.transport import HttpTransport
from mintgym.env import declarations
from mintgym.errors import ServerError
from mintgym.runtime.make import resolve_runnable, serve
from mintgym.spaces import action_space, gym_info, observation_space, observation_to_dict
from mintgym.types import Observation
from mintgym.wire import FrameMeta


class MintVectorEnv(VectorEnv):
    """N sessions of one task on one env server; each ``step`` and ``reset`` is one batch request."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"]}

    def __init__(self, task_id: str, num_envs: int, *, backend: str = "local", base_url: str | None = None,
                 token: str | None = None, encoding: str | None = None, side_channels: tuple[str, ...] = (),
                 env_options: dict | None = None, host_options: dict | None = None,
                 backend_options: dict | None = None, ready_timeout: float = 180.0, timeout: float = 120.0,
                 max_episode_steps: int | None = None, render_mode: str | None = "rgb_array",
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP):
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs is a positive integer, got {num_envs!r}")
        if backend == "inprocess":
            raise ValueError("a vector env batches its steps on an env server: use backend 'local', 'docker' or "
                             "'ray', or base_url=")
        if max_episode_steps is not None and max_episode_steps < 1:
            raise ValueError(f"max_episode_steps is at least 1, got {max_episode_steps}")
        self.domain, task = resolve_runnable(task_id, backend, base_url)
        if task is None:
            raise ValueError(f"{task_id!r} is a domain; a vector env runs one task "
                             f"(e.g. '{self.domain}/<pack>/<name>')")
        self.task_id = task.id
        self.num_envs = num_envs
        self.side_channels = tuple(side_channels)
        self.render_mode = render_mode
        self._volatile = declarations.declaration(self.domain).volatile_info
        self.max_episode_steps = max_episode_steps
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.session_ids: list[str] = []
        self._http: HttpTransport | None = None
        self._served = serve(self.domain, backend, base_url=base_url, token=token, host_options=host_options,
                             backend_options=backend_options, ready_timeout=ready_timeout)
        self.encoding = encoding or self._served.encoding
        self._http = HttpTransport(self._served.base_url, protocol.headers(self._served.token), timeout)
        try:
            created = [self._create(env_options) for _ in range(num_envs)]
        except BaseException:
            self.close()
            raise
        self.screen_size = tuple(created[0]["screen_size"])
        self.single_observation_space = observation_space(self.screen_size, self.side_channels)
        self.single_action_space = action_space(protocol.action_set_named(created[0]["action_set"], self.domain),
                                                self.screen_size)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.last_observations: list[Observation | None] = [None] * num_envs
        self._observations = create_empty_array(self.single_observation_space, num_envs)
        self._ended = np.zeros(num_envs, dtype=np.bool_)
        self._rngs = [seeding.np_random()[0] for _ in range(num_envs)]

    def _create(self, env_options: dict | None) -> dict:
        resp = self._http.request("POST", "/v1/sessions",
                                  protocol.create_body(self.side_channels, env_options, self.task_id))
        protocol.raise_for_error(resp)
        created = resp.json()
        self.session_ids.append(created["session_id"])
        return created

    # ---- gymnasium API -------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None):
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"unknown reset options {sorted(options)}; the only option is 'reset_mask'")
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"{len(seeds)} seeds for {self.num_envs} envs; give one per env, an int or None")
        if mask is None:
            mask = np.ones(self.num_envs, dtype=np.bool_)
        elif not (isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.shape == (self.num_envs,)
                  and mask.any()):
            raise ValueError(f"options['reset_mask'] is a bool numpy array of shape ({self.num_envs},) with a True")
        if any(o is None and not reset for o, reset in zip(self.last_observations, mask, strict=True)):
            raise ValueError("the first reset() resets every env: a reset_mask only resets some of them again")
        chosen = [int(i) for i in np.flatnonzero(mask)]
        for i in chosen:
            if seeds[i] is not None:
                self._rngs[i] = seeding.np_random(seeds[i])[0]
        frames = self._batch({i: self._reset_body(i, seeds[i]) for i in chosen})
        infos: dict[str, Any] = {}
        for i, (obs, meta) in zip(chosen, frames, strict=True):
            self._set_observation(i, obs)
            infos = self._add_info(infos, gym_info(meta.info, self._volatile), i)
        self._ended[mask] = False
        return self._batched_observations(), infos

    def step(self, actions: Sequence[str | ActionModel | dict]):
        if any(o is None for o in self.last_observations):
            raise ValueError("call reset() before step()")
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"{len(actions)} actions for {self.num_envs} envs; give one per env")
        resetting = self._ended.copy() if self.autoreset_mode == AutoresetMode.NEXT_STEP else np.zeros_like(self._ended)
        if self.autoreset_mode == AutoresetMode.DISABLED and self._ended.any():
            ended = [int(i) for i in np.flatnonzero(self._ended)]
            raise ValueError(f"envs {ended} ended and autoreset is DISABLED: reset them with options['reset_mask']")
        bodies = {i: (self._reset_body(i, None) if resetting[i] else self._step_body(actions[i]))
                  for i in range(self.num_envs)}
        frames = self._batch(bodies)
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        env_infos = []
        for i, (obs, meta) in enumerate(frames):
            self._set_observation(i, obs)
            if not resetting[i]:
                rewards[i], terminations[i], truncations[i] = meta.reward, meta.terminated, meta.truncated
            env_infos.append(gym_info(meta.info, self._volatile))
        self._ended = terminations | truncations
        infos: dict[str, Any] = {}
        if self.autoreset_mode == AutoresetMode.SAME_STEP and self._ended.any():
            # The ended sub-envs start over within this step: one more request, for them alone.
            ended = [int(i) for i in np.flatnonzero(self._ended)]
            finals = {i: observation_to_dict(self.last_observations[i], self.side_channels) for i in ended}
            for i, (obs, meta) in zip(ended, self._batch({i: self._reset_body(i, None) for i in ended}), strict=True):
                self._set_observation(i, obs)
                infos = self._add_info(infos, {"final_obs": finals[i], "final_info": env_infos[i]}, i)
                env_infos[i] = gym_info(meta.info, self._volatile)
            self._ended[:] = False
        for i, info in enumerate(env_infos):
            infos = self._add_info(infos, info, i)
        return self._batched_observations(), rewards, terminations, truncations, infos

    def render(self) -> tuple[np.ndarray | None, ...] | None:
        if self.render_mode is None:
            return None
        return tuple(None if o is None else o.screenshot for o in self.last_observations)

    def close_extras(self, **kwargs: Any) -> None:
        if self._http is None:  # the server did not start
            return
        for session_id in self.session_ids:
            try:
                self._http.request("DELETE", f"/v1/sessions/{session_id}")
            except ServerError:
                break  # the server is gone already
        self.session_ids = []
        self._http.close()
        self._served.stop()

    # ---- one request for all -------------------------------------------------------------------
    def _reset_body(self, i: int, seed: int | None) -> dict:
        """Env ``i``'s reset: with ``seed``, else the next seed of its generator (seeded by its last seed)."""
        seed = protocol.episode_seed(seed, self._rngs[i])
        return {"reset": protocol.reset_body(self.task_id, seed, self.encoding, self.max_episode_steps)}

    def _step_body(self, action: str | ActionModel | dict) -> dict:
        return {"step": protocol.step_body(action, self.encoding, invalid="count")}

    def _batch(self, bodies: dict[int, dict]) -> list[tuple[Observation, FrameMeta]]:
        """Send one batch request (index -> reset or step body); the frames, in index order."""
        if self.closed:
            raise ServerError("this vector env is closed")
        items = [{"session_id": self.session_ids[i], **body} for i, body in sorted(bodies.items())]
        return protocol.decode_batch(self._http.request("POST", "/v1/batch", {"items": items}))

    def _set_observation(self, i: int, obs: Observation) -> None:
        if tuple(obs.screen_size) != self.screen_size:
            raise ValueError(f"env {i} answered a {obs.screen_size[0]}x{obs.screen_size[1]} frame; this vector env's "
                             f"observation space is for {self.screen_size[0]}x{self.screen_size[1]}")
        self.last_observations[i] = obs

    def _batched_observations(self):
        singles = [observation_to_dict(o, self.side_channels) for o in self.last_observations]
        self._observations = concatenate(self.single_observation_space, singles, self._observations)
        return {k: (np.copy(v) if isinstance(v, np.ndarray) else v) for k, v in self._observations.items()}

