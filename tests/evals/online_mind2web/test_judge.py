"""WebJudge against a scripted OpenAI-compatible judge served on loopback, on a result folder in the
authors' layout (the real example result of ../shared/data with generated screenshots), with the miniature
repository's placeholder prompts or MintGym's fallback; ``mintgym report webjudge`` and the result format
written from a MintGym trajectory."""

from __future__ import annotations

import base64
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from fastapi import FastAPI, Request
from PIL import Image
from typer.testing import CliRunner

from mintgym.cli import app
from mintgym.evals.online_mind2web.judge import WebJudge, judge_results
from mintgym.evals.online_mind2web.official import load_official
from mintgym.evals.online_mind2web.prompts import FALLBACK_LABEL, mintgym_fallback
from mintgym.evals.online_mind2web.report import load_verdicts
from mintgym.evals.online_mind2web.results import OnlineTask, read_result, write_result
from mintgym.inference.openai import OpenAIEngine
from mintgym.trajectory.store import TrajectoryWriter
from mintgym.trajectory.types import StepRecord, Trajectory

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "online_mind2web"
EXAMPLE = DATA / "example_result_fb7b4f784cfde003e2548fdf4e8d6b4f.json"
TASKS = DATA / "Online_Mind2Web.v1_2025-04.json"
RED, GREEN, BLUE = (220, 30, 30), (30, 200, 30), (30, 30, 220)


def _colour(url: str) -> tuple[int, int, int]:
    raw = base64.b64decode(url.split(",", 1)[1])
    pixels = np.asarray(Image.open(io.BytesIO(raw)).convert("RGB"), float)
    mean = pixels.reshape(-1, 3).mean(axis=0)
    return min((RED, GREEN, BLUE), key=lambda c: float(np.linalg.norm(mean - np.asarray(c))))


def judge_app(calls: list[dict], systems: tuple[str, str]) -> FastAPI:
    """A scripted judge model: key points; red screenshots score 5, green 2, blue get no score; the verdict
    is success only when exactly the red screenshots came back with their thoughts."""
    api = FastAPI()

    @api.get("/v1/models")
    def models():
        return {"object": "list", "data": [{"id": "scripted-judge", "object": "model"}]}

    @api.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        system = body["messages"][0]["content"]
        parts = body["messages"][1]["content"]
        text = " ".join(p["text"] for p in parts if p["type"] == "text")
        images = [_colour(p["image_url"]["url"]) for p in parts if p["type"] == "image_url"]
        calls.append({"system": system, "text": text, "images": images, "body": body})
        if system == systems[0]:
            answer = "**Key Points**:\n\n  1. Open Discogs support\n  2. Overview of the submission of releases"
        elif system == systems[1]:
            answer = {RED: "**Reasoning**: The guidelines overview page is open.\n\n**Score**: 5",
                      GREEN: "**Reasoning**: A cookie banner.\n**Score**: 2"}.get(images[0], "I cannot tell.")
        else:
            ok = images == [RED, RED] and "guidelines overview page is open" in text
            answer = f"Thoughts: checked both key points.\nStatus: {'success' if ok else 'failure'}"
        return {"id": "x", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                             "finish_reason": "stop"}]}

    return api


@pytest.fixture
def served(serve_app, mini):
    calls: list[dict] = []
    return serve_app(judge_app(calls, (mini.key_points_system, mini.image_system))), calls


def _result_folder(root: Path) -> Path:
    result = json.loads(EXAMPLE.read_text())
    folder = root / result["task_id"]
    (folder / "trajectory").mkdir(parents=True)
    shutil.copyfile(EXAMPLE, folder / "result.json")
    for name, colour in (("0.png", GREEN), ("1.png", RED), ("2.png", BLUE), ("10.png", RED)):
        Image.fromarray(np.full((60, 80, 3), colour, np.uint8)).save(folder / "trajectory" / name)
    return folder


