"""Layer 0: the contract between agents and the rollout loop.

An agent sees an :class:`~mintgym.types.Observation` and answers an :class:`AgentStep`: the action in
screen pixels (already converted from the model's coordinate frame), or the raw text it could not
parse. Token ids and logprobs, when the agent has them, go into the trajectory for training.
Agents never import environments; the rollout passes what they may use in :class:`AgentContext`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mintgym.action_spaces import ActionModel, ActionSet
from mintgym.types import Observation


@dataclass
class AgentStep:
    """One decision: a typed action, or the model text and why it failed to parse."""

    action: ActionModel | None
    text: str = ""
    error: str | None = None
    prompt_token_ids: list[int] | None = None
    response_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    policy_version: int | None = None
    #: Free-form extras recorded with the step (model name, latency, the resized frame size).
    extra: dict[str, Any] = field(default_factory=dict)
    #: The messages the agent sent its model for this decision, JSON-safe, with each image replaced by the
    #: ``frame_id`` of the observation it was made from (see ``StepRecord.messages``); None: no model prompt.
    messages: list[dict[str, Any]] | None = None


@dataclass
class AgentContext:
    """What the rollout gives an agent at the start of an episode."""

    task_id: str
    domain: str
    instruction: str
    action_set: ActionSet
    screen_size: tuple[int, int]
    max_steps: int
    seed: int | None = None
    #: The task oracle's next action (JSON) -- only scripted test agents use it.
    oracle: Callable[[], Awaitable[dict | None]] | None = None
    #: The line the domain declares about its screenshots for prompts (its env server reports it), or "".
    screen_hint: str = ""
    #: The observation channels the agent is given (:mod:`mintgym.observe`): ``screenshot`` (the pixels),
    #: ``som`` (marks drawn on them), ``a11y``, ``dom``, ``text`` (filled in each Observation). An agent not
    #: given ``screenshot`` or ``som`` must not use the pixels (they are still there, for the record).
    observe: tuple[str, ...] = ("screenshot",)


@runtime_checkable
class Agent(Protocol):
    name: str

    async def start(self, context: AgentContext) -> None:
        """Begin an episode (clear history)."""

    async def act(self, observation: Observation) -> AgentStep:
        """Choose the next action for this observation."""
