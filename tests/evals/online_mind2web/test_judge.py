"""WebJudge against a scripted OpenAI-compatible judge served on loopback, on a result folder in the
official layout (the real example result of ../shared/data with generated screenshots), and the result
format written from a MintGym trajectory."""

from __future__ import annotations

import base64
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from fastapi import FastAPI, Request
from mintgym.evals.online_mind2web.judge import (
    WebJudge,
    judge_results,
    parse_key_points,
    parse_score,
    parse_status,
)
from mintgym.evals.online_mind2web.report import load_verdicts
from mintgym.evals.online_mind2web.results import OnlineTask, read_result, write_result
from PIL import Image
from typer.testing import CliRunner

from mintgym.cli import app
from mintgym.inference.openai import OpenAIEngine
from mintgym.trajectory.store import TrajectoryWriter
from mintgym.trajectory.types import StepRecord, Trajectory

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "online_mind2web"
EXAMPLE = DATA / "example_result_fb7b4f784cfde003e2548fdf4e8d6b4f.json"
TASKS = DATA / "Online_Mind2Web.v1_2025-04.json"
RED, GREEN, BLUE = (220, 30, 30), (30, 200, 30), (30, 30, 220)


def _colour(url: str) -> tuple[int, int, int]:
    raw = base64.b64decode(url.split(",", 1)[1])
    pixels = np.asarray(Image.open(io.BytesIO(raw)).convert("RGB"))
    return tuple(int(v) for v in pixels.reshape(-1, 3).mean(axis=0).round())


def judge_app(calls: list[dict]) -> FastAPI:
    """A scripted judge model: key points; red screenshots score 5, green 2, blue get no score; the verdict
    is success only when exactly the red screenshots came back with their notes."""
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
        calls.append({"system": system, "text": text, "images": images, "temperature": body["temperature"]})
        if "explicitly requires" in system:
            answer = "**Key Points**:\n\n  1. Open Discogs support\n  2. Overview of the submission of releases"
        elif "one screenshot" in system:
            answer = {RED: "**Reasoning**: The guidelines overview page is open.\n\n**Score**: 5",
                      GREEN: "Reasoning: A cookie banner.\nScore: 2"}.get(images[0], "I cannot tell.")
        else:
            ok = images == [RED, RED] and "guidelines overview page is open" in text
            answer = f"Thoughts: checked both key points.\nStatus: {'success' if ok else 'failure'}"
        return {"id": "x", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                             "finish_reason": "stop"}]}

    return api


def _result_folder(root: Path) -> Path:
    result = json.loads(EXAMPLE.read_text())
    folder = root / result["task_id"]
    (folder / "trajectory").mkdir(parents=True)
    shutil.copyfile(EXAMPLE, folder / "result.json")
    for name, colour in (("0.png", GREEN), ("1.png", RED), ("2.png", BLUE), ("10.png", RED)):
        Image.fromarray(np.full((60, 80, 3), colour, np.uint8)).save(folder / "trajectory" / name)
    return folder


def test_webjudge_keeps_screenshots_rated_3_or_more_and_reads_the_status(tmp_path, serve_app):
    calls: list[dict] = []
    url = serve_app(judge_app(calls))
    folder = _result_folder(tmp_path / "results")
    judge = WebJudge(OpenAIEngine(url, return_token_ids=False))
    verdict = judge.judge_folder(folder)
    assert verdict.success and verdict.predicted_label == 1
    assert [(r.image, r.score) for r in verdict.ratings] == [("0.png", 2), ("1.png", 5), ("2.png", 0), ("10.png", 5)]
    assert verdict.kept_images == ["1.png", "10.png"]
    assert verdict.key_points == "1. Open Discogs support\n2. Overview of the submission of releases"
    final = calls[-1]
    assert final["images"] == [RED, RED] and "1. <div role=\"button\"> -> CLICK" in final["text"]
    assert "4. <a href=" in final["text"] and all(c["temperature"] == 0.0 for c in calls)
    assert len(calls) == 1 + 4 + 1  # key points, one rating per screenshot, the verdict


