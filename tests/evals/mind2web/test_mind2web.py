"""Multimodal-Mind2Web offline harness on the real SeeAct test step in ../shared/data, turned into the
dataset's published layout (a parquet file of data/test_task-*.parquet with the dataset's columns).

The real step (Thumbtack, "View the profile of a Wedding Photographer ...") is a CLICK on the Search
button. A second row is derived from the same page for the task's first action (TYPE "wedding
photographer" into the search box, whose box is among the real row's candidates), to test TYPE scoring.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import httpx
import pytest
from PIL import Image
from typer.testing import CliRunner

from mintgym.action_spaces import Absolute, Normalized1000
from mintgym.cli import app
from mintgym.evals.mind2web.data import iter_steps, parse_box, step_from_row
from mintgym.evals.mind2web.harness import run_split, viewport_top
from mintgym.evals.mind2web.metrics import aggregate, op_f1
from mintgym.policy import AgentStep

REPO = Path(__file__).resolve().parents[3]
SEEACT = REPO.parent / "shared" / "data" / "mind2web" / "seeact_textual_choice"
SEARCH_BOX = "8885"  # the "Search on Thumbtack" input among the real row's candidates


def _candidate_json(c: dict) -> str:
    return json.dumps({k: c[k] for k in ("attributes", "backend_node_id", "tag", "rank", "score") if k in c})


def build_dataset(root: Path) -> Path:
    """The SeeAct step as Multimodal-Mind2Web rows in the dataset's parquet layout; returns the data folder."""
    import datasets

    query = json.loads((SEEACT / "queries.jsonl").read_text().splitlines()[0])
    pos, neg = query["pos_candidates"], query["neg_candidates"]
    reprs = [*query["previous_actions"], "[button]  Search -> CLICK"]
    page = Image.open(SEEACT / "images" / "0.jpg")  # the top of the page screenshot (1280 wide)
    click_row = {"action_uid": query["action_uid"], "annotation_id": query["annotation_id"],
                 "confirmed_task": query["confirmed_task"], "website": query["website"], "domain": "Service",
                 "subdomain": "Local services", "operation": json.dumps(query["operation"]),
                 "pos_candidates": [_candidate_json(c) for c in pos],
                 "neg_candidates": [_candidate_json(c) for c in neg],
                 "action_reprs": reprs, "target_action_index": str(len(reprs) - 1), "screenshot": page}
    box = next(c for c in neg if c["backend_node_id"] == SEARCH_BOX)
    type_row = dict(click_row, action_uid="derived-type-step",
                    operation=json.dumps({"op": "TYPE", "original_op": "TYPE", "value": "wedding photographer"}),
                    pos_candidates=[_candidate_json(box)],
                    neg_candidates=[_candidate_json(c) for c in pos + neg if c["backend_node_id"] != SEARCH_BOX],
                    target_action_index="0")
    features = datasets.Features({
        **{k: datasets.Value("string") for k in ("action_uid", "annotation_id", "confirmed_task", "website", "domain",
                                                 "subdomain", "operation", "target_action_index")},
        "pos_candidates": datasets.Sequence(datasets.Value("string")),
        "neg_candidates": datasets.Sequence(datasets.Value("string")),
        "action_reprs": datasets.Sequence(datasets.Value("string")),
        "screenshot": datasets.Image()})
    rows = [type_row, click_row]
    ds = datasets.Dataset.from_dict({k: [r[k] for r in rows] for k in features}, features=features)
    (root / "data").mkdir(parents=True)
    ds.to_parquet(str(root / "data" / "test_task-00000-of-00001.parquet"))
    return root


class Answers:
    """An agent that gives fixed answers in its declared coordinate frame, parsed by the shared parser."""

    name = "answers"

    def __init__(self, answers: dict[str, list[str]], frame=None):
        self.answers, self.frame = answers, frame or Absolute()
        self.seen: list[tuple[str, tuple[int, int]]] = []

    async def start(self, context):
        self.context, self.queue = context, list(self.answers[context.task_id.split("_", 1)[1]])

    async def act(self, observation):
        self.seen.append((observation.instruction, observation.screen_size))
        text = self.queue.pop(0) if self.queue else "done()"
        action = self.context.action_set.parse(text, frame=self.frame, screen_size=observation.screen_size)
        return AgentStep(action, text=text, extra={"frame": self.frame.spec})


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return build_dataset(tmp_path_factory.mktemp("m2w"))


