"""The inspector's pieces: finding runs, the pages it writes (checked as HTML), the comparison and the server."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from mintgym.cli import app
from mintgym.trajectory.inspector import NotARun, open_run, serve, write_pages, write_run_pages
from mintgym.trajectory.inspector.marks import action_marks, display_scale, frame_html
from mintgym.trajectory.store import TrajectoryWriter, load_trajectory
from mintgym.trajectory.types import StepRecord, Trajectory

PROMPT = [{"role": "system", "content": [{"type": "text", "text": "You are an agent.\n\nActions:\n- click(x, y)"}]},
          {"role": "user", "content": [{"type": "text", "text": "Task: press OK\n\nCurrent screenshot (step 1):"},
                                       {"type": "image", "frame_id": "ep-0", "size": [160, 210]},
                                       {"type": "image", "frame_id": "gone", "size": [80, 105]},
                                       {"type": "text", "text": "What is the next action?"}]}]


def write_episode(run: Path, traj_id: str, status: str, *, task: str = "web/miniwob.click-button", seed: int = 0,
                  steps: int = 2, messages: list | None = None, size: tuple[int, int] = (160, 210),
                  code: str | None = None, extra: dict | None = None) -> Path:
    traj = Trajectory(id=traj_id, task_id=task, domain=task.split("/")[0], instruction="Press <OK>", agent="vlm",
                      seed=seed, status=status, total_reward=1.0 if status == "success" else 0.0,
                      error="the page crashed" if status == "error" else None)
    writer = TrajectoryWriter(run, traj)
    for i in range(steps):
        shot = writer.frame(np.full((size[1], size[0], 3), 30 * i % 256, dtype=np.uint8))
        action = {"type": "python", "code": code} if code else {"type": "click", "x": 150, "y": 5, "button": "left",
                                                                 "clicks": 1}
        writer.step(StepRecord(index=i, frame_id=f"ep-{i}", screenshot=shot, screen_size=size, action=action,
                               text=f"answer {i} <b>", timings={"agent": 1.25, "env": 0.5, "total": 1.8},
                               messages=messages, output="line 1\nline 2" if code else None, extra=extra or {}))
    traj.final_screenshot = writer.frame(np.zeros((size[1], size[0], 3), dtype=np.uint8))
    return writer.close()


def test_missing_empty_and_foreign_folders_are_one_line_errors(tmp_path):
    with pytest.raises(NotARun, match="no such folder"):
        open_run(tmp_path / "nope")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(NotARun, match="is a file"):
        open_run(tmp_path / "file.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(NotARun, match="is empty: no trajectories"):
        open_run(tmp_path / "empty")
    ckpt = tmp_path / "train" / "checkpoints" / "step_10"
    ckpt.mkdir(parents=True)
    (ckpt / "meta.json").write_text("{}")  # a checkpoint's meta.json is not a trajectory
    with pytest.raises(NotARun, match="no trajectories under .*episodes/ folder"):
        open_run(tmp_path / "train")
    with pytest.raises(NotARun, match="no steps.jsonl"):
        open_run(ckpt)
    with pytest.raises(FileNotFoundError, match="no trajectories"):  # what the eval harness catches
        write_run_pages(tmp_path / "train")


def test_cli_view_errors_are_one_line_with_status_2(tmp_path):
    (tmp_path / "empty").mkdir()
    for target, expected in ((tmp_path / "nope", "no such folder"), (tmp_path / "empty", "no trajectories")):
        result = CliRunner().invoke(app, ["view", str(target)])
        assert result.exit_code == 2
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0]


def test_training_episodes_sort_failures_first_and_skip_unreadable_ones(tmp_path):
    out = tmp_path / "train"
    episodes = out / "episodes"
    write_episode(episodes / "step_10", "a", "success", seed=1)
    write_episode(episodes / "step_10", "b", "failure", seed=2)
    write_episode(episodes / "step_20", "c", "error", seed=3)
    broken = write_episode(episodes / "step_20", "d", "success", seed=4)
    (broken / "steps.jsonl").write_text('{"index": 0, "bogus": true}\n')
    (out / "checkpoints").mkdir()
    (out / "checkpoints" / "meta.json").write_text("{}")
    run = open_run(out)
    assert run.kind == "training episodes"
    assert [e.traj.status for e in run.episodes] == ["error", "failure", "success"]
    assert [e.group for e in run.episodes] == ["episodes/step_20", "episodes/step_10", "episodes/step_10"]
    assert len(run.problems) == 1 and run.problems[0].startswith("episodes/step_20/d: ")
    index, _ = write_pages([out])
    page = index.read_text()
    assert page.index("episodes/step_20/c/index.html") < page.index("episodes/step_10/a/index.html")
    assert "<th>folder</th>" in page and "Could not read 1 trajectories" in page
    assert 'data-status="failure"' in page and 'id="f-status"' in page and 'id="f-search"' in page
    assert "<span><b>3</b> episodes</span>" in page and "web: 1/3 succeeded" in page


def test_episode_page_shows_prompt_frames_code_timings_and_navigation(tmp_path):
    run = tmp_path / "run"
    write_episode(run, "first", "failure", messages=PROMPT)
    write_episode(run, "second", "success", task="pytool/count", code="import os\nprint('a')", size=(640, 480))
    write_pages([run])
    first = (run / "first" / "index.html").read_text()
    # the prompt as sent: system text with its newlines, the current frame as a thumbnail, a missing one said so
    assert "You are an agent.\n\nActions:\n- click(x, y)" in first
    assert '<span class="thumb"><a href="frames/0000.png"><img src="frames/0000.png"' in first
    assert "step 0&#x27;s screenshot, shown at 160x210" in first
    assert "an image of 80x105 (frame gone not recorded)" in first
    assert first.count("the same as the step before") == 1  # step 1's system message is folded away
    # before (marked) and after: step 0 shows frames 0 and 1, the last step the final screen
    assert re.search(r'id="step-0".*?src="frames/0000.png".*?src="frames/0001.png"', first, re.DOTALL)
    assert re.search(r'id="step-1".*?src="frames/0001.png".*?src="frames/0002.png"', first, re.DOTALL)
    # the 160x210 frame is enlarged 3x, the caption is text beside it, never inside the SVG
    assert 'style="width:480px"' in first and "class=pix" in first
    svgs = re.findall(r"<svg.*?</svg>", first, re.DOTALL)
    assert svgs and not any("<text" in svg for svg in svgs)
    assert "click (150, 5) left x1" in first and "agent 1.25s" in first and "env 0.50s" in first
    assert "answer 0 &lt;b&gt;" in first and "Press &lt;OK&gt;" in first
    assert 'id="next-episode" href="../second/index.html"' in first and 'href="../index.html"' in first
    second = (run / "second" / "index.html").read_text()
    assert '<pre class=code>import os\nprint(&#x27;a&#x27;)</pre>' in second and "line 1\nline 2" in second
    assert "no model prompt (vlm agent)" in second and 'id="prev-episode" href="../first/index.html"' in second


def test_a_single_trajectory_folder_and_a_decoded_training_prompt(tmp_path):
    folder = write_episode(tmp_path, "one", "success", steps=1, extra={"prompt": "<|im_start|>user look"})
    entry, runs = write_pages([folder])
    assert entry == folder / "index.html" and runs[0].single
    page = entry.read_text()
    assert "the prompt tokens, decoded:" in page and "&lt;|im_start|&gt;user look" in page
    assert 'id="prev-episode"' not in page and "episode 1 of" not in page


def test_old_step_records_without_messages_still_load(tmp_path):
    folder = write_episode(tmp_path, "old", "success", steps=1)
    record = json.loads((folder / "steps.jsonl").read_text())
    for key in ("messages", "output"):
        record.pop(key)
    (folder / "steps.jsonl").write_text(json.dumps(record) + "\n")
    step = load_trajectory(folder).steps[0]
    assert step.messages is None and step.output is None
    assert "no model prompt (vlm agent)" in write_pages([folder])[0].read_text()


def test_two_runs_side_by_side_and_the_server_serves_only_them(tmp_path):
    a, b = tmp_path / "runs" / "model-a", tmp_path / "runs" / "model-b"
    write_episode(a, "x", "success", seed=0)
    write_episode(a, "y", "success", task="web/miniwob.enter-text", seed=0)
    write_episode(b, "x", "failure", seed=0)
    (tmp_path / "runs" / "secret.txt").write_text("not for the browser")
    entry, runs = write_pages([a, b], out=tmp_path / "runs" / "cmp")
    page = entry.read_text()
    assert entry == tmp_path / "runs" / "cmp" / "compare.html"
    assert page.index("miniwob.click-button") < page.index("miniwob.enter-text")  # a failure in any run first
    assert "not run" in page and 'href="../model-b/x/index.html"' in page
    pair = (entry.parent / "compare" / "0001.html").read_text()
    assert 'src="../../model-a/x/frames/0000.png"' in pair and 'src="../../model-b/x/frames/0000.png"' in pair
    for href in re.findall(r'(?:href|src)="([^"#]+)"', pair):
        assert (entry.parent / "compare" / href).resolve().exists(), href
    server, url = serve([r.root for r in runs] + [entry.parent], entry, 0)
    try:
        base = url.rsplit("/cmp/", 1)[0]
        assert url.endswith("/cmp/compare.html") and httpx.get(url).status_code == 200
        assert httpx.get(f"{base}/model-a/x/frames/0000.png").headers["content-type"] == "image/png"
        assert httpx.get(f"{base}/secret.txt").status_code == 404
        assert httpx.get(f"{base}/model-a/../secret.txt").status_code == 404
    finally:
        server.shutdown()
        server.server_close()


def test_marks_and_scale():
    svg, caption = action_marks({"type": "zoom", "x1": 1, "y1": 2, "x2": 11, "y2": 22}, (100, 100))
    assert '<rect x="1" y="2" width="10" height="20"' in svg and caption.startswith("zoom")
    svg, caption = action_marks({"type": "python", "code": "a = 1\nprint(a)"}, (100, 100))
    assert svg == "" and caption == "python: a = 1 …"
    assert [display_scale(s) for s in [(160, 210), (1280, 720), (300, 200), (480, 10)]] == [3, 1, 2, 1]
    html = frame_html("f.png", (1280, 720), {"type": "click", "x": 1279, "y": 0}, "x")
    assert 'style="width:1280px"' in html and "class=pix" not in html and 'cx="1279" cy="0"' in html


def test_cli_view_of_two_eval_runs_writes_the_comparison(tmp_path):
    for name, status in (("one", "success"), ("two", "failure")):
        out = tmp_path / name / "eval"
        write_episode(out / "trajectories", "x", status)
        (out / "results.json").write_text("{}")
    result = CliRunner().invoke(app, ["view", str(tmp_path / "one" / "eval"), str(tmp_path / "two" / "eval")])
    assert result.exit_code == 0, result.output
    assert f"wrote 2 episode pages; open {tmp_path / 'one' / 'eval' / 'compare.html'}" in result.output
    assert open_run(tmp_path / "one" / "eval").kind == "eval run"
    page = (tmp_path / "one" / "eval" / "compare.html").read_text()
    assert "<th>one/eval<br>" in page and "<th>two/eval<br>" in page  # same folder names told apart
    assert 'href="trajectories/x/index.html"' in (tmp_path / "two" / "eval" / "index.html").read_text()


def test_cli_serve_on_a_taken_port_is_one_line(tmp_path):
    write_episode(tmp_path / "run", "x", "success")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["view", str(tmp_path / "run"), "--serve", "--port", str(port)])
    assert result.exit_code == 1 and f"error: cannot serve on 127.0.0.1:{port}" in result.output


def test_a_text_only_training_turn_renders_without_frames(tmp_path):
    traj = Trajectory(id="g-0", task_id="pytool/count", domain="pytool", instruction="", agent="train", seed=3,
                      status="failure", extra={"advantage": -0.5, "lag": 1})
    writer = TrajectoryWriter(tmp_path / "episodes" / "step_5", traj)
    writer.step(StepRecord(index=0, frame_id="turn-0", screenshot="", screen_size=(0, 0), action=None,
                           text="done(answer='3')", response_token_ids=[5, 6], logprobs=[-0.5, -1.0], policy_version=4,
                           extra={"prompt": "count the shapes"}))
    writer.close()
    index, _ = write_pages([tmp_path / "episodes"])
    page = (tmp_path / "episodes" / "step_5" / "g-0" / "index.html").read_text()
    assert "no frame recorded" in page and "no later frame recorded" in page and "count the shapes" in page
    assert "&quot;advantage&quot;: -0.5" in page and "not recorded" in page  # episode details; no instruction
    details = page.replace("&quot;", '"')
    assert '"policy version": 4' in details and '"mean logprob": -0.75' in details
    assert "step_5/g-0/index.html" in index.read_text()