def test_webjudge_asks_with_the_copy_s_prompts_and_keeps_screenshots_rated_3_or_more(tmp_path, served, miniature,
                                                                                     mini):
    url, calls = served
    folder = _result_folder(tmp_path / "results")
    prompts = load_official(miniature)
    verdict = WebJudge(OpenAIEngine(url, token_ids="off"), prompts).judge_folder(folder)
    assert verdict.success and verdict.predicted_label == 1
    assert [(r.image, r.Score) for r in verdict.image_judge_record] == [("0.png", 2), ("1.png", 5), ("2.png", 0),
                                                                       ("10.png", 5)]
    assert verdict.kept_images == ["1.png", "10.png"]
    assert verdict.key_points == "\n1. Open Discogs support\n2. Overview of the submission of releases"
    assert calls[0]["system"] == mini.key_points_system
    assert calls[0]["text"] == f"Task: {json.loads(EXAMPLE.read_text())['task']}"
    final = calls[-1]
    assert final["system"] == mini.verdict_system and final["images"] == [RED, RED]
    assert final["text"] == verdict.input_text and "|A=1. <div role=\"button\"> -> CLICK" in final["text"]
    assert final["text"].endswith("|S=1. The guidelines overview page is open.\n2. The guidelines overview page is "
                                  "open.")
    assert all(c["body"]["temperature"] == 0.0 and c["body"]["max_tokens"] == 512 for c in calls)
    assert all("logprobs" not in c["body"] for c in calls)
    assert len(calls) == 1 + 4 + 1  # key points, one rating per screenshot, the verdict
    assert verdict.prompts == prompts.label and verdict.judge["commit"] == prompts.commit


def test_the_copy_s_token_limits_and_max_image_are_used(tmp_path, served, mini):
    url, calls = served
    prompts = load_official(mini.build(tmp_path / "repo", max_image=1, tokens=300, key_points_tokens=2048))
    verdict = WebJudge(OpenAIEngine(url, token_ids="off"), prompts).judge_folder(_result_folder(tmp_path / "r"))
    assert [c["body"]["max_tokens"] for c in calls] == [2048, 300, 300, 300, 300, 300]
    assert verdict.kept_images == ["1.png"] and not verdict.success  # MAX_IMAGE 1 keeps one red screenshot
    assert WebJudge(OpenAIEngine(url, token_ids="off"), prompts, max_new_tokens=99).judge_folder(
        _result_folder(tmp_path / "s")).success is False
    assert {c["body"]["max_tokens"] for c in calls[6:]} == {99}


def test_judge_results_writes_verdicts_the_report_reads_and_refuses_another_judge(tmp_path, served, miniature):
    url, calls = served
    folder = _result_folder(tmp_path / "results")
    judge = WebJudge(OpenAIEngine(url, token_ids="off"), load_official(miniature))
    assert [v.success for v in judge_results(tmp_path / "results", judge)] == [True]
    assert json.loads((folder / "judge.json").read_text())["predicted_label"] == 1
    assert [v.success for v in judge_results(tmp_path / "results", judge)] == [True] and len(calls) == 6  # read back
    assert load_verdicts(tmp_path / "results") == {folder.name: 1}
    other = WebJudge(OpenAIEngine(url, token_ids="off"), load_official(miniature), score_threshold=4)
    with pytest.raises(ValueError, match=r"judge.json was judged by another judge \(score_threshold 3 vs 4\)"):
        judge_results(tmp_path / "results", other)
    fallback = WebJudge(OpenAIEngine(url, token_ids="off"), mintgym_fallback())
    with pytest.raises(ValueError, match=r"another judge \(commit '[0-9a-f]{40}' vs None, prompts 'official' vs "
                                         r"'mintgym-fallback', sha256"):
        judge_results(tmp_path / "results", fallback)
    (tmp_path / "results" / "stray").mkdir()
    with pytest.raises(ValueError, match="stray has no result.json"):
        judge_results(tmp_path / "results", judge)


def test_the_fallback_wording_is_labelled_on_every_verdict(tmp_path, serve_app):
    calls: list[dict] = []
    fallback = mintgym_fallback()
    url = serve_app(judge_app(calls, (fallback.key_points_system, fallback.image_system)))
    verdict = WebJudge(OpenAIEngine(url, token_ids="off"), fallback).judge_folder(_result_folder(tmp_path))
    assert verdict.success and verdict.prompts == FALLBACK_LABEL and verdict.judge["prompts"] == "mintgym-fallback"
    assert "not the authors'" in FALLBACK_LABEL


