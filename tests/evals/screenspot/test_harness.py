"""ScreenSpot loaders on each published layout, and the grounding run with the VLM agent in every
coordinate frame (a scripted model that looks at the image it is shown and answers the target's centre in
its own frame, as Qwen2.5-VL, UI-TARS and 0-1 models do)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from mintgym.agents.vlm import VLMAgent
from mintgym.cli import app
from mintgym.evals.screenspot.data import load_screenspot
from mintgym.evals.screenspot.harness import run_screenspot
from mintgym.inference.base import InferenceEngine
from mintgym.inference.types import Generation, GenerationRequest

REPO = Path(__file__).resolve().parents[3]


def _png(path: Path, size: tuple[int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((size[1], size[0], 3), 200, np.uint8)).save(path)


def _v1_layout(root: Path, version: str) -> None:
    suffix, images = ("_v2", "screenspotv2_image") if version == "v2" else ("", "screenspot_imgs")
    items = {"mobile": [{"img_filename": "m.png", "bbox": [10, 20, 30, 40], "instruction": "open menu",
                         "data_type": "icon", "data_source": "ios"}],
             "web": [{"img_filename": "w.png", "bbox": [100, 50, 60, 20], "instruction": "search",
                      "data_type": "text", "data_source": "shop"}]}
    for split, rows in items.items():
        (root / f"screenspot_{split}{suffix}.json").write_text(json.dumps(rows))
    _png(root / images / "m.png", (200, 400))
    _png(root / images / "w.png", (640, 360))


def _pro_layout(root: Path) -> None:
    (root / "annotations").mkdir(parents=True)
    rows = [{"img_filename": "vscode_macos/a.png", "bbox": [600, 300, 700, 340], "img_size": [1280, 800],
             "instruction": "open the terminal", "instruction_cn": "打开终端", "id": "vscode_macos_0",
             "application": "vscode", "platform": "macos", "group": "Dev", "ui_type": "text"},
            {"img_filename": "vscode_macos/a.png", "bbox": [20, 760, 36, 776], "img_size": [1280, 800],
             "instruction": "settings gear", "instruction_cn": "设置", "id": "vscode_macos_1",
             "application": "vscode", "platform": "macos", "group": "Dev", "ui_type": "icon"}]
    (root / "annotations" / "vscode_macos.json").write_text(json.dumps(rows, ensure_ascii=False))
    _png(root / "images" / "vscode_macos" / "a.png", (1280, 800))


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_v1_and_v2_json_layouts_turn_xywh_into_boxes(tmp_path, version):
    _v1_layout(tmp_path, version)
    samples = {s.id: s for s in load_screenspot(tmp_path)}
    assert set(samples) == {"mobile-0", "web-0"}
    assert samples["mobile-0"].bbox == (10, 20, 40, 60) and samples["mobile-0"].platform == "mobile"
    assert samples["web-0"].bbox == (100, 50, 160, 70) and samples["web-0"].ui_type == "text"
    assert samples["web-0"].benchmark == ("screenspot-v2" if version == "v2" else "screenspot")
    assert samples["web-0"].image().size == (640, 360)


def test_pro_layout_and_chinese_instructions(tmp_path):
    _pro_layout(tmp_path)
    en = load_screenspot(tmp_path)
    assert [s.bbox for s in en] == [(600, 300, 700, 340), (20, 760, 36, 776)]
    assert en[0].group == "Dev" and en[0].img_size == (1280, 800) and en[0].benchmark == "screenspot-pro"
    assert load_screenspot(tmp_path, lang="cn")[0].instruction == "打开终端"


def test_hf_parquet_layout_with_normalized_boxes(tmp_path):
    import datasets

    img = Image.fromarray(np.zeros((100, 200, 3), np.uint8))
    ds = datasets.Dataset.from_dict(
        {"file_name": ["a.png"], "bbox": [[0.1, 0.2, 0.3, 0.4]], "instruction": ["x"], "data_type": ["icon"],
         "data_source": ["android"], "image": [img]},
        features=datasets.Features({"file_name": datasets.Value("string"),
                                    "bbox": datasets.Sequence(datasets.Value("float64")),
                                    "instruction": datasets.Value("string"), "data_type": datasets.Value("string"),
                                    "data_source": datasets.Value("string"), "image": datasets.Image()}))
    (tmp_path / "data").mkdir()
    ds.to_parquet(str(tmp_path / "data" / "test-00000-of-00001.parquet"))
    [sample] = load_screenspot(tmp_path)
    assert sample.bbox == pytest.approx((20, 20, 60, 40)) and sample.platform == "mobile"
    assert sample.image().size == (200, 100)


def test_loader_errors_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="no ScreenSpot data"):
        load_screenspot(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match=r"screenspot_\{mobile,desktop,web\}"):
        load_screenspot(tmp_path)
    (tmp_path / "screenspot_web.json").write_text('[{"img_filename": "a.png", "bbox": [1, 2], "instruction": "x"}]')
    with pytest.raises(ValueError, match=r"screenspot_web.json\[0\]: bbox must be four numbers"):
        load_screenspot(tmp_path)
    with pytest.raises(ValueError, match="unknown ScreenSpot version"):
        load_screenspot(tmp_path, version="v9")


class TargetModel(InferenceEngine):
    """A scripted grounding model: finds the image it was shown and answers the centre of ``box`` (screen
    pixels of a ``screen`` image) in its own output convention: ``pixels`` of the shown image, a 0-1000
    grid, or 0-1 fractions."""

    def __init__(self, boxes: dict[str, tuple[float, float, float, float]], screen: tuple[int, int], style: str):
        self.boxes, self.screen, self.style = boxes, screen, style
        self.shown: list[tuple[int, int]] = []

    @property
    def policy_version(self):
        return None

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        out = []
        for req in requests:
            parts = [p for m in req.messages if isinstance(m["content"], list) for p in m["content"]]
            image = next(np.asarray(p["image"]) for p in parts if p.get("type") == "image")
            text = " ".join(p.get("text", "") for p in parts if p.get("type") == "text")
            box = next(b for instr, b in self.boxes.items() if instr in text)
            h, w = image.shape[:2]
            self.shown.append((w, h))
            cx, cy = (box[0] + box[2]) / 2 / self.screen[0], (box[1] + box[3]) / 2 / self.screen[1]
            if self.style == "pixels":
                answer = f"click(x={int(cx * w)}, y={int(cy * h)})"
            elif self.style == "norm1000":
                answer = f"click(x={round(cx * 1000)}, y={round(cy * 1000)})"
            else:
                answer = f"click(x={cx:.4f}, y={cy:.4f})"
            out.append(Generation(answer, None, None, None, None, "stop"))
        return out


FRAMES = [  # (agent frame, model output style, extra agent options)
    ("absolute", "pixels", {}),
    ("resized_absolute", "pixels", {}),  # Qwen2.5-VL: the image is smart-resized, answers in its pixels
    ("normalized_1000", "norm1000", {}),  # UI-TARS / CogAgent
    ("relative", "relative", {}),
    ("absolute", "pixels", {"max_pixels": 400 * 250}),  # absolute on a downscaled image
]


@pytest.mark.parametrize("frame,style,options", FRAMES, ids=[f"{f}-{s}-{bool(o)}" for f, s, o in FRAMES])
def test_every_coordinate_frame_is_scored_in_screen_pixels(tmp_path, frame, style, options):
    _pro_layout(tmp_path / "data")
    samples = load_screenspot(tmp_path / "data")
    model = TargetModel({s.instruction: s.bbox for s in samples}, (1280, 800), style)
    results = run_screenspot(samples, lambda: VLMAgent(model, frame=frame, **options), tmp_path / "run")
    assert [r["correctness"] for r in results["details"]] == ["correct", "correct"]
    assert results["metrics"]["overall"]["action_acc"] == 1.0
    if frame == "resized_absolute":
        assert model.shown[0] == (1288, 812)  # smart_resize of 1280x800 to multiples of 28
        assert results["frames"] == ["resized_absolute:1288x812"]
    elif options:
        assert model.shown[0][0] * model.shown[0][1] <= 400 * 250
    else:
        assert results["frames"] == [frame]
    assert (tmp_path / "run" / "report.html").read_text().count("<table>") >= 3


def test_a_model_answering_in_another_frame_than_declared_is_scored_wrong(tmp_path):
    _pro_layout(tmp_path / "data")
    samples = load_screenspot(tmp_path / "data")
    model = TargetModel({s.instruction: s.bbox for s in samples}, (1280, 800), "norm1000")
    results = run_screenspot(samples, lambda: VLMAgent(model, frame="absolute"), tmp_path / "run")
    # (640, 400) lands outside the first box; (22, 960) is off the 800-pixel-high screen: a point, so wrong
    assert [r["correctness"] for r in results["details"]] == ["wrong", "wrong"]
    assert results["details"][1]["model_point"] == [22, 960] and results["details"][1]["frame"] == "absolute"
    assert "off the screen" in results["details"][1]["error"]


def test_unparseable_answers_are_wrong_format_and_runs_resume(tmp_path):
    _pro_layout(tmp_path / "data")
    samples = load_screenspot(tmp_path / "data")

    class Chatty(TargetModel):
        def generate(self, requests):
            return [Generation("I think it is the gear icon", None, None, None, None, "stop") for _ in requests]

    first = run_screenspot(samples, lambda: VLMAgent(Chatty({}, (1280, 800), "pixels")), tmp_path / "run")
    assert first["details"][0]["correctness"] == "wrong_format" and first["details"][0]["pred"] is None
    assert first["metrics"]["overall"]["wrong_format_num"] == 2
    predictions = tmp_path / "run" / "predictions.jsonl"
    predictions.write_text(predictions.read_text().splitlines()[0] + "\n")  # as if stopped after one sample
    model = TargetModel({s.instruction: s.bbox for s in samples}, (1280, 800), "pixels")
    again = run_screenspot(samples, lambda: VLMAgent(model, frame="absolute"), tmp_path / "run")
    assert [r["correctness"] for r in again["details"]] == ["wrong_format", "correct"]
    assert len(model.shown) == 1  # the first sample was not asked again
    lines = (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 2 and re.search(r'"frame": "absolute"', lines[1])


def scripted_model_server():
    """The project's scripted OpenAI-compatible model server (tests/agents/model_server.py), loaded by path."""
    spec = importlib.util.spec_from_file_location("m2_model_server", REPO / "tests" / "agents" / "model_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.create_app()


def test_mintgym_eval_runs_the_screenspot_pro_suite_with_the_vlm_agent(tmp_path, serve_app):
    _pro_layout(tmp_path / "data")
    server = serve_app(scripted_model_server())
    # the centres of the two boxes on the 0-1000 grid of the 1280x800 screenshots (UI-TARS style)
    httpx.post(f"{server}/control/pro", json=["click(x=508, y=400)", "click(x=22, y=960)"]).raise_for_status()
    args = ["eval", "--suite", "screenspot-pro", "--data", str(tmp_path / "data"), "--agent", "vlm", "--engine",
            "openai", "--base-url", f"{server}/script-pro/v1", "--frame", "normalized_1000", "--out",
            str(tmp_path / "run")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "group:Dev" in result.output and "overall        2      2             0     100.0" in result.output
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["frames"] == ["normalized_1000"] and saved["config"]["engine"] == "openai"
    rescored = CliRunner().invoke(app, ["report", "screenspot", "--predictions",
                                        str(tmp_path / "run" / "results.json")])
    assert rescored.exit_code == 0 and "2/2 match the stored correctness" in rescored.output
    missing = CliRunner().invoke(app, ["eval", "--suite", "screenspot-pro", "--agent", "vlm"])
    assert missing.exit_code == 2 and "--data is for the data suites" in missing.output
    asked = len(httpx.get(f"{server}/control/requests").json())
    before = (tmp_path / "run" / "predictions.jsonl").read_bytes()
    other = CliRunner().invoke(app, [*args[:-3], "absolute", *args[-2:]])  # --frame absolute into the same --out
    assert other.exit_code == 2 and "was made by --frame normalized_1000; this run is --frame absolute" in other.output
    assert len(httpx.get(f"{server}/control/requests").json()) == asked
    assert (tmp_path / "run" / "predictions.jsonl").read_bytes() == before
    forced = CliRunner().invoke(app, [*args[:-3], "absolute", *args[-2:], "--force"])
    assert forced.exit_code == 0, forced.output
    assert json.loads((tmp_path / "run" / "results.json").read_text())["frames"] == ["absolute"]


def test_a_run_with_another_agent_or_sample_set_is_refused_and_force_starts_afresh(tmp_path):
    from mintgym.errors import MintGymError

    _pro_layout(tmp_path / "data")
    samples = load_screenspot(tmp_path / "data")
    model = TargetModel({s.instruction: s.bbox for s in samples}, (1280, 800), "pixels")
    out = tmp_path / "run"
    run_screenspot(samples, lambda: VLMAgent(model, frame="absolute"), out, describe={"agent": "vlm", "model": "a"})
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(MintGymError, match=r"run was made by --model a; this run is --model b: give another --out"):
        run_screenspot(samples, lambda: VLMAgent(model, frame="absolute"), out, describe={"agent": "vlm", "model": "b"})
    with pytest.raises(MintGymError, match=r"run was made by --data screenspot-pro: 2 samples, .*; this run is --data "
                                           r"screenspot-pro: 1 samples"):
        run_screenspot(samples[:1], lambda: VLMAgent(model, frame="absolute"), out,
                       describe={"agent": "vlm", "model": "a"})
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before and len(model.shown) == 2
    again = run_screenspot(samples[:1], lambda: VLMAgent(model, frame="absolute"), out,
                           describe={"agent": "vlm", "model": "a"}, force=True)
    assert len(again["details"]) == 1 and len(model.shown) == 3
    [aside] = [p for p in tmp_path.iterdir() if p.name.startswith("run.before-")]
    assert {p.name: p.read_bytes() for p in aside.iterdir()} == before


class FixedAnswers(TargetModel):
    """A scripted model: the answer whose key occurs in the prompt's text (the instruction)."""

    def __init__(self, answers: dict[str, str]):
        self.answers = answers

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        texts = [" ".join(p.get("text", "") for m in req.messages if isinstance(m["content"], list)
                          for p in m["content"] if p.get("type") == "text") for req in requests]
        return [Generation(next(a for key, a in self.answers.items() if key in text), None, None, None, None, "stop")
                for text in texts]


def _border_layout(root: Path) -> None:
    """Two 1000x800 samples whose box's right edge is at x = 300 px, and one 3000x2000 with its box on the right
    border."""
    (root / "annotations").mkdir(parents=True)
    common = {"application": "vscode", "platform": "windows", "group": "Dev", "ui_type": "text"}
    rows = [{"img_filename": "a.png", "bbox": [250, 300, 300, 340], "img_size": [1000, 800], "instruction": "save",
             "instruction_cn": "保存", "id": "s0", **common},
            {"img_filename": "a.png", "bbox": [250, 300, 300, 340], "img_size": [1000, 800], "instruction": "open",
             "instruction_cn": "打开", "id": "s1", **common},
            {"img_filename": "b.png", "bbox": [2950, 900, 3000, 960], "img_size": [3000, 2000], "instruction": "close",
             "instruction_cn": "关闭", "id": "s2", **common}]
    (root / "annotations" / "vscode_windows.json").write_text(json.dumps(rows, ensure_ascii=False))
    _png(root / "images" / "a.png", (1000, 800))
    _png(root / "images" / "b.png", (3000, 2000))


def test_the_models_own_numbers_decide_at_box_borders(tmp_path):
    _border_layout(tmp_path / "data")
    samples = load_screenspot(tmp_path / "data")
    relative = FixedAnswers({"save": "click(x=0.3002, y=0.4)", "open": "click(x=0.3, y=0.4)",
                             "close": "click(x=1.0, y=0.465)"})
    results = run_screenspot(samples, lambda: VLMAgent(relative, frame="relative"), tmp_path / "rel")
    # 0.3002 is past the edge at 0.3 (pixel 300 after rounding would be inside); 1.0 is the right border, inside
    assert [r["correctness"] for r in results["details"]] == ["wrong", "correct", "correct"]
    assert results["details"][0]["model_point"] == [0.3002, 0.4] and results["details"][0]["frame"] == "relative"
    # Qwen2.5-VL: x = the resized width (2996 for 3000 px) is the image's right border: inside, as officially
    qwen = FixedAnswers({"save": "click(x=1, y=1)", "open": "click(x=1, y=1)", "close": "click(x=2996, y=925)"})
    results = run_screenspot(samples, lambda: VLMAgent(qwen, frame="resized_absolute"), tmp_path / "qwen")
    assert results["details"][2]["frame"] == "resized_absolute:2996x1988"
    # the agent's pixel frame refuses x = 2996 (its pixels run 0..2995); the official test counts the point
    assert results["details"][2]["correctness"] == "correct" and "outside the image" in results["details"][2]["error"]
    rescored = CliRunner().invoke(app, ["report", "screenspot", "--predictions",
                                        str(tmp_path / "qwen" / "results.json")])
    assert rescored.exit_code == 0 and "3/3 match the stored correctness" in rescored.output


def test_negative_ground_truth_styles_and_languages_run_from_the_cli(tmp_path, serve_app):
    _border_layout(tmp_path / "data")
    server = serve_app(scripted_model_server())
    answers = ["done(success=False)", "click(x=0.28, y=0.4)", "I am not sure"]
    httpx.post(f"{server}/control/neg", json=answers * 2).raise_for_status()
    args = ["eval", "--suite", "screenspot-pro", "--data", str(tmp_path / "data"), "--agent", "vlm", "--engine",
            "openai", "--base-url", f"{server}/script-neg/v1", "--frame", "relative", "--out", str(tmp_path / "run"),
            "--suite-option", "gt_type=negative", "--suite-option", "inst_style=instruction,action"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    details = json.loads((tmp_path / "run" / "results.json").read_text())["details"]
    assert [(d["instruction_style"], d["gt_type"], d["result"], d["correctness"]) for d in details] == [
        (style, "negative", result, verdict) for style in ("instruction", "action")
        for result, verdict in (("negative", "correct"), ("positive", "wrong"), ("wrong_format", "wrong_format"))]
    assert len({d["key"] for d in details}) == 6
    asked = httpx.get(f"{server}/control/requests").json()
    assert "done(success=False) instead of clicking" in json.dumps(asked[0])
    cn = CliRunner().invoke(app, [*args[:-2], "--suite-option", "language=cn"])
    assert cn.exit_code == 2 and "language cn goes only with inst_style=instruction and gt_type=positive" in cn.output
    bad = CliRunner().invoke(app, [*args[:-4], "--suite-option", "gt_type=maybe"])
    assert bad.exit_code == 2 and "maybe is not one of positive, negative or 'all'" in bad.output
    v1 = CliRunner().invoke(app, ["eval", "--suite", "screenspot", "--data", str(tmp_path / "data"), "--agent", "vlm",
                                  "--engine", "openai", "--base-url", f"{server}/script-neg/v1", "--out",
                                  str(tmp_path / "v1"), "--suite-option", "gt_type=negative"])
    assert v1.exit_code == 2 and "screenspot has no suite option 'gt_type'" in v1.output


def test_chinese_instructions_and_one_sample_per_id(tmp_path):
    _border_layout(tmp_path / "data")
    samples = load_screenspot(tmp_path / "data", lang="cn")
    assert [s.instruction for s in samples] == ["保存", "打开", "关闭"]
    assert samples[0].key == "s0|instruction|positive|cn"
    model = FixedAnswers({"保存": "click(x=0.27, y=0.4)", "打开": "click(x=0.27, y=0.4)",
                          "关闭": "click(x=0.99, y=0.46)"})
    results = run_screenspot(samples, lambda: VLMAgent(model, frame="relative"), tmp_path / "run")
    assert [r["correctness"] for r in results["details"]] == ["correct"] * 3
    assert all(r["lang"] == "cn" for r in results["details"])
    with pytest.raises(ValueError, match="two samples are one sample 's0"):
        run_screenspot([samples[0], samples[0]], lambda: VLMAgent(model, frame="relative"), tmp_path / "dup")
