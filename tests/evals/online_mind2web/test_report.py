"""`mintgym report online-mind2web` on generated human-label files (the authors' layout) and on judge
verdicts, with the real task lists of ../shared/data for the levels."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mintgym.cli import app
from mintgym.evals.online_mind2web.report import (
    AUTHORS_JSONL,
    UNLABELLED,
    load_human_labels,
    load_verdicts,
    success_rates,
    verdict_sources,
)
from mintgym.evals.online_mind2web.results import load_tasks

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "online_mind2web"
V1, V2 = DATA / "Online_Mind2Web.v1_2025-04.json", DATA / "Online_Mind2Web.v2_2025-12.json"


def test_both_task_lists_load_with_their_levels():
    v1, v2 = load_tasks(V1), load_tasks(V2)
    assert len(v1) == len(v2) == 300
    assert sum(t.level == "easy" for t in v1.values()) == 83 and sum(t.level == "hard" for t in v1.values()) == 74
    assert sum(t.level == "easy" for t in v2.values()) == 80 and sum(t.level == "hard" for t in v2.values()) == 77
    assert sum("_" in t for t in v2) == 46  # the revised tasks carry date suffixes


def _labels(tasks, seed):
    """A human-label file for two agents with random labels, and the expected rates counted here."""
    rng = random.Random(seed)
    rows, expected = [], {"Alpha": {}, "Beta": {}}
    for task_id, task in tasks.items():
        row = {"task_id": task_id, "confirmed_task": task.task}
        for agent in expected:
            label = rng.choice([0, 0, 1, 1, 1, 2]) if agent == "Alpha" else rng.choice([0, 1])
            row[f"{agent}_human_label"] = str(label)
            for level in ("overall", task.level):
                cell = expected[agent].setdefault(level, [0, 0, 0])
                cell[0] += 1
                cell[1] += label == 1
                cell[2] += label == 2
        rows.append(row)
    return rows, expected


@pytest.mark.parametrize("task_list", [V1, V2], ids=["v1", "v2"])
def test_human_labels_give_success_rates_per_agent_and_level(tmp_path, task_list):
    tasks = load_tasks(task_list)
    rows, expected = _labels(tasks, seed=7)
    path = tmp_path / "human_label.json"
    path.write_text(json.dumps(rows))
    table = success_rates(load_human_labels(path), tasks)
    for agent, levels in expected.items():
        for level, (n, wins, not_exec) in levels.items():
            cell = table[agent][level]
            assert (cell["tasks"], cell["successes"], cell["not_executable"]) == (n, wins, not_exec)
            assert cell["success_rate"] == pytest.approx(wins / n)
    result = CliRunner().invoke(app, ["report", "online-mind2web", "--labels", str(path), "--tasks", str(task_list)])
    assert result.exit_code == 0, result.output
    alpha = next(line for line in result.output.splitlines() if line.startswith("Alpha"))
    n, wins, not_exec = expected["Alpha"]["overall"]
    rates = [f"{100 * expected['Alpha'][lv][1] / expected['Alpha'][lv][0]:.1f}" for lv in ("easy", "medium", "hard")]
    assert alpha.split() == ["Alpha", "300", *rates, f"{100 * wins / n:.1f}", str(not_exec)]


def test_a_handmade_label_file_gives_exact_rates(tmp_path):
    tasks = load_tasks(V1)
    easy = [t for t in tasks.values() if t.level == "easy"][:2]
    hard = [t for t in tasks.values() if t.level == "hard"][:3]
    rows = [{"task_id": easy[0].task_id, "Op_human_label": "1"}, {"task_id": easy[1].task_id, "Op_human_label": "2"},
            {"task_id": hard[0].task_id, "Op_human_label": "1"}, {"task_id": hard[1].task_id, "Op_human_label": "1"},
            {"task_id": hard[2].task_id, "Op_human_label": "0"}]
    (tmp_path / "l.json").write_text(json.dumps(rows))
    table = success_rates(load_human_labels(tmp_path / "l.json"), tasks)["Op"]
    assert table["easy"]["success_rate"] == 0.5 and table["easy"]["not_executable"] == 1
    assert table["hard"]["success_rate"] == pytest.approx(2 / 3)
    assert table["medium"]["tasks"] == 0 and table["medium"]["success_rate"] is None
    assert table["overall"]["success_rate"] == 0.6


def test_judge_verdicts_as_folders_or_jsonl(tmp_path):
    tasks = load_tasks(V1)
    ids = list(tasks)[:4]
    for i, task_id in enumerate(ids):
        (tmp_path / "run" / task_id).mkdir(parents=True)
        (tmp_path / "run" / task_id / "judge.json").write_text(json.dumps({"task_id": task_id,
                                                                           "predicted_label": int(i % 2 == 0)}))
    assert load_verdicts(tmp_path / "run") == {ids[0]: 1, ids[1]: 0, ids[2]: 1, ids[3]: 0}
    assert verdict_sources(tmp_path / "run") == [UNLABELLED]
    (tmp_path / "auto_eval.jsonl").write_text("\n".join(json.dumps({"task_id": t, "predicted_label": 1}) for t in ids))
    result = CliRunner().invoke(app, ["report", "online-mind2web", "--verdicts", str(tmp_path / "auto_eval.jsonl"),
                                      "--tasks", str(V1), "--agent", "mine"])
    assert result.exit_code == 0, result.output
    assert next(line for line in result.output.splitlines() if line.startswith("mine")).split()[5] == "100.0"
    assert f"WebJudge prompts: {AUTHORS_JSONL}" in result.output


def test_bad_inputs_are_one_line_errors(tmp_path):
    (tmp_path / "l.json").write_text(json.dumps([{"task_id": "not-a-task", "X_human_label": "1"}]))
    runner = CliRunner()
    out = runner.invoke(app, ["report", "online-mind2web", "--labels", str(tmp_path / "l.json"), "--tasks", str(V1)])
    assert out.exit_code == 2 and "not in the task list (first: not-a-task)" in out.output
    (tmp_path / "m.json").write_text(json.dumps([{"task_id": "a", "X_human_label": "yes"}]))
    with pytest.raises(ValueError, match="label must be 0, 1 or 2, got 'yes'"):
        load_human_labels(tmp_path / "m.json")
    both = runner.invoke(app, ["report", "online-mind2web", "--tasks", str(V1)])
    assert both.exit_code == 2 and "exactly one of --labels and --verdicts" in both.output
