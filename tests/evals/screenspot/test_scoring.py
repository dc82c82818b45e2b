"""ScreenSpot scoring: point-in-box, the official breakdowns, and `mintgym report screenspot` on the real
ScreenSpot-Pro records in ../shared/data (49 records of the Pro repository's qwen2vl results)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mintgym.cli import app
from mintgym.evals.screenspot.scoring import (
    agreement,
    classify,
    metrics,
    negative_verdict,
    pro_breakdowns,
    read_results,
    rescore,
    split_table,
    stored_verdicts,
)

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
PRO_RESULTS = DATA / "screenspot" / "screenspot_pro_qwen2vl_results_subset49.json"


def test_point_in_box_edges_inclusive_in_the_models_frame_and_no_point_is_wrong_format():
    box, size = (10, 20, 30, 40), (100, 50)
    assert classify((10, 20), box, size) == "correct"
    assert classify((30, 40), box, size) == "correct"
    assert classify((30.01, 30), box, size) == "wrong"
    assert classify((20, 19.99), box, size) == "wrong"
    assert classify(None, box, size) == "wrong_format"
    assert classify((0.3, 0.8), box, size, "relative") == "correct"
    assert classify((0.3002, 0.8), box, size, "relative") == "wrong"  # no rounding to pixel 30 first
    assert classify((300, 800), box, size, "normalized_1000") == "correct"
    assert classify((60, 40), box, size, "resized_absolute:200x100") == "correct"
    assert classify((-1, 30), box, size) == "wrong"  # a point off the image is wrong, as officially
    with pytest.raises(ValueError, match="point must be"):
        classify((1, 2, 3), box, size)
    with pytest.raises(ValueError, match="unknown coordinate frame 'grid'"):
        classify((1, 2), box, size, "grid")
    with pytest.raises(ValueError, match="lacks its resized size"):
        classify((1, 2), box, size, "resized_absolute")


def test_negative_ground_truth_and_stored_points_at_float_ties():
    assert [negative_verdict(r) for r in ("negative", "positive", None)] == ["correct", "wrong", "wrong_format"]
    # 1919 * (128 / 1919) stores as 127.99999999999999: inside for the official normalized test
    p = 128 / 1919
    assert p * 1919 < 128
    assert stored_verdicts([p * 1919, 5], (128, 0, 200, 10), (1919, 10)) == {"correct"}
    assert stored_verdicts([p * 1919, 5], (128, 0, 200, 10), None) == {"correct", "wrong"}
    assert stored_verdicts([127.9, 5], (128, 0, 200, 10), None) == {"wrong"}
    assert stored_verdicts(None, (128, 0, 200, 10), None) == {"wrong_format"}
    [tie] = rescore([{"pred": [p * 1919, 5], "bbox": [128, 0, 200, 10], "correctness": "correct"}])
    assert tie["correctness"] == "correct" and tie["tie"]
    [exact] = rescore([{"pred": [122.0, 5], "model_point": [122, 5], "frame": "absolute", "img_size": [1919, 10],
                        "bbox": [123, 0, 200, 10], "correctness": "correct"}])
    assert exact["correctness"] == "wrong" and "tie" not in exact


def test_rescoring_reproduces_every_stored_correctness_of_the_49_pro_records():
    benchmark, stored = read_results(PRO_RESULTS)
    records = rescore(stored)
    assert benchmark == "screenspot-pro" and len(records) == 49
    same, differ = agreement(records)
    assert (same, differ) == (49, [])
    counts = {c: sum(r["correctness"] == c for r in records) for c in ("correct", "wrong", "wrong_format")}
    assert counts == {"correct": 19, "wrong": 24, "wrong_format": 6}  # what PROVENANCE.md says the subset holds


def test_pro_breakdowns_match_a_hand_count():
    records = rescore(read_results(PRO_RESULTS)[1])
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


def test_split_table_is_seeclicks_form_with_both_averages():
    rows = [{"platform": "mobile", "ui_type": "text", "correctness": "correct"},
            {"platform": "mobile", "ui_type": "icon", "correctness": "wrong"},
            {"platform": "web", "ui_type": "icon", "correctness": "wrong_format"},
            {"platform": "web", "ui_type": "icon", "correctness": "correct"}]
    table = split_table(rows)
    # SeeClick: an empty cell is 0 and its Average is the mean of the cells; MintGym's is over all samples
    assert table == {"mobile_text": 1.0, "mobile_icon": 0.0, "web_text": 0, "web_icon": 0.5,
                     "seeclick_average": 0.375, "average": 0.5, "wrong_format_num": 1}
    assert metrics([])["action_acc"] == 0


def test_pro_tables_count_a_missing_group_as_the_official_code_does():
    rows = [{"group": "Dev", "application": "vscode", "ui_type": "text", "correctness": "correct"},
            {"group": None, "application": "excel", "ui_type": "icon", "correctness": "wrong"}]
    groups = pro_breakdowns(rows)["leaderboard_simple_style"]
    assert groups["group:Dev"]["num_total"] == 1
    assert groups["group:None"]["num_total"] == 2  # None filters nothing (eval_screenspot_pro.py:53)


def test_results_files_with_one_sample_twice_are_refused(tmp_path):
    record = {"id": "a", "pred": [1, 2], "bbox": [0, 0, 5, 5], "instruction_style": "instruction",
              "gt_type": "positive", "lang": "en", "correctness": "correct"}
    (tmp_path / "r.json").write_text(json.dumps({"details": [record, {**record, "lang": "cn"}, record]}))
    with pytest.raises(ValueError,
                       match=r"records 0 and 2 are the same sample \('a', 'instruction', 'positive', 'en'\)"):
        read_results(tmp_path / "r.json")
    negative = {k: v for k, v in record.items() if k not in ("bbox", "pred")} | {"gt_type": "negative"}
    (tmp_path / "n.json").write_text(json.dumps([negative]))
    assert read_results(tmp_path / "n.json") == ("screenspot", [negative])


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
