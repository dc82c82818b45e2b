"""OSWorldTask: an OSWorld task JSON as a MintGym desktop Task (setup = config steps, evaluate = evaluator)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import AsyncIterator, ClassVar

from mintgym.action_spaces import ActionModel
from mintgym.env.core import Environment, Task
from mintgym.environments.desktop.env import DesktopEnvironment
from mintgym.evals.osworld.availability import why_unavailable
from mintgym.evals.osworld.getters import GETTERS
from mintgym.evals.osworld.loader import OSWorldSpec
from mintgym.evals.osworld.metrics import METRICS
from mintgym.evals.osworld.steps import localize, run_steps


def task_id(spec: OSWorldSpec) -> str:
    return f"osworld/{spec.app}/{spec.id}"


@dataclass
class OSWorldTask(Task):
    domain: ClassVar[str] = "desktop"
    spec: OSWorldSpec | None = field(default=None, repr=False)

    @classmethod
    def from_spec(cls, spec: OSWorldSpec, max_steps: int = 30) -> "OSWorldTask":
        return cls(id=task_id(spec), instruction=spec.instruction, max_steps=max_steps, family=f"osworld/{spec.app}",
                   tags=("osworld", spec.app, *spec.related_apps), spec=spec)

    def unavailable(self) -> str | None:
        return why_unavailable(self.spec)

    def _env(self, env: Environment) -> DesktopEnvironment:
        if not isinstance(env, DesktopEnvironment):
            raise TypeError(f"{self.id} runs on the desktop environment, not {type(env).__name__}")
        return env

    async def setup(self, env: Environment, rng: random.Random) -> str | None:
        env = self._env(env)
        text = str(self.spec.config) + str(self.spec.evaluator.results)
        if "pactl" in text or "pulseaudio" in text:
            await env.run("pulseaudio --start --exit-idle-time=-1", shell=True, timeout=30)
        await run_steps(env, self.spec.config, base=self.spec.path.parent, where="config")
        return None

    async def evaluate(self, env: Environment) -> float:
        env = self._env(env)
        ev = self.spec.evaluator
        if ev.infeasible:
            return 1.0 if env.answer is not None and "FAIL" in env.answer.upper() else 0.0
        await run_steps(env, ev.postconfig, base=self.spec.path.parent, where="evaluator.postconfig")
        scores = []
        for func, result, expected, options in zip(ev.funcs, ev.results, ev.expected, ev.options):
            result_value = await GETTERS[result["type"]](env, localize(result, env))
            metric = METRICS[func]
            if expected is None:
                score = metric(result_value, **options)
            else:
                expected_value = await GETTERS[expected["type"]](env, localize(expected, env))
                score = metric(result_value, expected_value, **options)
            score = float(score)
            if ev.conj == "and" and score == 0.0:
                return 0.0
            if ev.conj == "or" and score == 1.0:
                return 1.0
            scores.append(score)
        return sum(scores) / len(scores) if ev.conj == "and" else max(scores)

    def has_oracle(self) -> bool:
        from mintgym.evals.osworld.oracles import ORACLES

        return self.spec.id in ORACLES

    def oracle(self, env: Environment) -> AsyncIterator[ActionModel]:
        from mintgym.evals.osworld.oracles import ORACLES

        if self.spec.id not in ORACLES:
            raise NotImplementedError(f"task {self.id!r} ships no oracle")
        return ORACLES[self.spec.id](self._env(env))


