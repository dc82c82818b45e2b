"""`mintgym eval` and `mintgym rollout` (run as a user runs them, in a subprocess) resume an --out only when the
same run made it: another agent, model, task set or seed set is refused in one line naming the difference,
with exit 2 and nothing in the folder changed; --force moves the old folder aside and starts afresh; a
folder that is not a run's is refused, --force or not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mintgym.testing import serve_asgi

AGENT_TESTS = Path(__file__).resolve().parents[1] / "agents"


def mintgym(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mintgym.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def ok(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    proc = mintgym(*args, timeout=timeout)
    assert proc.returncode == 0, f"mintgym {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def refused(*args: str) -> str:
    """The one error line of a refused command (exit status 2)."""
    proc = mintgym(*args)
    assert proc.returncode == 2, f"exit {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: ")
    return line


def snapshot(root: Path, under: str = "") -> dict[str, bytes]:
    base = root / under
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def eval_args(out: Path, *extra: str) -> list[str]:
    return ["eval", "--tasks", "null/echo", "--episodes", "2", "--out", str(out), "--no-progress", *extra]


def test_eval_resumes_only_the_run_that_made_its_folder(tmp_path):
    out = tmp_path / "e"
    ok(*eval_args(out, "--agent", "scripted"))
    before = snapshot(out)

    line = refused(*eval_args(out, "--agent", "random"))
    assert line == (f"error: {out} was made by --agent scripted; this run is --agent random: give another --out, or "
                    f"--force to start over (the old episodes are moved to {out}.before-<timestamp>)")
    assert snapshot(out) == before and [p.name for p in tmp_path.iterdir()] == ["e"]

    again = ok(*eval_args(out, "--agent", "scripted"))  # the same run: nothing is played again
    assert "2 of 2 episodes were already recorded" in again.stdout and "2/2 succeeded" in again.stdout
    assert snapshot(out).items() >= {k: v for k, v in before.items()
                                     if k.endswith(("meta.json", "steps.jsonl"))}.items()

    forced = ok(*eval_args(out, "--agent", "random", "--force"))
    [aside] = [p for p in tmp_path.iterdir() if p.name != "e"]
    assert aside.name.startswith("e.before-") and str(aside) in forced.stderr
    assert json.loads((aside / "results.json").read_text())["config"]["agent"] == "scripted"
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["agent"] == "random" and results["overall"]["successes"] == 0
    assert results["overall"]["episodes"] == 2 and results["resumed_episodes"] == 0


def test_eval_of_a_sub_set_or_other_seeds_is_refused_and_results_keep_every_episode(tmp_path):
    out = tmp_path / "e"
    ok("eval", "--suite", "smoke", "--episodes", "3", "--agent", "scripted", "--out", str(out), "--no-progress")
    before = snapshot(out)
    line = refused("eval", "--suite", "smoke", "--episodes", "1", "--agent", "scripted", "--out", str(out))
    assert f"{out} was made by seeds 0, 1, 2; this run is seeds 0: give another --out" in line
    line = refused("eval", "--suite", "smoke", "--episodes", "3", "--max-steps", "1", "--agent", "scripted",
                   "--out", str(out))
    assert "was made by --max-steps (not given); this run is --max-steps 1" in line
    assert snapshot(out) == before and len(json.loads((out / "results.json").read_text())["episodes"]) == 3


@pytest.fixture(scope="module")
def model_server():
    """The project's scripted OpenAI-compatible model server (tests/agents/model_server.py) on loopback."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_folders_model_server", AGENT_TESTS / "model_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with serve_asgi(module.create_app()) as url:
        yield url


def test_eval_with_a_model_into_a_scripted_folder_is_refused_and_the_model_gets_no_request(tmp_path, model_server):
    """The bug this guards against: a fake model 'scored' 100% on the scripted agent's episodes."""
    import httpx

    out = tmp_path / "e"
    ok(*eval_args(out, "--agent", "scripted"))
    before = snapshot(out)
    url = f"{model_server}/script-never/v1"
    line = refused(*eval_args(out, "--agent", "vlm", "--model-url", url))
    assert f"{out} was made by --agent scripted; this run is --agent vlm (and " in line and "--model-url" in line
    assert snapshot(out) == before
    asked = httpx.get(f"{model_server}/control/requests").json()
    assert [r for r in asked if r["mode"] == "script-never"] == []
    ok(*eval_args(tmp_path / "v1", "--agent", "vlm", "--model-url", url))
    other = f"{model_server}/script-other/v1"
    line = refused(*eval_args(tmp_path / "v1", "--agent", "vlm", "--model-url", other))
    assert f"was made by --model-url {url}; this run is --model-url {other}" in line


def test_rollout_resumes_only_its_own_folder(tmp_path):
    out = tmp_path / "r"
    args = ["rollout", "--task", "null/echo", "--episodes", "2", "--out", str(out)]
    ok(*args)
    before = snapshot(out)
    line = refused(*args, "--agent", "random")
    assert line.startswith(f"error: {out} was made by --agent scripted; this run is --agent random: give another")
    line = refused(*args[:-2], "--seed", "3", "--out", str(out))
    assert "was made by seeds 0, 1; this run is seeds 3, 4" in line
    assert snapshot(out) == before

    again = ok(*args)  # the same rollout: kept, not played again
    assert "2 of 2 episodes are already recorded and kept" in again.stderr and "2/2 succeeded" in again.stdout
    assert snapshot(out) == before

    evaluated = tmp_path / "e"
    ok(*eval_args(evaluated, "--agent", "scripted"))
    line = refused(*args[:-1], str(evaluated))
    assert line.startswith(f"error: {evaluated} was made by mintgym eval; this run is mintgym rollout: give another")
    line = refused(*eval_args(out, "--agent", "scripted"))
    assert line.startswith(f"error: {out} was made by mintgym rollout; this run is mintgym eval: give another")

    forced = ok(*args, "--agent", "random", "--force")
    [aside] = [p for p in tmp_path.iterdir() if p.name.startswith("r.before-")]
    assert snapshot(aside) == before and str(aside) in forced.stderr
    assert "0/2 succeeded" in forced.stdout


@pytest.mark.parametrize("command", [["eval", "--tasks", "null/echo", "--no-progress"],
                                     ["rollout", "--task", "null/echo"]])
def test_a_folder_that_is_not_a_run_is_refused_force_or_not(tmp_path, command):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "qwen2_vl"}')
    for force in ([], ["--force"]):
        line = refused(*command, "--out", str(folder), *force)
        assert f"--out {folder} is not empty and holds no {command[0]} run" in line
    assert snapshot(folder) == {"config.json": b'{"model_type": "qwen2_vl"}'} and len(list(tmp_path.iterdir())) == 1


def test_an_eval_folder_from_before_the_record_is_refused_and_force_moves_it_aside(tmp_path):
    out = tmp_path / "e"
    ok(*eval_args(out, "--agent", "scripted"))
    (out / "run.json").unlink()  # as main made it before folders were keyed
    before = snapshot(out)
    line = refused(*eval_args(out, "--agent", "scripted"))
    assert f"{out} holds episodes from before run folders recorded what made them" in line
    assert snapshot(out) == before
    ok(*eval_args(out, "--agent", "scripted", "--force"))
    [aside] = [p for p in tmp_path.iterdir() if p.name != "e"]
    assert snapshot(aside) == before
