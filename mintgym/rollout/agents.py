"""Layer 4: the agent a rollout worker gives each episode, by kind (``answer``, ``vlm``), over its engine.

The same function makes the students of imitation data (:func:`agent_factory`), so a warm start and
``mintgym export`` build their prompts exactly as the RL episodes do. Benchmarks add a simulated env-step
time (:class:`SimulatedLatency`).
"""

from __future__ import annotations

import asyncio
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
    """A new ``kind`` agent with ``options`` sampling from ``engine`` (``max_new_tokens``, ``temperature``
    unless the options set them, or, for ``vlm``, its ``sampling``); ``simulated_step_seconds`` (mean,
    sigma) wraps it in :class:`SimulatedLatency` drawing from ``rng``."""
    if kind == "answer":
        # Wired by name so this layer never imports mintgym.agents at module level.
        answer = importlib.import_module("mintgym.agents.answer")
        agent: Agent = answer.AnswerAgent(engine, **{"max_new_tokens": max_new_tokens, "temperature": temperature,
                                                     **options})
    elif kind == "vlm":
        vlm = importlib.import_module("mintgym.agents.vlm")
        from mintgym.inference import SamplingParams

        options = dict(options)
        if "sampling" not in options:  # the rollout's sampling, where the options do not set their own
            options["sampling"] = SamplingParams(max_new_tokens=options.pop("max_new_tokens", max_new_tokens),
                                                 temperature=options.pop("temperature", temperature),
                                                 top_p=options.pop("top_p", 1.0))
        options.setdefault("retries", 0)
        options.setdefault("seeded", False)  # the G episodes of a group share a task seed: they must sample apart
        agent = vlm.VLMAgent(engine=engine, **options)
    else:
        raise ValueError(f"unknown rollout agent {kind!r} (answer, vlm)")
    if simulated_step_seconds:
        agent = SimulatedLatency(agent, *simulated_step_seconds, rng or random.Random())
    return agent


def agent_factory(kind: str, options: dict[str, Any], engine: InferenceEngine | None,
                  **sampling: Any) -> Callable[[], Agent]:
    """New agents of ``kind`` with ``options`` over ``engine``, made as a rollout worker makes them
    (``sampling``: ``max_new_tokens``, ``temperature``); the students of imitation data."""
    return lambda: make_episode_agent(kind, options, engine, **sampling)
