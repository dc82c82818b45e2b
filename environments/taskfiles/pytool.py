"""Pytool tasks in task files: a question (optionally about an image beside the task file) whose ``done``
answer is checked against the file's value by one of the answer rules of ``pytool/answers.py``.

The expected value stays in the server process (``env.ground_truth``); the sandboxed code sees only the
image, at ``env.task_image_path``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mintgym.env.core import Environment, Task
from mintgym.env.taskfiles import DeclaredOracle, TaskEntry, TaskSource
from mintgym.environments.pytool.answers import parse_number, parse_point, parse_word

if TYPE_CHECKING:
    import random


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NumberScorer(_Strict):
    """The answer holds exactly one number, within ``tolerance`` of ``value``."""

    type: Literal["number"]
    value: float
    tolerance: float = Field(0.0, ge=0)

    def score(self, answer: str | None) -> bool:
        got = parse_number(answer)
        return got is not None and abs(got - self.value) <= self.tolerance


class PointScorer(_Strict):
    """The answer is one (x, y) point within ``tolerance`` pixels of ``value``."""

    type: Literal["point"]
    value: tuple[float, float]
    tolerance: float = Field(0.0, ge=0)

    def score(self, answer: str | None) -> bool:
        got = parse_point(answer)
        return got is not None and math.dist(got, self.value) <= self.tolerance


class WordScorer(_Strict):
    """The answer names exactly one of ``choices`` (whole words, any case), and it is ``value``."""

    type: Literal["word"]
    value: str
    choices: tuple[str, ...] = Field(min_length=2)

    @model_validator(mode="after")
    def _value_is_a_choice(self):
        if self.value.lower() not in {c.lower() for c in self.choices}:
            raise ValueError(f"value {self.value!r} is not one of the choices")
        return self

    def score(self, answer: str | None) -> bool:
        got = parse_word(answer, self.choices)
        return got is not None and got.lower() == self.value.lower()


class TextScorer(_Strict):
    """The whole answer equals ``value`` (surrounding white space ignored; case too unless ``case_sensitive``)."""

    type: Literal["text"]
    value: str
    case_sensitive: bool = False

    def score(self, answer: str | None) -> bool:
        if answer is None:
            return False
        got, want = answer.strip(), self.value.strip()
        return got == want if self.case_sensitive else got.lower() == want.lower()


Scorer = Annotated[NumberScorer | PointScorer | WordScorer | TextScorer, Field(discriminator="type")]


class PytoolTaskEntry(TaskEntry):
    domain: Literal["pytool"]
    scorer: Scorer
    image: str | None = Field(None, description="an image beside the task file, shown and given to the sandbox")

    helpers: ClassVar[dict] = {}

    def referenced_files(self, source: TaskSource) -> list:
        return [source.resolve(self.image, "image", self.id)] if self.image else []

    def build(self, source: TaskSource, oracle) -> Task:
        image = str(source.resolve(self.image, "image", self.id)) if self.image else None
        return FilePytoolTask(id=self.id, instruction=self.instruction, max_steps=self.max_steps,
                              family=self.family or self.id.rsplit("/", 1)[0], tags=self.tags, scorer=self.scorer,
                              image=image, steps=oracle)


@dataclass
class FilePytoolTask(DeclaredOracle, Task):
    """A pytool question from a task file, scored from the ``done`` answer."""

    domain: ClassVar[str] = "pytool"
    scorer: Any = None
    image: str | None = None
    steps: list | None = None

    async def setup(self, env: Environment, rng: random.Random) -> str:
        if self.image:
            from PIL import Image

            with Image.open(self.image) as img:
                env.set_task_image(img.convert("RGB"))
        env.ground_truth = {"scorer": self.scorer.model_dump(mode="json")}
        where = f" The image is at {env.task_image_path} inside the Python sandbox." if self.image else ""
        return f"{self.instruction}{where} Run code with python(code=...) and finish with done(answer=...)."

    async def evaluate(self, env: Environment) -> float:
        if not getattr(env, "ground_truth", None):
            return 0.0
        return 1.0 if self.scorer.score(env.answer) else 0.0
