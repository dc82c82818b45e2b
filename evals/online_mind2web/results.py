"""Online-Mind2Web's task lists and its per-task result format.

The task list (``Online_Mind2Web.json`` of ``osunlp/Online-Mind2Web``; the original April 2025 list and
the revised one, whose changed tasks carry date suffixes on their ids) is a JSON list of ``task_id``,
``confirmed_task``, ``website``, ``reference_length`` and ``level`` (easy, medium, hard).

A finished task is written the way the authors' judge scripts read it::

    <task_id>/result.json        task_id, task, final_result_response, action_history, thoughts
    <task_id>/trajectory/0.png   one screenshot per step, numbered in order (1.png, 2.png, ...)

:func:`write_result` writes that folder from a MintGym trajectory.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
        if step.action is None:
            history.append(f"(unusable answer: {step.error})")
        else:
            history.append(render_action(step.action))
            if step.action.get("type") == "done" and step.action.get("answer"):
                answer = str(step.action["answer"])
        thoughts.append(str(step.extra.get("thought") or step.text))
    result = {"task_id": task.task_id, "task": task.task, "final_result_response": answer,
              "action_history": history, "thoughts": thoughts}
    (folder / "result.json").write_text(json.dumps(result, indent=4))
    return folder


def read_result(folder: str | Path) -> tuple[dict[str, Any], list[Path]]:
    """A task's result.json and its screenshots in step order (numbers in the file names, as the judge sorts)."""
    folder = Path(folder)
    result = read_json(folder / "result.json", "result.json")
    for key in ("task_id", "task", "action_history"):
        if key not in result:
            raise ValueError(f"{folder / 'result.json'} lacks {key!r}")

    def number(p: Path) -> int:
        found = re.findall(r"\d+", p.name)
        return int(found[0]) if found else -1

    images = sorted((p for p in (folder / "trajectory").glob("*") if p.suffix.lower() in (".png", ".jpg", ".jpeg")),
                    key=number)
    return result, images
