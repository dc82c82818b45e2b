"""Reading result folders in both of the authors' formats, and the one-line errors where their code fails."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from mintgym.evals.online_mind2web.results import V2, read_result


def _folder(root, result, files=("0.png",)):
    folder = root / "task1"
    (folder / "trajectory").mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps(result))
    for name in files:
        Image.new("RGB", (4, 4)).save(folder / "trajectory" / name)
    return folder


def test_v1_orders_every_trajectory_file_by_its_first_number(tmp_path):
    folder = _folder(tmp_path, {"task": "t", "action_history": ["a"]}, ["10.png", "s2_9.png", "1.jpg"])
    result = read_result(folder)
    assert (result.task_id, result.schema_version, result.action_history) == ("task1", "v1", ["a"])
    assert [p.name for p in result.screenshots] == ["1.jpg", "s2_9.png", "10.png"]
    Image.new("RGB", (4, 4)).save(folder / "trajectory" / "cover.png")
    with pytest.raises(ValueError, match="cover.png: the authors' judge orders trajectory files by the first number"):
        read_result(folder)


def test_v2_takes_steps_in_order_and_drops_the_last_action(tmp_path):
    steps = [{"step": i, "screenshot": f"{i:04d}.png", "action": f"a{i}", "thought": None} for i in (1, 0)]
    folder = _folder(tmp_path, {"schema_version": V2, "task": "t", "action_history": steps}, ["0000.png", "0001.png"])
    result = read_result(folder)
    assert result.schema_version == "v2" and result.action_history == ["a1"]
    assert [p.name for p in result.screenshots] == ["0001.png", "0000.png"]


@pytest.mark.parametrize(("result", "message"), [
    ({"action_history": []}, "lacks 'task'"),
    ({"task": "t"}, "lacks a list 'action_history'"),
    ({"task": "t", "action_history": 3}, "lacks a list 'action_history'"),
    ({"schema_version": V2, "task": "t", "action_history": {"a": 1}}, "must be a list of step objects"),
    ({"schema_version": V2, "task": "t", "action_history": [{"action": "x"}]}, "step 0 lacks 'screenshot'"),
    ({"schema_version": V2, "task": "t", "action_history": [{"screenshot": 3}]}, "screenshot must be a file name"),
])
def test_bad_results_are_one_line_errors(tmp_path, result, message):
    with pytest.raises(ValueError, match=message):
        read_result(_folder(tmp_path, result))
