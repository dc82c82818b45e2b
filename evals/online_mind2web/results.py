"""Online-Mind2Web's task lists and its per-task result formats.

The task list (``Online_Mind2Web.json`` of ``osunlp/Online-Mind2Web``; the original April 2025 list and
the revised one, whose changed tasks carry date suffixes on their ids) is a JSON list of ``task_id``,
``confirmed_task``, ``website``, ``reference_length`` and ``level`` (easy, medium, hard).

A finished task is a folder ``<task_id>/`` with ``result.json`` and ``trajectory/``, in one of the two
formats the authors' ``src/run.py`` reads (OSU-NLP-Group/Online-Mind2Web@ccdeb0d6, ``auto_eval``):

- v1: ``task``, ``action_history`` (a list of action strings), optional ``thoughts`` and
  ``final_result_response``; the screenshots are every file of ``trajectory/``, ordered by the first number
  in its name (``0.png``, ``1.png``, ``10.png``).
- v2 (``"schema_version": "online-mind2web-v2"``): ``action_history`` is a list of steps ``{step,
  screenshot, url, action, action_status, thought}`` and ``agent_final_answer`` the answer; the judged
  actions are every step's ``action`` but the last one's (the agent's answer, not a factual action), the
  screenshots each step's ``screenshot`` under ``trajectory/``.

:func:`write_result` writes v1 from a MintGym trajectory; :func:`read_result` reads either as the judge
sees it.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from mintgym.evals.screenspot.data import read_json

LEVELS = ("easy", "medium", "hard")


@dataclass(frozen=True)
class OnlineTask:
    task_id: str
    task: str
    website: str
    level: str
    reference_length: int | None = None


def load_tasks(path: str | Path) -> dict[str, OnlineTask]:
    """The task list, by task id."""
    file = Path(path)
    data = read_json(file, "task list")
    if not isinstance(data, list):
        raise ValueError(f"{file}: the task list must be a JSON list")
    tasks = {}
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("task_id", "confirmed_task")):
            raise ValueError(f"{file}: item {i} needs string 'task_id' and 'confirmed_task'")
        level = str(item.get("level", "")).lower()
        if level not in LEVELS:
            raise ValueError(f"{file}: task {item['task_id']} has level {item.get('level')!r}, not one of {LEVELS}")
        tasks[item["task_id"]] = OnlineTask(item["task_id"], item["confirmed_task"], str(item.get("website", "")),
                                            level, item.get("reference_length"))
    return tasks


def write_result(out: str | Path, task: OnlineTask, trajectory_dir: str | Path) -> Path:
    """``out/<task_id>/`` in the official result format, from a trajectory recorded by MintGym."""
    from mintgym.action_spaces.parser import render_action
    from mintgym.trajectory.store import load_trajectory

    src = Path(trajectory_dir)
    traj = load_trajectory(src)
    folder = Path(out) / task.task_id
    shots = folder / "trajectory"
    if shots.exists():
        shutil.rmtree(shots)
    shots.mkdir(parents=True)
    history, thoughts, answer = [], [], ""
    frames = [s.screenshot for s in traj.steps] + ([traj.final_screenshot] if traj.final_screenshot else [])
    for i, rel in enumerate(frames):
        shutil.copyfile(src / rel, shots / f"{i}.png")
    for step in traj.steps:
        # Only factual actions: the authors' README asks that the agent's answer stay out of the history.
        if step.action is not None and step.action.get("type") == "done":
            answer = str(step.action.get("answer") or "")
        elif step.action is not None:
            history.append(render_action(step.action))
        thoughts.append(str(step.extra.get("thought") or step.text))
    result = {"task_id": task.task_id, "task": task.task, "final_result_response": answer,
              "action_history": history, "thoughts": thoughts}
    (folder / "result.json").write_text(json.dumps(result, indent=4))
    return folder


V2 = "online-mind2web-v2"


class ResultFolder(BaseModel):
    """One task's result as the authors' judge reads it; ``task_id`` is the folder's name, as in run.py."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    task: Any
    schema_version: Literal["v1", "v2"]
    #: The actions the judge lists (v2: all but the last step's).
    action_history: list[Any]
    screenshots: list[Path]


def _first_number(name: str, where: Path) -> int:
    found = re.findall(r"\d+", name)
    if not found:
        raise ValueError(f"{where / name}: the authors' judge orders trajectory files by the first number in "
                         f"their names, and this one has none")
    return int(found[0])


def read_result(folder: str | Path) -> ResultFolder:
    """A task folder in either format (src/run.py ``auto_eval``, lines 42-80); a one-line ``ValueError``
    where the authors' code would fail. Files with the same number are ordered by name (the authors' order
    is the file system's)."""
    folder = Path(folder)
    file = folder / "result.json"
    result = read_json(file, "result.json")
    if not isinstance(result, dict) or "task" not in result:
        raise ValueError(f"{file} lacks 'task'")
    trajectory = folder / "trajectory"
    if result.get("schema_version") == V2:
        steps = result.get("action_history")
        if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
            raise ValueError(f"{file}: a v2 action_history must be a list of step objects")
        missing = next((i for i, s in enumerate(steps) if "screenshot" not in s or
                        (i < len(steps) - 1 and "action" not in s)), None)
        if missing is not None:
            raise ValueError(f"{file}: step {missing} lacks 'screenshot' or 'action'")
        if not all(isinstance(s["screenshot"], str) for s in steps):
            raise ValueError(f"{file}: every v2 step's screenshot must be a file name")
        return ResultFolder(task_id=folder.name, task=result["task"], schema_version="v2",
                            action_history=[s["action"] for s in steps[:-1]],
                            screenshots=[trajectory / s["screenshot"] for s in steps])
    actions = result.get("action_history")
    if actions is None or isinstance(actions, (int, float, bool)):
        raise ValueError(f"{file} lacks a list 'action_history'")
    if not trajectory.is_dir():
        raise ValueError(f"{folder} has no trajectory/ folder of screenshots")
    names = sorted((p.name for p in trajectory.iterdir()), key=lambda n: (_first_number(n, trajectory), n))
    return ResultFolder(task_id=folder.name, task=result["task"], schema_version="v1",
                        action_history=list(actions), screenshots=[trajectory / n for n in names])
