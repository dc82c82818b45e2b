"""The live Online-Mind2Web run against a loopback site standing in for a task's website (Chromium, no
internet), and its opt-in."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from PIL import Image

from mintgym.errors import MintGymError
from mintgym.evals.online_mind2web.live import hosts_for, run_live, site_url
from mintgym.evals.online_mind2web.results import OnlineTask, read_result
from mintgym.policy import AgentStep

HOME = """<!doctype html><html><body style="margin:0;background:#fff">
<a id="go" href="/overview" style="position:absolute;left:100px;top:100px;width:300px;height:100px;
display:block;background:#00f">Overview of submissions</a></body></html>"""
OVERVIEW = """<!doctype html><html><body style="margin:0;background:#f00"><h1>Overview</h1></body></html>"""


def site() -> FastAPI:
    api = FastAPI()
    api.get("/", response_class=HTMLResponse)(lambda: HOME)
    api.get("/overview", response_class=HTMLResponse)(lambda: OVERVIEW)
    return api


class Clicker:
    """Clicks the link, then ends with an answer."""

    name = "clicker"

    async def start(self, context):
        self.context, self.queue = context, ["click(x=250, y=150)", 'done(answer="the overview is open")']

    async def act(self, observation):
        text = self.queue.pop(0)
        return AgentStep(self.context.action_set.parse(text, screen_size=observation.screen_size), text=text)


@pytest.mark.web
def test_a_live_task_on_a_loopback_site_writes_the_official_result(tmp_path, serve_app):
    url = serve_app(site()) + "/"
    task = OnlineTask("loopback-task", "Open the overview of submissions.", url, "easy")
    [folder] = run_live([task], Clicker, tmp_path, allow_internet=True, max_steps=5)
    result = json.loads((folder / "result.json").read_text())
    assert result["task_id"] == "loopback-task" and result["final_result_response"] == "the overview is open"
    assert result["action_history"] == ["click(x=250, y=150)"]  # factual actions only: the answer stays out
    judged = read_result(folder)
    assert judged.schema_version == "v1" and judged.action_history == result["action_history"]
    images = judged.screenshots
    first, last = (np.asarray(Image.open(p).convert("RGB")) for p in (images[0], images[-1]))
    assert first.shape == (720, 1280, 3) and tuple(first[150, 250]) == (0, 0, 255)  # the link, before
    assert tuple(last[400, 640]) == (255, 0, 0)  # the overview page, after the click
    assert not (folder / "error.txt").exists()
    again = run_live([task], Clicker, tmp_path, allow_internet=True, max_steps=5)  # resumes: nothing is played again
    assert again == [folder] and json.loads((folder / "result.json").read_text()) == result
    with pytest.raises(MintGymError, match=r"was made by --max-steps 5; this run is --max-steps 6: give another --out"):
        run_live([task], Clicker, tmp_path, allow_internet=True, max_steps=6)  # refused before any server starts
    with pytest.raises(MintGymError, match=r"was made by --agent \(not given\); this run is --agent other"):
        run_live([task], Clicker, tmp_path, allow_internet=True, max_steps=5, describe={"agent": "other"})
    assert json.loads((folder / "result.json").read_text()) == result


@pytest.mark.web
def test_the_online_suite_through_mintgym_eval(tmp_path, serve_app):
    from typer.testing import CliRunner

    from mintgym.cli import app

    url = serve_app(site()) + "/"
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([{"task_id": "loop-1", "confirmed_task": "Open the overview.", "website": url,
                                  "reference_length": 2, "level": "medium"}]))
    args = ["eval", "--suite", "online-mind2web", "--data", str(tasks), "--agent", "random", "--max-steps", "2",
            "--out", str(tmp_path / "run")]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2 and "--allow-internet" in refused.output
    result = CliRunner().invoke(app, [*args, "--allow-internet"])
    assert result.exit_code == 0, result.output
    assert "1 tasks played (0 with errors)" in result.output
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["tasks"][0]["task_id"] == "loop-1" and saved["tasks"][0]["level"] == "medium"
    assert (tmp_path / "run" / "results" / "loop-1" / "result.json").is_file()
    assert "loop-1" in (tmp_path / "run" / "report.html").read_text()


def test_live_runs_need_the_opt_in(tmp_path):
    task = OnlineTask("t", "x", "https://www.discogs.com/", "easy")
    with pytest.raises(PermissionError, match="--allow-internet"):
        run_live([task], Clicker, tmp_path, allow_internet=False)
    assert not any(tmp_path.iterdir())


def test_allow_list_of_a_task_site():
    assert hosts_for("https://www.discogs.com/") == ["discogs.com", "www.discogs.com"]
    assert hosts_for(site_url("careers.walmart")) == ["careers.walmart", "www.careers.walmart"]
    assert hosts_for("http://127.0.0.1:8123/") == ["127.0.0.1:8123"]
    with pytest.raises(ValueError, match="no website"):
        site_url("  ")
