"""The pytool task pack: 40 seedable visual tasks in 5 families, generated with PIL.

Ids are ``pytool/<family>-<index>``; each index is a distinct generator configuration and the reset
seed picks the instance (same seed, same image and answer). Scores come from the generator's ground
truth against the ``done`` answer: exact for counts and colour names, a tolerance for chart values,
a pixel distance for coordinates. Each task's oracle runs a real numpy analysis of the image in the
sandbox and answers what it printed.
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass
from typing import ClassVar

from mintgym.action_spaces import Done, Python
from mintgym.env.core import Environment, Task
from mintgym.environments.pytool import generators as G
from mintgym.environments.pytool.answers import parse_number, parse_point, parse_word

_GENERIC = {
    "count-shapes": "Count the shapes of a colour in the image.",
    "bar-chart": "Read the value of one bar of a bar chart.",
    "table-sum": "Sum one column of a table shown as an image.",
    "locate-marker": "Give the pixel coordinates of the marked shape.",
    "largest-area": "Name the colour of the largest or smallest shape.",
}


@dataclass
class PytoolTask(Task):
    """One generator configuration of a family; ``setup`` draws an instance from the seed."""

    index: int = 0

    domain: ClassVar[str] = "pytool"

    def _generate(self, env: Environment, rng: random.Random) -> G.Instance:
        generate, _ = G.FAMILIES[self.family]
        instance_rng = random.Random(f"{self.id}:{rng.getrandbits(64)}")
        return generate(self.index, instance_rng, env.task_image_path)

    def unavailable(self) -> str | None:
        if self.family == "table-sum" and not os.path.exists(G.MONO_FONT):
            return f"needs the DejaVu Sans Mono font at {G.MONO_FONT} (Debian package fonts-dejavu-core)"
        return None

    async def setup(self, env: Environment, rng: random.Random) -> str:
        instance = self._generate(env, rng)
        env.set_task_image(instance.image)
        env.ground_truth = {"family": self.family, "truth": instance.truth, "tolerance": instance.tolerance,
                            "solution": instance.solution}
        return (f"{instance.instruction} The image is at {env.task_image_path} inside the Python sandbox; "
                "run code with python(code=...) and finish with done(answer=...).")

    async def evaluate(self, env: Environment) -> float:
        state = getattr(env, "ground_truth", None)
        if not state:
            return 0.0
        return score(self.family, state["truth"], env.answer, state.get("tolerance", 0.0))

    async def oracle(self, env: Environment):
        yield Python(code=env.ground_truth["solution"])
        result = env.last_result
        answer = result.output.strip().splitlines()[-1] if result is not None and result.ok and result.output.strip() \
            else None
        yield Done(answer=answer)


def score(family: str, truth, answer: str | None, tolerance: float = 0.0) -> float:
    """1.0 when ``answer`` matches ``truth`` for this family's rule, else 0.0."""
    if answer is None:
        return 0.0
    if family in ("count-shapes", "table-sum"):
        value = parse_number(answer)
        return 1.0 if value is not None and value == truth else 0.0
    if family == "bar-chart":
        value = parse_number(answer)
        return 1.0 if value is not None and abs(value - truth) <= max(tolerance, 0.5) else 0.0
    if family == "locate-marker":
        point = parse_point(answer)
        if point is None:
            return 0.0
        return 1.0 if math.dist(point, truth) <= G.LOCATE_TOLERANCE else 0.0
    if family == "largest-area":
        return 1.0 if parse_word(answer, tuple(G.PALETTE)) == truth else 0.0
    raise ValueError(f"unknown pytool family {family!r}")


def all_tasks() -> list[PytoolTask]:
    """Every pytool task: 8 configurations of each of the 5 families."""
    found = []
    for family, (_, count) in G.FAMILIES.items():
        for index in range(count):
            found.append(PytoolTask(id=f"pytool/{family}-{index}", instruction=_GENERIC[family], max_steps=10,
                                    family=family, tags=("visual", "python"), index=index))
    return found
