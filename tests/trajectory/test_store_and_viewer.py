"""Trajectories round-trip through JSONL + PNG, and the viewer draws every action where it landed."""

import asyncio
import json

import numpy as np
import pytest
from PIL import Image

from mintgym.agents.scripted import RandomAgent, ScriptedAgent
from mintgym.rollout.runner import EpisodeJob, run_jobs
from mintgym.trajectory.inspector import action_marks, write_run_pages
from mintgym.trajectory.inspector.pages import render_episode
from mintgym.trajectory.inspector.runs import Episode, Run
from mintgym.trajectory.store import export_dataset, load_run, load_trajectory
from mintgym.trajectory.types import StepRecord, Trajectory


@pytest.fixture(scope="module")
def null_url(local_server):
    return local_server("null")


def test_rollout_records_and_loads_back(null_url, tmp_path):
    jobs = [EpisodeJob("null/echo", s, f"echo-{s}") for s in range(3)]
    trajs = asyncio.run(run_jobs(null_url, jobs, ScriptedAgent, concurrency=2, run_dir=tmp_path))
    assert sorted(t.id for t in trajs) == ["echo-0", "echo-1", "echo-2"]
    assert all(t.status == "success" and t.total_reward == 1.0 for t in trajs)
    loaded = {t.id: t for t in load_run(tmp_path)}
    for t in trajs:
        back = loaded[t.id]
        assert back.steps == t.steps and back.status == t.status and back.seed == t.seed
        frame = np.asarray(Image.open(tmp_path / t.id / back.steps[0].screenshot))
        assert frame.shape == (720, 1280, 3)
        assert back.steps[0].frame_id.endswith("-0")


def test_random_agent_episodes_end_and_errors_are_kept(null_url, tmp_path):
    jobs = [EpisodeJob("null/echo", s, f"rand-{s}") for s in range(2)]
    trajs = asyncio.run(run_jobs(null_url, jobs, lambda: RandomAgent(seed=1), run_dir=tmp_path))
    for t in trajs:
        assert t.status == "failure" and 1 <= len(t.steps) <= 50
        assert load_trajectory(tmp_path / t.id).steps == t.steps


def test_viewer_draws_actions_and_escapes_text(null_url, tmp_path):
    traj = Trajectory(id="t", task_id="web/<script>", domain="web", instruction="<b>x</b>", agent="a", status="failure")
    steps = [
        ({"type": "click", "x": 10, "y": 20, "button": "left", "clicks": 2}, "<circle cx=\"10\" cy=\"20\""),
        ({"type": "drag", "x1": 1, "y1": 2, "x2": 30, "y2": 40}, 'x2="30" y2="40"'),
        ({"type": "type", "text": "<img src=x onerror=alert(1)>"}, "type &#x27;&lt;img"),
        ({"type": "key", "keys": ["ctrl", "c"]}, "key ctrl+c"),
        ({"type": "scroll", "x": 5, "y": 5, "dx": 0, "dy": 100}, "scroll at (5, 5)"),
    ]
    for i, (action, _) in enumerate(steps):
        traj.steps.append(StepRecord(index=i, frame_id=f"e-{i}", screenshot=f"frames/{i:04d}.png",
                                     screen_size=(64, 48), action=action, text="<think>", error="bad <x>"))
    page = render_episode(Run(tmp_path, "trajectory", [Episode(tmp_path, ".", traj)]), 0)
    for _, expected in steps:
        assert expected in page
    assert "web/<script>" not in page and "web/&lt;script&gt;" in page
    assert "<img src=x" not in page and "&lt;think&gt;" in page and "<b>x</b>" not in page
    # each step's frame before (marked) and after it (the next step's; the last has none recorded)
    assert page.count('<svg viewBox="0 0 64 48"') == 2 * len(steps) - 1 and "no later frame recorded" in page


def test_run_index_and_dataset_export(null_url, tmp_path):
    asyncio.run(run_jobs(null_url, [EpisodeJob("null/echo", 0, "e0")], ScriptedAgent, run_dir=tmp_path))
    index = write_run_pages(tmp_path)
    assert "e0/index.html" in index.read_text()
    assert "<svg" in (tmp_path / "e0" / "index.html").read_text()
    ds = export_dataset(tmp_path)
    assert len(ds) == 1 and json.loads(ds[0]["action"])["type"] == "done"
    assert ds[0]["seed"] == 0  # what lets a warm start check the dataset against held-out seeds
    assert ds[0]["image"].size == (1280, 720)


def test_bad_step_record_names_file_and_line(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"id": "x", "task_id": "t", "domain": "d", "instruction": "",
                                                    "agent": "a"}))
    (tmp_path / "steps.jsonl").write_text('{"index": 0, "bogus": 1}\n')
    with pytest.raises(ValueError, match=r"steps.jsonl:1: bad step record"):
        load_trajectory(tmp_path)


def test_marks_for_zoom_and_tap():
    svg, caption = action_marks({"type": "zoom", "x1": 1, "y1": 2, "x2": 11, "y2": 22}, (100, 100))
    assert '<rect x="1" y="2" width="10" height="20"' in svg and caption.startswith("zoom")
    svg, caption = action_marks({"type": "tap", "x": 3, "y": 4}, (100, 100))
    assert 'cx="3" cy="4"' in svg
