"""OSWorldTask: an OSWorld task JSON as a MintGym desktop Task (setup = config steps, evaluate = evaluator)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import ClassVar

from mintgym.action_spaces import ActionModel
from mintgym.env.core import Environment, Task
from mintgym.environments.desktop.env import DesktopEnvironment
from mintgym.environments.desktop.osworld.availability import why_unavailable
from mintgym.environments.desktop.osworld.getters import GETTERS
from mintgym.environments.desktop.osworld.loader import OSWorldSpec
from mintgym.environments.desktop.osworld.scoring import Evaluation, evaluate, is_fail
from mintgym.environments.desktop.osworld.steps import localize, run_steps


def task_id(spec: OSWorldSpec) -> str:
    return f"osworld/{spec.app}/{spec.id}"


@dataclass
class OSWorldTask(Task):
    domain: ClassVar[str] = "desktop"
    spec: OSWorldSpec | None = field(default=None, repr=False)

    @classmethod
    def from_spec(cls, spec: OSWorldSpec, max_steps: int = 30) -> OSWorldTask:
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
        env.task_key = self.spec.id  # the file cache keeps this task's reference files under its id
        if self.reads_tree:
            await env.enable_accessibility()  # before the config steps start the apps whose tree is read
        await run_steps(env, self.spec.config, base=self.spec.path.parent, where="config", task_id=self.spec.id)
        return None

    async def evaluate(self, env: Environment) -> float:
        return (await self.evaluation(env)).score

    async def evaluation(self, env: Environment) -> Evaluation:
        """Score the session by OSWorld's ``DesktopEnv.evaluate`` rules (see :mod:`.scoring`), with details."""
        env = self._env(env)
        ev = self.spec.evaluator

        async def get(config: dict) -> object:
            return await GETTERS[config["type"]](env, localize(config, env))

        async def postconfig() -> None:
            await run_steps(env, ev.postconfig, base=self.spec.path.parent, where="evaluator.postconfig",
                            task_id=self.spec.id)

        return await evaluate(ev, last_action_failed=is_fail(env.claimed_success, env.answer), get=get,
                              postconfig=postconfig if ev.postconfig else None)

    @property
    def reads_tree(self) -> bool:
        """Whether a getter of the evaluator reads the desktop's accessibility tree."""
        from mintgym.environments.desktop.osworld.tree_getters import TREE_GETTERS

        ev = self.spec.evaluator
        return any(g is not None and g.get("type") in TREE_GETTERS for g in (*ev.results, *ev.expected))

    def has_oracle(self) -> bool:
        from mintgym.environments.desktop.osworld.oracles import ORACLES

        return self.spec.id in ORACLES or self.spec.evaluator.infeasible

    def oracle(self, env: Environment) -> AsyncIterator[ActionModel]:
        from mintgym.environments.desktop.osworld.oracles import ORACLES, report_infeasible

        if self.spec.evaluator.infeasible:
            return report_infeasible(self._env(env))
        if self.spec.id not in ORACLES:
            raise NotImplementedError(f"task {self.id!r} ships no oracle")
        return ORACLES[self.spec.id](self._env(env))


