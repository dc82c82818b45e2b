"""The original Mind2Web JSON layout and the candidate generator's ranks file, built in miniature."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from mintgym.evals.mind2web.data import iter_steps, load_ranks


def candidate(node: str, box: str = "0,0,10,10", **extra) -> dict:
    return {"tag": "button", "backend_node_id": node, **extra,
            "attributes": json.dumps({"backend_node_id": node, "bounding_box_rect": box})}


def write_split(root: Path) -> Path:
    task = {"annotation_id": "t1", "confirmed_task": "Book it", "website": "site", "domain": "Travel",
            "subdomain": "Airlines", "action_reprs": ["[input] From -> TYPE: NYC", "[button] Go -> CLICK"],
            "actions": [
                {"action_uid": "u1", "operation": {"op": "TYPE", "original_op": "TYPE", "value": "NYC\nnewline"},
                 "pos_candidates": [candidate("1")], "neg_candidates": [candidate("2")], "cleaned_html": "<html/>"},
                {"action_uid": "u2", "operation": {"op": "CLICK", "original_op": "CLICK", "value": ""},
                 "pos_candidates": [candidate("3")], "neg_candidates": [candidate("1"), candidate("2")],
                 "cleaned_html": "<html/>"}]}
    (root / "data" / "test_website").mkdir(parents=True)
    (root / "data" / "test_website" / "0.json").write_text(json.dumps([task]))
    return root


def test_the_original_json_layout_reads_as_steps(tmp_path):
    steps = list(iter_steps(write_split(tmp_path), "test_website"))
    assert [s.key for s in steps] == ["t1_u1", "t1_u2"]
    assert steps[0].value == "NYC\nnewline" and steps[0].op == "TYPE" and steps[0].previous_actions == []
    assert steps[1].previous_actions == ["[input] From -> TYPE: NYC"] and steps[1].screenshot is None
    assert [c.backend_node_id for c in steps[1].positives] == ["3"] and steps[1].website == "site"
    assert all(c.rank is None for s in steps for c in s.candidates)


def test_ranks_from_scores_all_data_pkl_with_numpy_numbers(tmp_path):
    ranks = {"t1_u1": {"1": np.int64(0), "2": np.int64(7)}, "t1_u2": {"3": 60, "1": 1, "2": 2}}
    (tmp_path / "scores.pkl").write_bytes(pickle.dumps({"scores": {}, "ranks": ranks}))
    steps = list(iter_steps(write_split(tmp_path), "test_website", load_ranks(tmp_path / "scores.pkl")))
    assert [c.rank for c in steps[1].candidates] == [60.0, 1.0, 2.0]
    (tmp_path / "scores.json").write_text(json.dumps({"ranks": {"t1_u1": {"1": 0, "2": 1}}}))
    with pytest.raises(ValueError, match="the ranks have no step t1_u2"):
        list(iter_steps(tmp_path, "test_website", load_ranks(tmp_path / "scores.json")))
    (tmp_path / "scores.json").write_text(json.dumps({"ranks": {"t1_u1": {"1": 0}}}))
    with pytest.raises(ValueError, match="the ranks of step t1_u1 have no candidate 2"):
        list(iter_steps(tmp_path, "test_website", load_ranks(tmp_path / "scores.json")))


def test_a_ranks_file_that_would_run_code_or_has_no_ranks_is_refused(tmp_path):
    (tmp_path / "evil.pkl").write_bytes(pickle.dumps({"ranks": {"s": {"1": Path("x")}}}))
    with pytest.raises(ValueError, match=r"not a candidate ranks file \(pathlib.*is not allowed"):
        load_ranks(tmp_path / "evil.pkl")
    (tmp_path / "none.pkl").write_bytes(pickle.dumps({"scores": {}}))
    with pytest.raises(ValueError, match="has no 'ranks' mapping"):
        load_ranks(tmp_path / "none.pkl")


def test_bad_tasks_and_candidates_name_the_problem(tmp_path):
    folder = tmp_path / "test_task"
    folder.mkdir()
    (folder / "0.json").write_text(json.dumps({"not": "a list"}))
    with pytest.raises(ValueError, match="holds a list of tasks, got dict"):
        list(iter_steps(tmp_path, "test_task"))
    (folder / "0.json").write_text(json.dumps([{"annotation_id": "a", "confirmed_task": "t", "action_reprs": [],
                                                "actions": [{"action_uid": "u",
                                                             "operation": {"op": "CLICK", "value": ""},
                                                             "pos_candidates": [{"backend_node_id": 5}],
                                                             "neg_candidates": []}]}]))
    with pytest.raises(ValueError, match=r"0.json task 0 action 0: a candidate has no backend_node_id .*got 5"):
        list(iter_steps(tmp_path, "test_task"))
