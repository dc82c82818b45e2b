"""Agents that need no model: ``scripted`` plays the task's oracle, ``mistaken-oracle`` plays it with
deliberate wrong answers (an imperfect teacher), ``random`` acts at random.

The scripted agent proves the reward path end to end: the oracle's actions are ordinary shared actions,
sent through the env server's step like any model's.
"""

from __future__ import annotations

import random

from mintgym.action_spaces import ACTION_TYPES, ActionModel, Done, render_action
from mintgym.policy import AgentContext, AgentStep
from mintgym.types import Observation


class ScriptedAgent:
    """Plays the task's oracle: asks the env server for the next scripted action each step.

    Tasks that ship no oracle are skipped by evaluations (``needs_oracle``) and reported as "no oracle".
    """

    name = "scripted"
    needs_oracle = True

    def __init__(self) -> None:
        self.context: AgentContext | None = None

    async def start(self, context: AgentContext) -> None:
        if context.oracle is None:
            raise ValueError("the scripted agent needs the task oracle; this rollout does not provide one")
        self.context = context

    async def act(self, observation: Observation) -> AgentStep:
        assert self.context is not None and self.context.oracle is not None, "start() first"
        data = await self.context.oracle()
        if data is None:  # the oracle has nothing left to do: end the episode
            return AgentStep(Done(), text=render_action(Done()))
        action = self.context.action_set.build(data)
        return AgentStep(action, text=render_action(action))


class MistakenOracle(ScriptedAgent):
    """The task's oracle as an imperfect teacher, its mistakes drawn per episode from the episode's seed (the
    same seed, the same mistakes); everything else is the oracle's:

    - ``answers``: where the oracle answers a key (``done(answer=...)``), it answers that key's value instead,
      with probability ``rate``;
    - ``order_rate``: with this probability it plays the oracle's first two actions the other way round (both
      asked of the oracle before the first is played: for tasks whose second action does not depend on the
      first, such as pressing two buttons in a given order).

    A warm start cloning it (``warm_start.demonstrator: mistaken-oracle`` with ``successful_only: false``)
    inherits its confusions; RL has to undo them.
    """

    name = "mistaken-oracle"

    def __init__(self, answers: dict[str, str] | None = None, rate: float = 1.0, order_rate: float = 0.0) -> None:
        super().__init__()
        for name, value in (("rate", rate), ("order_rate", order_rate)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"mistaken-oracle: {name} is a probability in [0, 1], got {value}")
        if not answers and not order_rate:
            raise ValueError("mistaken-oracle needs answers: {the oracle's answer: the one given instead}, "
                             "or an order_rate")
        self.answers = {str(k): str(v) for k, v in (answers or {}).items()}
        self.rate = rate
        self.order_rate = order_rate
        self.rng = random.Random()
        #: The oracle's actions asked ahead and still to be played (the first of a swapped pair).
        self.held: list[AgentStep] = []
        self.swap_order = False
        self.acted = 0

    async def start(self, context: AgentContext) -> None:
        await super().start(context)
        self.rng.seed(f"{context.task_id}/{context.seed}")
        self.held, self.acted = [], 0
        # drawn only when asked for, so an answers-only teacher's draws stay as they were
        self.swap_order = bool(self.order_rate) and self.rng.random() < self.order_rate

    async def act(self, observation: Observation) -> AgentStep:
        self.acted += 1
        step = self.held.pop(0) if self.held else await super().act(observation)
        if self.acted == 1 and self.swap_order and not isinstance(step.action, Done):
            second = await super().act(observation)
            if isinstance(second.action, Done):
                self.held.append(second)  # one action only: nothing to swap
            else:
                self.held.append(step)
                step = second
        return self.answered(step)

    def answered(self, step: AgentStep) -> AgentStep:
        """``step``, its answer swapped as ``answers`` and ``rate`` say (held steps too: one rule for every one)."""
        action = step.action
        if isinstance(action, Done) and action.answer in self.answers and self.rng.random() < self.rate:
            action = action.model_copy(update={"answer": self.answers[action.answer]})
            return AgentStep(action, text=render_action(action))
        return step


class RandomAgent:
    """Uniformly random actions of the domain's set, on screen; a floor for comparisons and fuzzing."""

    name = "random"

    def __init__(self, seed: int | None = None, done_probability: float = 0.05):
        self.rng = random.Random(seed)
        self.done_probability = done_probability
        self.context: AgentContext | None = None

    async def start(self, context: AgentContext) -> None:
        self.context = context
        if context.seed is not None:
            self.rng.seed(context.seed)

    async def act(self, observation: Observation) -> AgentStep:
        assert self.context is not None, "start() first"
        if self.rng.random() < self.done_probability:
            return AgentStep(Done(success=False), text="done(success=False)")
        kinds = [k for k in self.context.action_set.type_names if k != "done"]
        kind = self.rng.choice(kinds)
        action = random_action(ACTION_TYPES[kind], observation.screen_size, self.rng)
        return AgentStep(action, text=kind)


def random_action(cls: type[ActionModel], screen_size: tuple[int, int], rng: random.Random) -> ActionModel:
    width, height = screen_size
    values: dict = {}
    for fx, fy in cls.points:
        values[fx], values[fy] = rng.randrange(width), rng.randrange(height)
    kind = cls.model_fields["type"].default
    if kind == "zoom":
        x1, y1 = rng.randrange(width - 1), rng.randrange(height - 1)
        values.update(x1=x1, y1=y1, x2=rng.randrange(x1 + 1, width), y2=rng.randrange(y1 + 1, height))
    extra = {
        "type": {"text": rng.choice(["hello", "42", "ok", "MintGym"])},
        "key": {"keys": [rng.choice(["enter", "tab", "escape", "backspace", "a"])]},
        "scroll": {"dy": rng.choice([-300, -100, 100, 300])},
        "wait": {"seconds": 0.1},
        "goto": {"url": "http://127.0.0.1/"},
        "python": {"code": rng.choice(["print(1 + 1)", "import numpy as np\nprint(np.arange(3))"])},
        "open_app": {"app": rng.choice(["Settings", "Clock"])},
        "long_press": {"duration": 0.5},
        "swipe": {"duration": 0.3},
    }.get(kind, {})
    values.update(extra)
    return cls(**values)
