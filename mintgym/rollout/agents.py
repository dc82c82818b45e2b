"""Layer 4: the agent a rollout worker gives each episode, by registered kind (``answer``, ``vlm``, yours), over
its engine.

The same function makes the students of imitation data (:func:`agent_factory`), so a warm start and
``mintgym export`` build their prompts exactly as the RL episodes do. Benchmarks add a simulated env-step
time (:class:`SimulatedLatency`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import math
import random
from collections.abc import Callable
from typing import Any

from mintgym.inference import InferenceEngine
from mintgym.policy import Agent, AgentContext, AgentStep
from mintgym.types import Observation


class SimulatedLatency:
    """Waits a lognormal time before each action, standing in for a slow environment step (benchmarks)."""

    def __init__(self, agent: Agent, mean: float, sigma: float, rng: random.Random):
        self.agent, self.sigma, self.rng = agent, sigma, rng
        self.mu = math.log(max(mean, 1e-6)) - sigma * sigma / 2  # so the mean is ``mean``
        self.name = agent.name

    async def start(self, context: AgentContext) -> None:
        await self.agent.start(context)

    async def act(self, observation: Observation) -> AgentStep:
        step = await self.agent.act(observation)
        await asyncio.sleep(self.rng.lognormvariate(self.mu, self.sigma))
        return step


def make_episode_agent(kind: str, options: dict[str, Any], engine: InferenceEngine | None, *,
                       max_new_tokens: int = 16, temperature: float = 1.0,
                       simulated_step_seconds: tuple[float, float] | None = None,
                       rng: random.Random | None = None) -> Agent:
    """A new agent of the registered ``kind`` (:func:`mintgym.agents.make_agent`, the one agent factory) with
    ``options`` sampling from ``engine``: the agent's ``training_defaults`` and the rollout's ``max_new_tokens``
    and ``temperature`` unless the options set them (or set a whole ``sampling``); ``simulated_step_seconds``
    (mean, sigma) wraps it in :class:`SimulatedLatency` drawing from ``rng``."""
    agents = importlib.import_module("mintgym.agents")  # by name: this layer never imports agents at module level
    factory = agents.agent_factory(kind)
    options = {**getattr(factory, "training_defaults", {}), **options}
    if "sampling" not in options:  # the rollout's sampling, where the options do not set their own
        options = {"max_new_tokens": max_new_tokens, "temperature": temperature, **options}
    agent: Agent = agents.make_agent(kind, engine=engine, **options)
    if simulated_step_seconds:
        agent = SimulatedLatency(agent, *simulated_step_seconds, rng or random.Random())
    return agent


def with_temperature(options: dict[str, Any], temperature: float) -> dict[str, Any]:
    """Agent options sampling at ``temperature`` whatever they set themselves (``temperature``, or a vlm
    agent's ``sampling``): an evaluation's temperature is the one its results report."""
    options = {k: v for k, v in options.items() if k != "temperature"}
    if isinstance(options.get("sampling"), dict):
        options["sampling"] = {**options["sampling"], "temperature": temperature}
    elif options.get("sampling") is not None:
        options["sampling"] = dataclasses.replace(options["sampling"], temperature=temperature)
    return options


def agent_factory(kind: str, options: dict[str, Any], engine: InferenceEngine | None,
                  **sampling: Any) -> Callable[[], Agent]:
    """New agents of ``kind`` with ``options`` over ``engine``, made as a rollout worker makes them
    (``sampling``: ``max_new_tokens``, ``temperature``); the students of imitation data."""
    return lambda: make_episode_agent(kind, options, engine, **sampling)
