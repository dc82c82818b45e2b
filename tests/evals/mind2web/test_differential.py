"""MintGym's Mind2Web scorers against the official code's outcomes on adversarial cases.

``differential/cases.json`` holds the cases; ``differential/outcomes.json`` what the official code gave on
them (OSU-NLP-Group/Mind2Web's multiple-choice evaluation and SeeClick's ``mind2web_test.py``, run unchanged
outside this repository at the commits it names). Each multiple-choice case is written in the original
Mind2Web JSON layout with a ``scores_all_data.pkl`` of its ranks and read back through MintGym's loaders, so
the loaders are under test too. An official failure must be a refusal (``ValueError``) here.
"""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import pytest

from mintgym.evals.mind2web import seeclick
from mintgym.evals.mind2web.data import iter_steps, load_ranks
from mintgym.evals.mind2web.metrics import official_results, score_predictions, score_step

HERE = Path(__file__).parent / "differential"
CASES = json.loads((HERE / "cases.json").read_text())
OUTCOMES = json.loads((HERE / "outcomes.json").read_text())["outcomes"]


def same(a, b) -> bool:
    """Equal, with floats to 1e-12 and NaN as None."""
    if isinstance(a, float) and math.isnan(a):
        a = None
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=0, abs_tol=1e-12)
    return a == b


def read_case(case: dict, root: Path) -> list:
    """The case's steps, written in the original JSON layout with a scores_all_data.pkl and read back."""
    (root / "data" / "test_task").mkdir(parents=True)
    (root / "data" / "test_task" / "0.json").write_text(json.dumps(case["tasks"]))
    (root / "scores_all_data.pkl").write_bytes(pickle.dumps({"scores": {}, "ranks": case["ranks"]}))
    return list(iter_steps(root, "test_task", load_ranks(root / "scores_all_data.pkl")))


def multiple_choice(case: dict, root: Path) -> dict:
    """MintGym's official-layout predictions and results for a case (raises ValueError where it refuses)."""
    steps = read_case(case, root)
    rows = []
    for step in steps:
        pred = case["predictions"].get(step.key) or {"element": None, "op": None, "value": ""}
        rows.append(score_step(step, pred["element"], pred["op"], pred["value"]).to_json())
    return {"predictions": [r["official_prediction"] for r in rows], "results": official_results(rows)}


def seeclick_run(case: dict) -> dict:
    """MintGym's SeeClick step results and figures for a case (raises ValueError where it refuses)."""
    episodes, steps = [], []
    try:
        for ep in case["episodes"]:
            scored = []
            for a in ep["actions"]:
                if "bbox" not in a:
                    continue
                size = tuple(a["image_size"])
                ref = seeclick.reference(a["operation"], seeclick.Box(**a["bbox"]), size)
                if ref is None:
                    continue
                p = a["prediction"]
                pred = None if p is None else seeclick.Prediction(
                    op=p["op"], click=(p["x"], p["y"]) if "x" in p else None, value=p["value"])
                verdict = seeclick.score_step(*ref, pred, size)
                scored.append(verdict)
                steps.append({"step": f"{ep['annotation_id']}-{a['action_uid']}", "Ele_match": verdict["Ele_match"],
                              "Op_match": verdict["Op_match"], "Op_F1": verdict["Op_F1"]})
            episodes.append(scored)
        return {"steps": steps, "metrics": seeclick.aggregate(episodes)}
    except ValueError:
        return {"error": True, "steps": steps}


@pytest.mark.parametrize("case", CASES["multiple_choice"], ids=lambda c: c["id"])
def test_multiple_choice_agrees_with_the_official_evaluation(case, tmp_path):
    official = OUTCOMES["multiple_choice"][case["id"]]
    if "error" in official:
        with pytest.raises(ValueError):
            multiple_choice(case, tmp_path)
        return
    mine = multiple_choice(case, tmp_path)
    assert mine["predictions"] == official["predictions"], case["what"]
    assert same(mine["results"], official["results"]), (case["what"], mine["results"], official["results"])


@pytest.mark.parametrize("case", [c for c in CASES["multiple_choice"]
                                  if "error" not in OUTCOMES["multiple_choice"][c["id"]]],
                         ids=lambda c: c["id"])
def test_the_official_predictions_file_rescored_gives_the_official_results(case, tmp_path):
    official = OUTCOMES["multiple_choice"][case["id"]]
    rows = [r.to_json() for r in score_predictions(read_case(case, tmp_path), official["predictions"])]
    assert same(official_results(rows), official["results"]), case["what"]


@pytest.mark.parametrize("case", CASES["seeclick"], ids=lambda c: c["id"])
def test_seeclick_protocol_agrees_with_seeclick(case):
    official = OUTCOMES["seeclick"][case["id"]]
    mine = seeclick_run(case)
    assert same(mine["steps"], official["steps"]), case["what"]
    if "error" in official:
        assert "error" in mine, case["what"]
    else:
        assert same(mine["metrics"], official["metrics"]), (case["what"], mine["metrics"], official["metrics"])


def test_the_cases_are_many_and_adversarial():
    assert len(CASES["multiple_choice"]) + len(CASES["seeclick"]) >= 100
    errors = [c for c, o in OUTCOMES["multiple_choice"].items() if "error" in o]
    zero_f1 = [c for c, o in OUTCOMES["multiple_choice"].items()
               if "results" in o and o["results"]["action_f1"] == 0]
    assert errors and zero_f1 and {c["id"] for c in CASES["multiple_choice"]} == set(OUTCOMES["multiple_choice"])
