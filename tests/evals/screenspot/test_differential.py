"""MintGym's ScreenSpot scoring against the outcomes the official code gave on adversarial cases.

The cases and the official outcomes are data (differential/screenspot_cases.json), produced by
benchmarks/differential/screenspot.py running SeeClick's ``pretrain/screenspot_test.py`` and ScreenSpot-Pro's
``eval_screenspot_pro.py`` (repositories and commits in the file's ``official``). Each test collects every
disagreement and asserts there is none, so a failure lists the cases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mintgym.cli import app
from mintgym.evals.screenspot.data import expand_pro, load_pro, load_screenspot
from mintgym.evals.screenspot.options import ProOptions
from mintgym.evals.screenspot.scoring import classify, negative_verdict, normalized_point, pro_breakdowns, split_table
from mintgym.evals.suite_options import parse_suite_options

CASES = json.loads((Path(__file__).parent / "differential" / "screenspot_cases.json").read_text())
SPLITS = ("mobile", "desktop", "web")
#: Where MintGym refuses on purpose what the official code accepts (docs/evaluate.md lists them).
DELIBERATE = {
    "item without data_source": "SeeClick's bare except counts the sample as correct and as wrong_format at once",
    "two samples with one id": "one verdict per sample id: two samples with one id are refused",
}


def _xyxy(bbox: list[float]) -> tuple[float, float, float, float]:
    x, y, w, h = bbox
    return x, y, x + w, y + h


def test_the_cases_are_many_and_adversarial():
    pro_points = CASES["pro"][0]["cases"]
    seeclick = CASES["seeclick"]
    assert len(seeclick["cases"]) + len(pro_points) + len(seeclick["records"]) + len(CASES["pro"]) >= 100
    outcomes = {c["official"] for c in [*CASES["seeclick"]["cases"], *pro_points]}
    assert outcomes == {"correct", "wrong", "wrong_format"}
    assert {c["frame"].split(":")[0] for c in pro_points} == {"absolute", "resized_absolute", "normalized_1000",
                                                               "relative"}
    assert all(len(info["commit"]) == 40 for info in CASES["official"].values())


def test_seeclick_point_verdicts_agree():
    differ = [(c["name"], c["official"], classify(c["point"], _xyxy(c["bbox"]), c["img_size"], c["frame"]))
              for c in CASES["seeclick"]["cases"]
              if classify(c["point"], _xyxy(c["bbox"]), c["img_size"], c["frame"]) != c["official"]]
    assert differ == []


def test_seeclick_table_and_average_agree():
    records = [{"platform": c["split"], "ui_type": c["data_type"],
                "correctness": classify(c["point"], _xyxy(c["bbox"]), c["img_size"], c["frame"])}
               for c in CASES["seeclick"]["cases"]]
    table = split_table(records)
    official = CASES["seeclick"]["official"]
    assert [[table[f"{s}_text"], table[f"{s}_icon"]] for s in SPLITS] == official["tasks_result"]
    cells = [v for pair in official["tasks_result"] for v in pair]
    assert table["seeclick_average"] == sum(cells) / len(cells)  # the paper's Average: the mean of the six cells
    logged = official["log"]
    for i, split in enumerate(SPLITS):
        rows = [r for r in records if r["platform"] == split]
        acc = sum(r["correctness"] == "correct" for r in rows) / len(rows)
        assert logged[5 * i:5 * i + 3] == [f"Action Acc: {acc}", f"Total num: {len(rows)}",
                                           f"Wrong format num: {sum(r['correctness'] == 'wrong_format' for r in rows)}"]
    assert table["average"] == sum(r["correctness"] == "correct" for r in records) / len(records)


@pytest.mark.parametrize("case", CASES["seeclick"]["records"], ids=lambda c: c["name"])
def test_seeclick_broken_items_are_refused(tmp_path, case):
    (tmp_path / "screenspot_mobile.json").write_text(json.dumps([case["item"]]))
    missing = case["name"].removeprefix("item without ")
    if case["name"] not in DELIBERATE:
        assert case["official"]["error"] == "KeyError" and case["official"]["message"] == repr(missing)
    else:
        assert case["official"]["verdicts"] == ["correct", "wrong_format"]  # one sample, two verdicts
    with pytest.raises(ValueError, match=f"{missing}"):
        load_screenspot(tmp_path, "v1")


def _pro_layout(root: Path, run: dict[str, Any]) -> None:
    (root / "annotations").mkdir(parents=True)
    for name, items in run["files"].items():
        (root / "annotations" / f"{name}.json").write_text(json.dumps(items, ensure_ascii=False))


def mintgym_pro(root: Path, run: dict[str, Any]) -> list[dict[str, Any]]:
    """MintGym's records of a Pro run: its loader, its options, its verdicts on the case's answers."""
    options = parse_suite_options(ProOptions, run["options"], "screenspot-pro")
    samples = expand_pro(load_pro(root), options.inst_style, options.gt_type, options.language)
    records = []
    for s in samples:
        answer = run["responses"][Path(s.image_path).name]
        record = s.record()
        if s.gt_type == "negative":
            record["correctness"] = negative_verdict(answer.get("result"))
        else:
            record["correctness"] = classify(answer["point"], s.bbox, s.img_size, answer["frame"])
        if answer["point"] is not None:
            p = normalized_point(answer["point"], answer["frame"], s.img_size)
            record["pred"] = [p[0] * s.img_size[0], p[1] * s.img_size[1]]
        records.append(record)
    return records


def _key(r: dict[str, Any]) -> tuple[Any, ...]:
    return r["id"], r["instruction_style"], r["gt_type"], r["lang"]


@pytest.mark.parametrize("run", CASES["pro"], ids=lambda r: r["name"])
def test_pro_runs_agree(tmp_path, run):
    _pro_layout(tmp_path, run)
    official = run["official"]
    if "error" in official or run["name"] in DELIBERATE:
        with pytest.raises(ValueError) as refused:
            mintgym_pro(tmp_path, run)
        if run["name"] in DELIBERATE:
            assert "ids must be unique" in str(refused.value) and len(official["details"]) == 2
        elif official["error"] == "KeyError":
            assert official["message"].strip("'") in str(refused.value)
        else:
            assert official["error"] == "AttributeError" and "cn" in str(refused.value)
        return
    records = mintgym_pro(tmp_path, run)
    ours = {_key(r): r for r in records}
    assert len(ours) == len(records) == len(official["details"])
    differ = [(d["id"], d["instruction_style"], d["gt_type"], d["lang"], d["correctness"], ours[_key(d)]["correctness"])
              for d in official["details"] if ours[_key(d)]["correctness"] != d["correctness"]]
    assert differ == []
    assert all(ours[_key(d)].get("pred") == d["pred"] for d in official["details"] if d["gt_type"] == "positive")
    assert pro_breakdowns(records) == official["metrics"]  # group:None included, as the official code counts it


def test_the_group_none_row_covers_every_record_as_officially():
    run = CASES["pro"][1]
    assert any(d["group"] is None for d in run["official"]["details"])
    simple = run["official"]["metrics"]["leaderboard_simple_style"]
    assert simple["group:None"]["num_total"] == len(run["official"]["details"])


@pytest.mark.parametrize("run", [r for r in CASES["pro"] if "details" in r["official"]], ids=lambda r: r["name"])
def test_report_reproduces_every_official_results_file(tmp_path, run):
    file = tmp_path / "results.json"
    file.write_text(json.dumps(run["official"], ensure_ascii=False))
    result = CliRunner().invoke(app, ["report", "screenspot", "--predictions", str(file)])
    n = len(run["official"]["details"])
    if run["name"] in DELIBERATE:
        assert result.exit_code == 2 and "are the same sample" in result.output
        return
    assert result.exit_code == 0, result.output
    assert f"rescored {n} records: {n}/{n} match the stored correctness" in result.output


def test_the_issues_border_examples():
    by_name = {c["name"]: c for c in CASES["pro"][0]["cases"]}
    relative = by_name["relative 0.3002 against a right edge at 300 px"]
    qwen = by_name["Qwen2.5-VL x = resized width on the right edge at 3000 px"]
    assert (relative["official"], qwen["official"]) == ("wrong", "correct")
    ties = [c for name, c in by_name.items() if name.startswith("stored pred")]
    assert len(ties) == 6 and all(c["official"] == "correct" for c in ties)
    assert all(c["point"][0] * c["img_size"][0] < c["bbox"][0] for c in ties)  # stored below the edge, yet inside


def test_report_with_the_data_decides_most_border_ties(tmp_path):
    run = CASES["pro"][0]
    _pro_layout(tmp_path / "data", run)
    file = tmp_path / "results.json"
    file.write_text(json.dumps(run["official"]))
    n = len(run["official"]["details"])

    def ties(*extra: str) -> int:
        result = CliRunner().invoke(app, ["report", "screenspot", "--predictions", str(file), *extra])
        assert result.exit_code == 0 and f"{n}/{n} match the stored correctness" in result.output, result.output
        line = next((ln for ln in result.output.splitlines() if "within float rounding" in ln), "0 ")
        return int(line.split()[0])

    without, with_data = ties(), ties("--data", str(tmp_path / "data"))
    assert 0 < with_data < without / 10