def test_judge_results_writes_verdicts_the_report_reads(tmp_path, serve_app):
    calls: list[dict] = []
    url = serve_app(judge_app(calls))
    folder = _result_folder(tmp_path / "results")
    verdicts = judge_results(tmp_path / "results", WebJudge(OpenAIEngine(url, return_token_ids=False)))
    assert [v.success for v in verdicts] == [True]
    assert json.loads((folder / "judge.json").read_text())["predicted_label"] == 1
    again = judge_results(tmp_path / "results", WebJudge(OpenAIEngine(url, return_token_ids=False)))
    assert [v.success for v in again] == [True] and len(calls) == 6  # judged once, then read back
    assert load_verdicts(tmp_path / "results") == {folder.name: 1}
    out = CliRunner().invoke(app, ["report", "online-mind2web", "--verdicts", str(tmp_path / "results"),
                                   "--tasks", str(TASKS), "--agent", "example"])
    assert out.exit_code == 0, out.output
    row = next(line for line in out.output.splitlines() if line.startswith("example")).split()
    assert row[1] == "1" and row[5] == "100.0"


def test_a_stricter_threshold_keeps_fewer_screenshots_and_fails(tmp_path, serve_app):
    calls: list[dict] = []
    url = serve_app(judge_app(calls))
    folder = _result_folder(tmp_path / "results")
    (folder / "trajectory" / "10.png").unlink()
    verdict = WebJudge(OpenAIEngine(url, return_token_ids=False)).judge_folder(folder)
    assert verdict.kept_images == ["1.png"] and not verdict.success
    with pytest.raises(ValueError, match="score_threshold must be from 1 to 5"):
        WebJudge(OpenAIEngine(url), score_threshold=6)


def test_parsers():
    assert parse_score("**Reasoning**: x\n**Score**: 4") == 4 and parse_score("no score") == 0
    assert parse_score("Score: 9 then 3") == 3
    assert parse_status("Thoughts: fine\nStatus: \"success\"") and not parse_status("Status: failure")
    assert not parse_status("success without a status line")
    assert parse_key_points("Key Points:\n  1. a\n\n  2. b") == "1. a\n2. b"


def test_write_result_from_a_trajectory(tmp_path):
    task = OnlineTask("fb7b4f784cfde003e2548fdf4e8d6b4f", "Open the page ...", "https://www.discogs.com/", "easy")
    writer = TrajectoryWriter(tmp_path / "traj", Trajectory("t0", "online-mind2web/" + task.task_id, "web",
                                                               task.task, "vlm"))
    shots = [np.full((40, 50, 3), v, np.uint8) for v in (10, 20)]
    actions = [{"type": "click", "x": 5, "y": 6}, {"type": "done", "answer": "The overview page is open"}]
    for i, (shot, action) in enumerate(zip(shots, actions)):
        writer.step(StepRecord(i, f"f{i}", writer.frame(shot), (50, 40), action, text=f"thinking {i}"))
    writer.trajectory.final_screenshot = writer.frame(np.full((40, 50, 3), 30, np.uint8))
    path = writer.close()
    folder = write_result(tmp_path / "out", task, path)
    result, images = read_result(folder)
    assert result == {"task_id": task.task_id, "task": task.task, "final_result_response": "The overview page is open",
                      "action_history": ["click(x=5, y=6)", 'done(answer="The overview page is open")'],
                      "thoughts": ["thinking 0", "thinking 1"]}
    assert [p.name for p in images] == ["0.png", "1.png", "2.png"]
    assert np.asarray(Image.open(images[2]))[0, 0, 0] == 30
    with pytest.raises(FileNotFoundError, match="no result.json"):
        read_result(tmp_path)


def test_cli_webjudge_judges_a_results_folder_and_prints_rates(tmp_path, serve_app):
    calls: list[dict] = []
    url = serve_app(judge_app(calls))
    _result_folder(tmp_path / "results")
    out = CliRunner().invoke(app, ["report", "webjudge", "--results", str(tmp_path / "results"), "--base-url", url,
                                   "--tasks", str(TASKS), "--agent", "example"])
    assert out.exit_code == 0, out.output
    assert "1/1 tasks judged successful" in out.output
    assert next(line for line in out.output.splitlines() if line.startswith("example")).split()[5] == "100.0"
    empty = CliRunner().invoke(app, ["report", "webjudge", "--results", str(tmp_path / "results" / "x"),
                                     "--base-url", url])
    assert empty.exit_code == 2 and "error:" in empty.output
