"""ScreenSpot scoring: point-in-box, the official breakdowns, and `mintgym report screenspot` on the real
ScreenSpot-Pro records in ../shared/data (49 records of the Pro repository's qwen2vl results)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mintgym.evals.screenspot.scoring import (
    agreement,
    classify,
    metrics,
    pro_breakdowns,
    read_results,
    rescore,
    split_table,
)
from typer.testing import CliRunner

from mintgym.cli import app

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
PRO_RESULTS = DATA / "screenspot" / "screenspot_pro_qwen2vl_results_subset49.json"


def test_point_in_box_edges_inclusive_and_no_point_is_wrong_format():
    box = (10, 20, 30, 40)
    assert classify((10, 20), box) == "correct"
    assert classify((30, 40), box) == "correct"
    assert classify((30.01, 30), box) == "wrong"
    assert classify((20, 19.99), box) == "wrong"
    assert classify(None, box) == "wrong_format"
    # normalized comparison (the Pro script's) agrees with the pixel one away from float ties
    assert classify((25, 35), box, img_size=(100, 50)) == "correct"
    assert classify((31, 35), box, img_size=(100, 50)) == "wrong"
    with pytest.raises(ValueError, match="point must be"):
        classify((1, 2, 3), box)


def test_rescoring_reproduces_every_stored_correctness_of_the_49_pro_records():
    records = rescore(read_results(PRO_RESULTS))
    assert len(records) == 49
    same, differ = agreement(records)
    assert (same, differ) == (49, [])
    counts = {c: sum(r["correctness"] == c for r in records) for c in ("correct", "wrong", "wrong_format")}
    assert counts == {"correct": 19, "wrong": 24, "wrong_format": 6}  # what PROVENANCE.md says the subset holds


def test_pro_breakdowns_match_a_hand_count():
    records = rescore(read_results(PRO_RESULTS))
    tables = pro_breakdowns(records)
    overall = tables["overall"]
    assert overall["num_correct_action"] == 19 and overall["num_total"] == 49 and overall["wrong_format_num"] == 6
    for group, m in tables["leaderboard_simple_style"].items():
        rows = [r for r in records if f"group:{r['group']}" == group]
        assert m["num_total"] == len(rows)
        assert m["action_acc"] == pytest.approx(sum(r["correctness"] == "correct" for r in rows) / len(rows))
        text = [r for r in rows if r["ui_type"] == "text"]
        assert m["text_acc"] == pytest.approx(sum(r["correctness"] == "correct" for r in text) / len(text))
    assert set(tables["leaderboard_simple_style"]) == {f"group:{g}" for g in
                                                        ("CAD", "Creative", "Dev", "OS", "Office", "Scientific")}
    assert sum(m["num_total"] for m in tables["leaderboard_detailed_style"].values()) == 49


def test_split_table_is_seeclicks_form():
    rows = [{"platform": "mobile", "ui_type": "text", "correctness": "correct"},
            {"platform": "mobile", "ui_type": "icon", "correctness": "wrong"},
            {"platform": "web", "ui_type": "icon", "correctness": "wrong_format"},
            {"platform": "web", "ui_type": "icon", "correctness": "correct"}]
    table = split_table(rows)
    assert table == {"mobile_text": 1.0, "mobile_icon": 0.0, "web_icon": 0.5, "average": 0.5, "wrong_format_num": 1}
    assert metrics([])["action_acc"] == 0.0


def test_cli_report_screenspot_reproduces_the_file_and_prints_groups():
    result = CliRunner().invoke(app, ["report", "screenspot", "--predictions", str(PRO_RESULTS)])
    assert result.exit_code == 0, result.output
    assert "rescored 49 records: 49/49 match the stored correctness" in result.output
    for group in ("CAD", "Creative", "Dev", "OS", "Office", "Scientific"):
        assert f"group:{group}" in result.output
    assert "overall       19     49             6      38.8" in result.output


def test_cli_report_screenspot_flags_a_record_whose_stored_verdict_is_wrong(tmp_path):
    data = json.loads(PRO_RESULTS.read_text())
    first_correct = next(i for i, r in enumerate(data["details"]) if r["correctness"] == "correct")
    data["details"][first_correct]["correctness"] = "wrong"
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["report", "screenspot", "--predictions", str(bad)])
    assert result.exit_code == 1
    assert "48/49 match" in result.output
    assert f"record {first_correct}: stored 'wrong', recomputed 'correct'" in result.output


def test_cli_report_screenspot_bad_input_is_one_line(tmp_path):
    missing = CliRunner().invoke(app, ["report", "screenspot", "--predictions", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "no predictions file" in missing.output
    (tmp_path / "x.json").write_text('{"details": [{"pred": [1, 2]}]}')
    nobox = CliRunner().invoke(app, ["report", "screenspot", "--predictions", str(tmp_path / "x.json")])
    assert nobox.exit_code == 2 and "record 0 lacks 'bbox' or 'pred'" in nobox.output