def test_rows_read_from_the_published_layout(data):
    steps = list(iter_steps(data, "test_task"))
    assert [s.op for s in steps] == ["TYPE", "CLICK"]
    click = steps[1]
    assert [c.backend_node_id for c in click.positives] == ["8635"]
    assert click.positives[0].box == pytest.approx((587, 596.59375, 680, 650.59375))
    assert click.previous_actions == ["[textbox]  Search on Thumbtack -> TYPE: wedding photographer",
                                      "[textbox]  Zip code -> TYPE: 10203"]
    assert steps[0].previous_actions == [] and steps[0].value == "wedding photographer"
    assert len(click.candidates) == 1 + 467


def test_a_save_to_disk_copy_reads_the_same(data, tmp_path):
    import datasets

    parquet = str(next((data / "data").glob("*.parquet")))
    datasets.DatasetDict({"test_task": datasets.Dataset.from_parquet(parquet)}).save_to_disk(str(tmp_path / "disk"))
    steps = list(iter_steps(tmp_path / "disk", "test_task"))
    assert [s.key for s in steps] == [s.key for s in iter_steps(data, "test_task")]
    with pytest.raises(ValueError, match="has no split 'test_domain'"):
        list(iter_steps(tmp_path / "disk", "test_domain"))


def test_click_inside_the_gold_search_button_scores_element_and_step(data, tmp_path):
    steps = list(iter_steps(data, "test_task"))[1:]
    agent = Answers({"c69cbea4-7231-42f7-b5fc-e0fac8f781e9": ["click(x=633, y=623)", "done()"]})
    results = run_split(steps, lambda: agent, tmp_path, "test_task")
    [row] = results["steps"]
    assert row["predicted_element"] == "8635" and row["element_correct"] and row["step_success"]
    assert row["op_f1"] == 1.0 and row["predicted_operation"] == "CLICK" and row["viewport_top"] == 0
    m = results["metrics"]
    assert (m["element_acc"], m["op_f1"], m["step_sr"], m["task_sr"]) == (1.0, 1.0, 1.0, 1.0)
    instruction, size = agent.seen[0]
    assert size == (1280, 720) and "Zip code -> TYPE: 10203" in instruction
    assert (tmp_path / "test_task" / "report.html").is_file()


def test_click_elsewhere_scores_zero(data, tmp_path):
    steps = list(iter_steps(data, "test_task"))[1:]
    agent = Answers({"c69cbea4-7231-42f7-b5fc-e0fac8f781e9": ["click(x=300, y=623)", "done()"]})  # the search box
    [row] = run_split(steps, lambda: agent, tmp_path, "test_task")["steps"]
    assert row["predicted_element"] == SEARCH_BOX
    assert not row["element_correct"] and not row["step_success"] and row["op_f1"] == 1.0


def test_type_with_the_wrong_value_gets_partial_operation_f1(data, tmp_path):
    steps = list(iter_steps(data, "test_task"))
    answers = {"derived-type-step": ['click(x=290, y=623)', 'type(text="wedding planner")'],
               "c69cbea4-7231-42f7-b5fc-e0fac8f781e9": ["click(x=633, y=623)", "done()"]}
    results = run_split(steps, lambda: Answers(answers), tmp_path, "test_task")
    typed = results["steps"][0]
    assert typed["predicted_operation"] == "TYPE wedding planner"
    assert typed["gold_operation"] == "TYPE wedding photographer"
    assert typed["element_correct"] and typed["op_f1"] == pytest.approx(2 / 3) and not typed["step_success"]
    m = results["metrics"]  # one task of two steps: macro = mean over its steps; the task failed
    assert m["tasks"] == 1 and m["steps"] == 2
    assert m["element_acc"] == 1.0 and m["op_f1"] == pytest.approx((2 / 3 + 1) / 2)
    assert m["step_sr"] == 0.5 and m["task_sr"] == 0.0


