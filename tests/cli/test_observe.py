"""`--observe` through the front doors: `mintgym eval` and `rollout` give the agent the channels asked for (the
example a11y agent from examples/agents, the VLM agent through a real OpenAI-compatible server), the episodes and
results.json record them, set-of-marks draws on the pixels, and a channel a domain lacks is one error line."""

from __future__ import annotations

import glob
import importlib.util
import json
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from mintgym.testing import serve_asgi

pytestmark = pytest.mark.web

HERE = Path(__file__).parent
REPO = HERE.parents[1]
EXAMPLE_AGENTS = REPO / "examples" / "agents"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


outside = _load("mintgym_tests_outside", HERE / "outside.py")
mintgym = outside.mintgym
TASKS = "miniwob/click-test-2,miniwob/click-button-sequence"


def _results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def _steps(out: Path, pattern: str) -> list[dict]:
    [path] = glob.glob(str(out / pattern / "steps.jsonl"))
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_the_a11y_agent_plays_from_the_listing_and_the_channels_are_recorded(tmp_path):
    out = tmp_path / "a11y"
    proc = mintgym("eval", "--tasks", TASKS, "--agent", "a11y_agent:A11yAgent", "--observe", "a11y", "--out", str(out),
                   "--no-progress", path=EXAMPLE_AGENTS)
    assert proc.returncode == 0, proc.stderr
    results = _results(out)
    assert results["overall"]["successes"] == 2 and results["config"]["observe"] == ["a11y"]
    assert all(e["observe"] == ["a11y"] for e in results["episodes"])
    steps = _steps(out / "trajectories", "miniwob__click-button-sequence-seed0")
    assert len(steps) == 2 and all('button "ONE"' in s["channels"]["a11y"] for s in steps)
    assert json.loads(next((out / "trajectories").glob("*/meta.json")).read_text())["observe"] == ["a11y"]

    # the same eval without the channel: the agent is not given the listing, so it refuses every episode
    blind = tmp_path / "blind"
    proc = mintgym("eval", "--tasks", TASKS, "--agent", "a11y_agent:A11yAgent", "--out", str(blind), "--no-progress",
                   path=EXAMPLE_AGENTS)
    assert proc.returncode == 1
    assert "the a11y agent reads the a11y channel; this episode gives it ['screenshot']" in proc.stderr
    assert _results(blind)["config"]["observe"] == ["screenshot"]

    # other channels are another run: its folder is not resumed with them
    proc = mintgym("eval", "--tasks", TASKS, "--agent", "a11y_agent:A11yAgent", "--observe", "a11y,dom",
                   "--out", str(out), "--no-progress", path=EXAMPLE_AGENTS)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--observe" in proc.stderr


def test_the_vlm_agent_sends_the_listing_in_its_frame_and_no_image_without_the_screenshot(tmp_path):
    server = _load("mintgym_tests_model_server", REPO / "tests" / "agents" / "model_server.py")
    with serve_asgi(server.create_app()) as url:
        # ONE's click point on seed 0 is (24, 76) of the 160x210 page: (153, 364) in normalized_1000
        httpx.post(f"{url}/control/one", json=["click(x=153, y=364)"]).raise_for_status()
        out = tmp_path / "vlm"
        proc = mintgym("eval", "--tasks", "miniwob/click-test-2", "--agent", "vlm", "--model-url",
                       f"{url}/script-one/v1", "--frame", "normalized_1000", "--observe", "a11y", "--out", str(out),
                       "--no-progress")
        seen = [r for r in httpx.get(f"{url}/control/requests").json() if r["mode"] == "script-one"]
    assert proc.returncode == 0, proc.stderr
    assert _results(out)["overall"]["successes"] == 1
    [request] = seen
    assert request["images"] == []
    text = "\n".join(request["texts"])
    assert 'button "ONE" (153,364)' in text and "You are not shown the screen" in text


def test_set_of_marks_draws_numbered_boxes_and_fills_the_legend(tmp_path):
    plain, marked = tmp_path / "plain", tmp_path / "som"
    for out, observe in ((plain, "screenshot"), (marked, "screenshot,som")):
        proc = mintgym("rollout", "--task", "miniwob/click-test-2", "--agent", "scripted", "--observe", observe,
                       "--out", str(out))
        assert proc.returncode == 0, proc.stderr
    shots = [np.asarray(Image.open(next(out.glob("*/frames/0000.png"))).convert("RGB")).astype(int)
             for out in (plain, marked)]
    changed = np.argwhere(np.abs(shots[0] - shots[1]).sum(axis=2) > 0)
    assert len(changed) > 50
    legend = _steps(marked, "*")[0]["channels"]["a11y"]
    assert _steps(plain, "*")[0]["channels"] is None
    from mintgym.grounding import parse

    boxes = [e.box for e in parse(legend) if e.role == "button"]
    assert len(boxes) == 2
    for y, x in changed:  # every changed pixel is on a button's mark (its outline or its number label)
        assert any(x1 - 1 <= x <= x2 and y1 - 1 <= y <= y2 for x1, y1, x2, y2 in boxes), (x, y)


@pytest.mark.parametrize("args, said", [
    (("eval", "--tasks", "pytool/count-shapes-0", "--agent", "scripted", "--observe", "dom"),
     "error: --observe: the pytool domain has no 'dom' observation channel (it has: screenshot, text)"),
    (("rollout", "--task", "pytool/count-shapes-0", "--observe", "som"),
     "error: --observe: the pytool domain has no 'som' observation channel (it has: screenshot, text)"),
    (("eval", "--tasks", "miniwob/click-test", "--agent", "scripted", "--observe", "pixels"),
     "error: --observe: unknown observation channel 'pixels' (known: screenshot, som, a11y, dom, text)"),
    (("eval", "--config", str(REPO / "examples" / "quickstart.yaml"), "--observe", "a11y"),
     "error: what the agent observes is the run config's with --config or a run folder: set "
     "agent.observe=[a11y] instead of --observe"),
])
def test_mistakes_are_one_line(args, said, tmp_path):
    proc = mintgym(*args, "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and proc.stderr == said + "\n"
    assert not (tmp_path / "out").exists()
