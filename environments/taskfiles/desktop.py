"""Desktop tasks in task files, in OSWorld's own format: the task's ``config`` steps and ``evaluator``
(getters, metric functions, options) are OSWorld's, run and scored by the desktop domain's OSWorld pack
(``desktop/osworld``), under a MintGym id.

Either the OSWorld fields sit in the task itself (a task file may simply be an OSWorld task JSON whose
``id`` is a MintGym id), or ``osworld`` names an OSWorld task JSON beside the task file. Files the config
steps name with relative paths are found beside the task file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from mintgym.env.taskfiles import TaskEntry, TaskFileError, TaskSource, run_oracle
from mintgym.environments.desktop.osworld.getters import GETTERS
from mintgym.environments.desktop.osworld.loader import OSWorldFormatError, parse_task
from mintgym.environments.desktop.osworld.steps import SUPPORTED_STEPS
from mintgym.environments.desktop.osworld.task import OSWorldTask

#: OSWorld task fields this format reads or tolerates (its own bookkeeping).
OSWORLD_FIELDS = ("snapshot", "source", "related_apps", "proxy", "config", "evaluator", "trajectory",
                  "possibility_of_env_change", "fixed_ip")


class DesktopTaskEntry(TaskEntry):
    domain: Literal["desktop"]
    instruction: str = Field("", description="defaults to the OSWorld task's own instruction")
    max_steps: int = Field(30, ge=1, le=10_000)
    osworld: str | None = Field(None, description="an OSWorld task JSON beside the task file")
    snapshot: str = ""
    source: str = ""
    related_apps: list[str] = Field(default_factory=list)
    proxy: bool = False
    config: list[dict[str, Any]] = Field(default_factory=list)
    evaluator: dict[str, Any] | None = None
    trajectory: Any = None
    possibility_of_env_change: Any = None
    fixed_ip: Any = None

    helpers: ClassVar[dict] = {}

    @model_validator(mode="after")
    def _one_source(self):
        if (self.osworld is None) == (self.evaluator is None):
            raise ValueError("give the OSWorld 'evaluator' (and 'config') here, or 'osworld': a task JSON beside "
                             "this file, not both")
        return self

    def referenced_files(self, source: TaskSource) -> list:
        return [source.resolve(self.osworld, "osworld", self.id)] if self.osworld else []

    def _osworld_object(self, source: TaskSource) -> tuple[dict, Any]:
        if self.osworld is None:
            data = {k: getattr(self, k) for k in OSWORLD_FIELDS if getattr(self, k) is not None}
            return {**data, "instruction": self.instruction}, source.file
        path = source.resolve(self.osworld, "osworld", self.id)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise TaskFileError(f"{source.file}: task {self.id!r}: field 'osworld': cannot read {path} "
                                f"({err})") from None
        if not isinstance(data, dict):
            raise TaskFileError(f"{source.file}: task {self.id!r}: field 'osworld': {path} holds no JSON object")
        if self.instruction:
            data["instruction"] = self.instruction
        return data, path

    def build(self, source: TaskSource, oracle) -> OSWorldTask:
        data, path = self._osworld_object(source)
        key = self.id.replace("/", "__")  # OSWorld's id: names this task's cached files
        try:
            spec = parse_task({**data, "id": key}, path, app=self.id.split("/")[1])
        except OSWorldFormatError as err:
            raise TaskFileError(f"{source.file}: task {self.id!r}: {str(err).split(': ', 1)[-1]}") from None
        if not spec.instruction:
            raise TaskFileError(f"{source.file}: task {self.id!r}: field 'instruction': missing")
        for where, steps in (("config", spec.config), ("evaluator.postconfig", spec.evaluator.postconfig)):
            for i, step in enumerate(steps):
                if step.type not in SUPPORTED_STEPS:
                    raise TaskFileError(f"{source.file}: task {self.id!r}: field '{where}[{i}].type': {step.type!r} "
                                        f"is not a supported step ({', '.join(SUPPORTED_STEPS)})")
        for i, result in enumerate(spec.evaluator.results):
            if result is not None and result.get("type") not in GETTERS:
                raise TaskFileError(f"{source.file}: task {self.id!r}: field 'evaluator.result[{i}].type': "
                                    f"{result.get('type')!r} is not a getter ({', '.join(sorted(GETTERS))})")
        return FileDesktopTask(id=self.id, instruction=spec.instruction, max_steps=self.max_steps,
                               family=self.family or self.id.rsplit("/", 1)[0], tags=self.tags or ("osworld",),
                               spec=spec, steps=oracle)


@dataclass
class FileDesktopTask(OSWorldTask):
    """An OSWorld-format desktop task from a task file; its oracle is the file's, not OSWorld's table."""

    steps: list | None = None

    def has_oracle(self) -> bool:
        return self.steps is not None or self.spec.evaluator.infeasible

    def oracle(self, env):
        if self.steps is None:
            return super().oracle(env)
        return run_oracle(self.steps, env)