def test_frames_map_to_page_pixels(data, tmp_path):
    steps = list(iter_steps(data, "test_task"))[1:]
    # 0-1000 grid over the 1280x720 viewport: the button centre (633, 623) is (494.5, 865.3) -> (495, 866)
    agent = Answers({"c69cbea4-7231-42f7-b5fc-e0fac8f781e9": ["click(x=495, y=866)", "done()"]}, Normalized1000())
    [row] = run_split(steps, lambda: agent, tmp_path, "test_task")["steps"]
    assert row["element_correct"] and row["frame"] == "normalized_1000"


def test_runs_resume_and_metrics_are_macro_over_tasks(data, tmp_path):
    steps = list(iter_steps(data, "test_task"))
    answers = {"derived-type-step": ['click(x=290, y=623)', 'type(text="wedding photographer")'],
               "c69cbea4-7231-42f7-b5fc-e0fac8f781e9": ["click(x=633, y=623)", "done()"]}
    first = run_split(steps[:1], lambda: Answers(answers), tmp_path, "test_task")
    assert first["metrics"]["task_sr"] == 1.0
    agent = Answers(answers)
    both = run_split(steps, lambda: agent, tmp_path, "test_task")
    assert len(agent.seen) == 2  # only the second step was played: one click and one done()
    assert both["metrics"]["task_sr"] == 1.0
    rows = [dict(r, annotation_id="other-task", step_success=False, element_correct=False, op_f1=0.0)
            for r in both["steps"][:1]]
    mixed = aggregate(both["steps"] + rows)
    assert mixed["tasks"] == 2 and mixed["element_acc"] == 0.5 and mixed["task_sr"] == 0.5
    assert mixed["micro"]["element_acc"] == pytest.approx(2 / 3)


def test_metric_definitions():
    assert op_f1("CLICK", "CLICK") == 1.0 and op_f1("", "") == 1.0 and op_f1("", "CLICK") == 0.0
    assert op_f1("TYPE 10203", "CLICK") == 0.0
    assert op_f1("SELECT Queen", "SELECT Queen bed") == pytest.approx(0.8)
    assert parse_box("1,2,3,4") == (1, 2, 4, 6) and parse_box("0,0,0,5") is None and parse_box(None) is None
    assert viewport_top(7000, 1500, 720) == 1440 and viewport_top(2529, 2500, 720) == 2529 - 720
    assert viewport_top(500, 300, 720) == 0


def test_bad_rows_name_the_problem():
    with pytest.raises(ValueError, match=r"missing columns \['action_uid', 'confirmed_task', 'operation'"):
        step_from_row({"annotation_id": "a"}, "test_task row 3")
    row = {"annotation_id": "a", "action_uid": "b", "confirmed_task": "t",
           "operation": '{"op": "CLICK", "value": ""}',
           "pos_candidates": ["{not json"], "neg_candidates": [], "action_reprs": [], "target_action_index": "0",
           "screenshot": None}
    with pytest.raises(ValueError, match="row 3: candidate is not valid JSON"):
        step_from_row(row, "row 3")
    with pytest.raises(ValueError, match="row 3: operation must hold 'op' and 'value'"):
        step_from_row(dict(row, operation='{"op": "CLICK"}'), "row 3")
    with pytest.raises(FileNotFoundError, match="no test_domain-"):
        list(iter_steps(SEEACT, "test_domain"))


