"""Online-Mind2Web success rates, overall and per difficulty level, per agent.

Outcomes come from human labels in the authors' layout (``human_label.json``: a list of objects with
``task_id`` and one ``<Agent>_human_label`` field per agent, valued 0 = failure, 1 = success,
2 = not executable) or from judge verdicts (``<task_id>/judge.json`` folders written by
:func:`~mintgym.evals.online_mind2web.judge.judge_results`, or a JSONL file of ``{task_id,
predicted_label}`` lines as the authors' auto-eval writes). The level of each task comes from the task
list. A not-executable task (2) counts as a failure in the rate and is also counted on its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mintgym.evals.online_mind2web.results import LEVELS, OnlineTask, load_tasks
from mintgym.evals.screenspot.data import read_json
from mintgym.evals.screenspot.report import rows_to_text

__all__ = ["load_human_labels", "load_tasks", "load_verdicts", "render_text", "success_rates", "verdict_sources"]

_SUFFIX = "_human_label"


def _label(value: Any, where: str) -> int:
    try:
        label = int(value)
    except (TypeError, ValueError):
        label = -1
    if label not in (0, 1, 2) or isinstance(value, bool):
        raise ValueError(f"{where}: label must be 0, 1 or 2, got {value!r}")
    return label


def load_human_labels(path: str | Path) -> dict[str, dict[str, int]]:
    """``{agent: {task_id: label}}`` from a human-label file."""
    file = Path(path)
    data = read_json(file, "label file")
    if not isinstance(data, list) or not data:
        raise ValueError(f"{file}: expected a non-empty JSON list of label objects")
    out: dict[str, dict[str, int]] = {}
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("task_id"), str):
            raise ValueError(f"{file}: item {i} has no string 'task_id'")
        for key, value in item.items():
            if key.endswith(_SUFFIX):
                out.setdefault(key[: -len(_SUFFIX)], {})[item["task_id"]] = _label(value, f"{file}: item {i} {key}")
    if not out:
        raise ValueError(f"{file}: no '<Agent>{_SUFFIX}' fields found")
    return out


def load_verdicts(path: str | Path) -> dict[str, int]:
    """``{task_id: 0|1}`` from a folder of ``<task_id>/judge.json`` or a JSONL file of verdicts."""
    src = Path(path)
    if src.is_dir():
        files = sorted(src.glob("*/judge.json"))
        if not files:
            raise FileNotFoundError(f"{src} has no <task_id>/judge.json verdicts")
        rows = [read_json(f, "verdict") for f in files]
    else:
        try:
            lines = src.read_text().splitlines()
        except FileNotFoundError:
            raise FileNotFoundError(f"no verdicts at {src}") from None
        rows = []
        for n, line in enumerate(lines, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise ValueError(f"{src}:{n}: not valid JSON ({err})") from None
    out = {}
    for row in rows:
        if not isinstance(row, dict) or "task_id" not in row or "predicted_label" not in row:
            raise ValueError(f"{src}: every verdict needs 'task_id' and 'predicted_label'")
        out[str(row["task_id"])] = _label(row["predicted_label"], f"{src}: task {row['task_id']}")
    return out


#: How verdicts without a prompts label are reported.
UNLABELLED = "unlabelled verdicts (judged before MintGym recorded its prompts)"
AUTHORS_JSONL = "a JSONL of verdicts (the authors' run.py output or similar; prompts not recorded)"


def verdict_sources(path: str | Path) -> list[str]:
    """The prompts labels of the verdicts at ``path``: one per source found, so a report can name them."""
    src = Path(path)
    if not src.is_dir():
        return [AUTHORS_JSONL]
    labels = {read_json(f, "verdict").get("prompts") or UNLABELLED for f in sorted(src.glob("*/judge.json"))}
    return sorted(labels)


def success_rates(outcomes: dict[str, dict[str, int]], tasks: dict[str, OnlineTask]) -> dict[str, dict[str, Any]]:
    """Per agent: ``overall`` and each level with tasks, successes, not_executable and success_rate."""
    table: dict[str, dict[str, Any]] = {}
    for agent, labels in outcomes.items():
        unknown = sorted(set(labels) - set(tasks))
        if unknown:
            raise ValueError(f"{agent}: {len(unknown)} labelled task ids are not in the task list (first: "
                             f"{unknown[0]}); give the task list the labels were made on")
        row = {}
        for level in ("overall", *LEVELS):
            ids = [t for t in labels if level == "overall" or tasks[t].level == level]
            wins = sum(labels[t] == 1 for t in ids)
            row[level] = {"tasks": len(ids), "successes": wins, "not_executable": sum(labels[t] == 2 for t in ids),
                          "success_rate": wins / len(ids) if ids else None}
        table[agent] = row
    return table


def render_text(table: dict[str, dict[str, Any]]) -> str:
    header = ("agent", "tasks", "easy", "medium", "hard", "overall", "not executable")
    rows = [[agent, r["overall"]["tasks"], *(r[lv]["success_rate"] for lv in LEVELS), r["overall"]["success_rate"],
             r["overall"]["not_executable"]] for agent, r in table.items()]
    return "Success rate (%) per difficulty level\n" + rows_to_text(header, rows)