def test_write_result_from_a_trajectory(tmp_path):
    task = OnlineTask("fb7b4f784cfde003e2548fdf4e8d6b4f", "Open the page ...", "https://www.discogs.com/", "easy")
    writer = TrajectoryWriter(tmp_path / "traj", Trajectory("t0", "online-mind2web/" + task.task_id, "web",
                                                               task.task, "vlm"))
    shots = [np.full((40, 50, 3), v, np.uint8) for v in (10, 20)]
    actions = [{"type": "click", "x": 5, "y": 6}, {"type": "done", "answer": "The overview page is open"}]
    for i, (shot, action) in enumerate(zip(shots, actions, strict=True)):
        writer.step(StepRecord(i, f"f{i}", writer.frame(shot), (50, 40), action, text=f"thinking {i}"))
    writer.trajectory.final_screenshot = writer.frame(np.full((40, 50, 3), 30, np.uint8))
    path = writer.close()
    folder = write_result(tmp_path / "out", task, path)
    assert json.loads((folder / "result.json").read_text()) == {
        "task_id": task.task_id, "task": task.task, "final_result_response": "The overview page is open",
        "action_history": ["click(x=5, y=6)"], "thoughts": ["thinking 0", "thinking 1"]}
    result = read_result(folder)
    assert [p.name for p in result.screenshots] == ["0.png", "1.png", "2.png"]
    assert np.asarray(Image.open(result.screenshots[2]))[0, 0, 0] == 30
    with pytest.raises(FileNotFoundError, match="no result.json"):
        read_result(tmp_path)


def test_cli_webjudge_names_its_prompts_judges_and_prints_rates(tmp_path, served, miniature):
    url, _ = served
    _result_folder(tmp_path / "results")
    runner = CliRunner(env={"MINTGYM_WEBJUDGE_ROOT": None})  # a copy named in the environment would count
    out = runner.invoke(app, ["report", "webjudge", "--results", str(tmp_path / "results"), "--base-url", url,
                              "--webjudge-root", str(miniature), "--tasks", str(TASKS), "--agent", "example"])
    assert out.exit_code == 0, out.output
    label = load_official(miniature).label
    assert out.output.count(f"WebJudge prompts: {label}") == 2  # when judging, and over the rates
    assert "1/1 tasks judged successful" in out.output
    assert next(line for line in out.output.splitlines() if line.startswith("example")).split()[5] == "100.0"
    neither = runner.invoke(app, ["report", "webjudge", "--results", str(tmp_path / "results"), "--base-url", url])
    assert neither.exit_code == 2 and "give exactly one of --webjudge-root" in neither.output
    missing = runner.invoke(app, ["report", "webjudge", "--results", str(tmp_path / "results"), "--base-url", url,
                                  "--webjudge-root", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "nowhere: no such folder" in missing.output
    not_it = runner.invoke(app, ["report", "webjudge", "--results", str(tmp_path / "results"), "--base-url", url,
                                 "--webjudge-root", str(tmp_path)])
    assert not_it.exit_code == 2 and "is not a copy of OSU-NLP-Group/Online-Mind2Web" in not_it.output
    fallback = runner.invoke(app, ["report", "webjudge", "--results", str(tmp_path / "results"), "--base-url", url,
                                   "--mintgym-prompts", "--out", str(tmp_path / "fallback")])
    assert fallback.exit_code == 0, fallback.output
    assert f"WebJudge prompts: {FALLBACK_LABEL}" in fallback.output
    report = runner.invoke(app, ["report", "online-mind2web", "--verdicts", str(tmp_path / "fallback"),
                                 "--tasks", str(TASKS)])
    assert report.exit_code == 0 and f"WebJudge prompts: {FALLBACK_LABEL}" in report.output
    empty = runner.invoke(app, ["report", "webjudge", "--results", str(tmp_path / "results" / "x"), "--base-url", url,
                                "--mintgym-prompts"])
    assert empty.exit_code == 2 and "error:" in empty.output