def test_mintgym_eval_runs_the_split_with_the_vlm_agent_and_report_prints_the_paper_columns(data, tmp_path,
                                                                                             serve_app):
    spec = importlib.util.spec_from_file_location("m2w_model_server", REPO / "tests" / "agents" / "model_server.py")
    server_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(server_module)
    server = serve_app(server_module.create_app())
    script = ["click(x=290, y=623)", 'type(text="wedding photographer")', "click(x=633, y=623)", "done()"]
    httpx.post(f"{server}/control/m2w", json=script).raise_for_status()  # the TYPE step, then the CLICK step
    args = ["eval", "--suite", "mind2web-test-task", "--data", str(data), "--agent", "vlm", "--engine", "openai",
            "--base-url", f"{server}/script-m2w/v1", "--out", str(tmp_path / "run")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "test_task      1      2     100.0   100.0    100.0  100.0" in result.output
    saved = tmp_path / "run" / "test_task" / "results.json"
    assert json.loads(saved.read_text())["frames"] == ["absolute"]
    report = CliRunner().invoke(app, ["report", "mind2web", "--results", str(saved)])
    assert report.exit_code == 0 and "Ele. Acc" in report.output and "100.0" in report.output
    bad = CliRunner().invoke(app, [*args[:-1], str(tmp_path / "other"), "--suite-option", "bogus=1"])
    assert bad.exit_code == 2 and "mind2web-test-task has no suite option 'bogus'" in bad.output
    assert not (tmp_path / "other").exists()


def test_a_split_folder_is_resumed_only_by_the_run_that_made_it(data, tmp_path):
    from mintgym.errors import MintGymError

    steps = list(iter_steps(data, "test_task"))
    answers = {"derived-type-step": ['click(x=290, y=623)', 'type(text="wedding photographer")'],
               "c69cbea4-7231-42f7-b5fc-e0fac8f781e9": ["click(x=633, y=623)", "done()"]}
    run_split(steps, lambda: Answers(answers), tmp_path, "test_task", describe={"agent": "a"})
    before = (tmp_path / "test_task" / "steps.jsonl").read_bytes()
    agent = Answers(answers)
    with pytest.raises(MintGymError, match=r"test_task was made by --agent a; this run is --agent b: give another"):
        run_split(steps, lambda: agent, tmp_path, "test_task", describe={"agent": "b"})
    assert agent.seen == [] and (tmp_path / "test_task" / "steps.jsonl").read_bytes() == before
    run_split(steps, lambda: agent, tmp_path, "test_task", describe={"agent": "a"})
    assert agent.seen == []  # resumed: every step was recorded
    other = tmp_path / "not-mind2web"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(MintGymError, match=r"is not empty and holds no Mind2Web split folders"):
        run_split(steps, lambda: agent, other, "test_task")
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    run_split(steps, lambda: Answers(answers), tmp_path / "d", "test_task", dataset="/d")
    with pytest.raises(MintGymError, match=r"test_task was made by --data /d; this run is --data /e"):
        run_split(steps, lambda: agent, tmp_path / "d", "test_task", dataset="/e")
    assert agent.seen == []


TYPE_KEY = "derived-type-step"
CLICK_KEY = "c69cbea4-7231-42f7-b5fc-e0fac8f781e9"


def _run(data, out, type_answers, click_answers=("click(x=633, y=623)", "done()"), **options):
    from mintgym.evals.mind2web.harness import run_suite

    agent = Answers({TYPE_KEY: list(type_answers), CLICK_KEY: list(click_answers)})
    table = run_suite("mind2web-test-task", data=data, make_agent=lambda: agent, out=out,
                      suite_options={k: str(v) for k, v in options.items()})
    return table, json.loads((out / "test_task" / "results.json").read_text())


@pytest.mark.parametrize(("answer", "said", "f1"),
                         [('select(text="wedding photographer")', "SELECT wedding photographer", 2 / 3),
                                                   ('type(text="")', "TYPE", 0.5)])
def test_the_agent_chooses_its_operation_select_and_empty_type_included(data, tmp_path, answer, said, f1):
    _, results = _run(data, tmp_path, ["click(x=290, y=623)", answer])
    typed = results["steps"][0]
    assert typed["predicted_operation"] == said and typed["element_correct"] and typed["op_f1"] == pytest.approx(f1)


def test_a_type_without_a_click_names_no_element_and_scores_nothing(data, tmp_path):
    _, results = _run(data, tmp_path, ['type(text="wedding photographer")'])
    typed = results["steps"][0]
    assert (typed["element_correct"], typed["op_f1"], typed["official_prediction"]) == (False, 0.0,
                                                                                        [typed["key"], "", ""])
    assert typed["seeclick"] == {"Ele_match": False, "Op_match": True, "Op_F1": [0, 3]}


def test_the_top_k_cut_and_the_official_files(data, tmp_path):
    # the real row's candidates carry the ranker's ranks: its positive ranks 2; the derived TYPE target ranks 10
    table, results = _run(data, tmp_path, ["click(x=290, y=623)", 'type(text="wedding photographer")'], top_k=3)
    cut, clicked = results["steps"]
    assert not cut["reached_model"] and cut["op_f1"] == 0 and clicked["step_success"]
    folder = tmp_path / "test_task"
    assert json.loads((folder / "test_task_predictions_top3.json").read_text()) == [
        [cut["key"], "", ""], [clicked["key"], "8635", "CLICK "]]
    official = json.loads((folder / "test_task_results_top3.json").read_text())
    assert official["element_acc"] == 0.5 and official["marco_step_acc"] == 0.5
    assert official["error_ratio"] == {"1": 1.0}
    assert table.startswith("Mind2Web, official multiple-choice protocol") and "50.0" in table
    rescored = CliRunner().invoke(app, ["report", "mind2web", "--predictions",
                                        str(folder / "test_task_predictions_top3.json"),
                                        "--data", str(data), "--split", "test_task", "--top-k", "3"])
    assert rescored.exit_code == 0 and rescored.output.strip() == table, rescored.output
    neither = CliRunner().invoke(app, ["report", "mind2web"])
    assert neither.exit_code == 2 and "give --results, or --predictions with --data and --split" in neither.output


def test_a_ranks_file_cuts_what_it_ranks_low(data, tmp_path):
    steps = list(iter_steps(data, "test_task"))
    ranks = {s.key: {c.backend_node_id: (60 if c.positive and s.action_uid == CLICK_KEY else 0) for c in s.candidates}
             for s in steps}
    (tmp_path / "ranks.json").write_text(json.dumps({"scores": {}, "ranks": ranks}))
    _, results = _run(data, tmp_path / "run", ["click(x=290, y=623)", 'type(text="wedding photographer")'],
                      scores=tmp_path / "ranks.json")
    assert [r["reached_model"] for r in results["steps"]] == [True, False]
    assert results["ranks"] == str(tmp_path / "ranks.json") and results["metrics"]["micro"]["step_sr"] == 0.5
    assert results["metrics"]["step_sr"] == 1.0  # the cut last step is left out of the macro figures, as officially


def test_suite_options_are_checked(data, tmp_path):
    with pytest.raises(ValueError, match=r"mind2web-test-task has no suite option 'bogus'; its options: protocol, "
                                         r"scores"):
        _run(data, tmp_path, [], bogus=1)
    with pytest.raises(ValueError, match=r"suite option protocol: Input should be 'official' or 'seeclick'"):
        _run(data, tmp_path, [], protocol="pixel")
    assert not (tmp_path / "test_task").exists()


def test_the_seeclick_protocol_headlines_its_own_figures(data, tmp_path):
    table, results = _run(data, tmp_path, ["click(x=290, y=623)", 'type(text="WEDDING photographer")'],
                          protocol="seeclick")
    assert table.splitlines()[0] == "Mind2Web, SeeClick's protocol (njucckevin/SeeClick agent_tasks/mind2web_test.py)"
    s = results["seeclick"]
    assert s["Element Acc"] == 1.0 and s["Step Success"] == 1.0 and s["Operation F1 cate"] == [1.0, None, 1.0]
    assert s["Operation F1"] is None  # no SELECT step: SeeClick's mean over op types is NaN
    assert results["metrics"]["op_f1"] == pytest.approx((2 / 3 + 1) / 2)  # case-sensitive officially
    saved = tmp_path / "test_task" / "results.json"
    report = CliRunner().invoke(app, ["report", "mind2web", "--results", str(saved), "--protocol", "seeclick"])
    assert report.exit_code == 0 and "Ep. SR" in report.output and "100.0" in report.output
    official = CliRunner().invoke(app, ["report", "mind2web", "--results",
                                        str(tmp_path / "test_task" / "test_task_results_top50.json")])
    assert official.exit_code == 0 and "official multiple-choice" in official.output, official.output
    bad = CliRunner().invoke(app, ["report", "mind2web", "--results", str(saved), "--protocol", "pixel"])
    assert bad.exit_code == 2 and "unknown Mind2Web protocol 'pixel'" in bad.output
