"""The warm start's oracle: which seeds it plays (``oracle_seeds``, else ``seeds``; never ``eval_seeds``),
through a real pytool env server, and that a restarted run does not play them again."""

from __future__ import annotations

import asyncio
import re

import pytest

from mintgym.config import RunConfig
from mintgym.rl.warm_start import play_oracle
from mintgym.runtime.fleet import start_env_servers
from mintgym.runtime.local import LocalProvider
from mintgym.trajectory.store import iter_run

TASK = "pytool/largest-area-1"


@pytest.fixture(scope="module")
def pytool_url():
    with start_env_servers(LocalProvider(), "pytool", 1) as group:
        yield group.urls[0]


def _config(**task) -> RunConfig:
    return RunConfig.from_dict({"model": {"path": "/m"}, "tasks": [{"id": TASK, **task}],
                                "agent": {"kind": "answer"}, "warm_start": {"oracle": True, "steps": 1, "lr": 1e-3}})


def test_the_oracle_plays_its_own_seeds_not_the_rl_or_held_out_ones(pytool_url, tmp_path):
    cfg = _config(seeds=[1, 2], oracle_seeds=[5, 6, 7], eval_seeds=[9])
    logged = []
    assert play_oracle(cfg, {"pytool": [pytool_url]}, tmp_path, logged.append) == {TASK: 3}
    played = sorted(t.seed for _, t in iter_run(tmp_path))
    assert played == [5, 6, 7]
    assert all(t.agent == "scripted" and t.success for _, t in iter_run(tmp_path))
    again = play_oracle(cfg, {"pytool": [pytool_url]}, tmp_path, logged.append)  # a restarted run resumes
    assert again == {TASK: 3} and "(3 played before)" in logged[-1]
    assert sorted(t.seed for _, t in iter_run(tmp_path)) == [5, 6, 7]


def test_without_oracle_seeds_the_oracle_plays_the_training_seeds(pytool_url, tmp_path):
    play_oracle(_config(seeds=[3, 4], eval_seeds=[9]), {"pytool": [pytool_url]}, tmp_path, lambda _: None)
    assert sorted(t.seed for _, t in iter_run(tmp_path)) == [3, 4]


@pytest.mark.timeout(300)
def test_ctrl_c_during_the_warm_start_stops_the_run_and_its_env_servers(tmp_path):
    """SIGINT while the supervised steps run: ``mintgym train`` exits (130) within seconds and leaves no env
    server behind. (Started with SIGINT at its default: a shell's background job would ignore it.)"""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    import psutil

    repo = Path(__file__).resolve().parents[2]
    log = tmp_path / "train.log"
    command = [sys.executable, "-m", "mintgym.cli", "train", "--config", str(repo / "examples" / "must_see.yaml"),
               "--out", str(tmp_path / "run"), f"model.path={tmp_path / 'model'}", "tasks.0.oracle_seeds=[0, 1]",
               "warm_start.steps=1000000"]
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=repo, stdout=out, stderr=subprocess.STDOUT,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 240
        while "sequences tokenized" not in log.read_text() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(1)
        assert "sequences tokenized" in log.read_text(), log.read_text()[-2000:]
        servers = [p for p in psutil.process_iter(["cmdline"])
                   if f"--parent-pid {proc.pid}" in " ".join(p.info["cmdline"] or [])]
        assert servers, "the run's pytool env server should be up during the warm start"
        time.sleep(2)  # inside the supervised steps
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
        assert "interrupted while starting (or warm-starting)" in log.read_text()
        gone, alive = psutil.wait_procs(servers, timeout=15)
        assert not alive, f"env servers left running: {[p.pid for p in alive]}"
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_rerun_whose_seeds_changed_rebuilds_the_dataset_from_its_own_episodes_only(pytool_url, tmp_path):
    """Seed 7 played as an oracle seed, then moved to the held-out eval seeds for a rerun in the same --out:
    the kept dataset (and the episodes beside it) held seed 7, so the warm start trained on the evaluation."""
    import datasets

    from mintgym.models.loading import load_model, load_processor
    from mintgym.models.tiny import build_tiny_vlm
    from mintgym.rl.warm_start import warm_start

    model_dir = build_tiny_vlm(tmp_path / "model", vocab_size=256)
    model, processor = load_model(model_dir), load_processor(model_dir)
    urls, out = {"pytool": [pytool_url]}, tmp_path / "run"
    colours = {"choices": {"pytool": ["red", "green", "blue", "yellow", "purple", "orange", "cyan", "pink"]}}

    def config(**task) -> RunConfig:
        return RunConfig.from_dict({**_config(**task).to_dict(), "agent": {"kind": "answer", "options": colours}})

    def trained_on() -> list[str]:
        return sorted(set(datasets.load_from_disk(str(out / "warm_start" / "dataset"))["trajectory_id"]))

    warm_start(config(seeds=[1], oracle_seeds=[5, 6, 7]), model, processor, urls, out, lambda _: None)
    assert trained_on() == [f"{TASK.replace('/', '.')}-seed{s}" for s in (5, 6, 7)]
    warm_start(config(seeds=[1], oracle_seeds=[5, 6], eval_seeds=[7]), model, processor, urls, out, lambda _: None)
    assert trained_on() == [f"{TASK.replace('/', '.')}-seed{s}" for s in (5, 6)]
    assert len(list((out / "warm_start" / "oracle").iterdir())) == 3  # the earlier episode is kept, unread


def _dataset(path, rows):
    import datasets

    datasets.Dataset.from_list(rows).save_to_disk(str(path))
    return path


def _given(dataset, **task) -> RunConfig:
    return RunConfig.from_dict({"model": {"path": "/m"}, "tasks": [{"id": TASK, **task}], "agent": {"kind": "answer"},
                                "warm_start": {"dataset": str(dataset), "steps": 1, "lr": 1e-3}})


def test_a_given_dataset_played_on_held_out_seeds_is_refused_before_the_run_starts(tmp_path):
    """The final eval would score seeds the model was taught: refused in preflight, naming the seeds."""
    from mintgym.errors import MintGymError
    from mintgym.rl.warm_start import check_dataset
    from mintgym.rl.wiring import preflight

    leaky = _dataset(tmp_path / "leaky", [{"task_id": TASK, "seed": s} for s in (1, 7, 2)])
    with pytest.raises(MintGymError, match=rf"^warm_start.dataset {leaky} holds episodes of held-out eval_seeds "
                                           rf"\({TASK} seed 7\): the final eval would score seeds the model was "
                                           r"taught; export it again without them \(mintgym export RUN --out DIR "
                                           r"--agent answer --skip-seed 7\)$"):
        preflight(_given(leaky, seeds=[1, 2], eval_seeds=[7, 8]))
    preflight(_given(leaky, seeds=[1, 2]))  # no held-out seeds: the final eval plays the training seeds
    other_task = _dataset(tmp_path / "other", [{"task_id": "pytool/largest-area-2", "seed": 7}])
    assert check_dataset(_given(other_task, seeds=[1, 2], eval_seeds=[7])) is None
    old = _dataset(tmp_path / "old", [{"task_id": TASK}])  # exported before the seed column
    assert "cannot be checked against the tasks' held-out eval_seeds" in check_dataset(_given(old, eval_seeds=[7]))
    with pytest.raises(MintGymError, match=r"^warm_start.dataset: no dataset at"):
        preflight(_given(tmp_path / "missing", eval_seeds=[7]))


def test_the_front_door_refuses_a_leaky_warm_start_dataset_in_one_line_writing_nothing(tmp_path):
    from tests.cli.outside import mintgym

    leaky = _dataset(tmp_path / "leaky", [{"task_id": TASK, "seed": 7}])
    config = tmp_path / "run.yaml"
    config.write_text(f"model: {{path: {tmp_path / 'model'}, build_tiny: true}}\n"
                      f"tasks: [{{id: {TASK}, seeds: [1], eval_seeds: [7]}}]\nagent: {{kind: answer}}\n"
                      f"warm_start: {{dataset: {leaky}, steps: 2}}\n")
    proc = mintgym("train", "--config", str(config), "--out", str(tmp_path / "run"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "holds episodes of held-out eval_seeds" in proc.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "model").exists()


def test_the_front_door_refuses_a_demonstrator_it_cannot_make_in_one_line_writing_nothing(tmp_path):
    from tests.cli.outside import mintgym

    config = tmp_path / "run.yaml"
    config.write_text(f"model: {{path: {tmp_path / 'model'}, build_tiny: true}}\n"
                      f"tasks: [{{id: {TASK}, seeds: [1]}}]\nagent: {{kind: answer}}\n"
                      "warm_start: {oracle: true, demonstrator: my_teachers:Careless, steps: 2}\n")
    proc = mintgym("train", "--config", str(config), "--out", str(tmp_path / "run"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "warm_start.demonstrator: agent 'my_teachers:Careless': cannot import module 'my_teachers'" in proc.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "model").exists()


SWAPS = {"red": "orange", "orange": "red", "blue": "purple", "purple": "blue"}


def _taught(**warm) -> RunConfig:
    return RunConfig.from_dict({**_config(seeds=[1], oracle_seeds=list(range(40))).to_dict(),
                                "warm_start": {"oracle": True, "steps": 1, "lr": 1e-3, **warm}})


def test_a_mistaken_teacher_answers_its_swaps_as_its_rate_says_and_the_task_scores_them(pytool_url, tmp_path):
    from mintgym.rl.warm_start import demonstrations_folder

    cfg = _taught(demonstrator="mistaken-oracle", demonstrator_options={"answers": SWAPS, "rate": 1.0},
                  successful_only=False)
    folder = demonstrations_folder(cfg, tmp_path)
    assert folder.name.startswith("demos-mistaken-oracle-")  # not the oracle's folder: never resumed as its episodes
    logged = []
    successes = play_oracle(cfg, {"pytool": [pytool_url]}, folder, logged.append)
    assert "playing mistaken-oracle on pytool/largest-area-1's 40 oracle_seeds" in logged[0]
    played = [t for _, t in iter_run(folder)]
    swapped = [t for t in played if t.steps[-1].action.get("answer") in SWAPS]
    kept = [t for t in played if t not in swapped]
    assert swapped and kept and all(t.agent == "mistaken-oracle" for t in played)
    assert not any(t.success for t in swapped) and all(t.success for t in kept)  # the task's own check scores it
    assert successes == {TASK: len(kept)}


def test_the_teacher_draws_its_mistakes_from_the_episode_seed(pytool_url, tmp_path):
    cfg = _taught(demonstrator="mistaken-oracle", demonstrator_options={"answers": SWAPS, "rate": 0.5},
                  successful_only=False)
    answers = []
    for run in ("a", "b"):
        play_oracle(cfg, {"pytool": [pytool_url]}, tmp_path / run, lambda _: None)
        answers.append({t.seed: t.steps[-1].action.get("answer") for _, t in iter_run(tmp_path / run)})
    assert answers[0] == answers[1]
    assert 0 < sum(a in SWAPS.values() for a in answers[0].values()) < len(answers[0])


@pytest.mark.parametrize(("warm", "message"), [
    ({"demonstrator": "nowhere:Teacher"}, "warm_start.demonstrator: agent 'nowhere:Teacher': cannot import module"),
    ({"demonstrator": "mistaken-oracle", "demonstrator_options": {"answers": SWAPS, "rate": 2}},
     "warm_start.demonstrator: mistaken-oracle: rate is a probability in [0, 1], got 2"),
    ({"demonstrator": "mistaken-oracle", "demonstrator_options": {"swaps": SWAPS}},
     "does not take the options ['swaps']"),
])
def test_a_demonstrator_that_cannot_be_made_is_refused_before_the_run_starts(warm, message):
    from mintgym.errors import MintGymError
    from mintgym.rl.wiring import preflight

    with pytest.raises(MintGymError, match=re.escape(message)):
        preflight(_taught(**warm))


def test_demonstrator_settings_without_oracle_are_refused():
    with pytest.raises(ValueError, match="set oracle: true"):
        RunConfig.from_dict({"model": {"path": "/m"}, "tasks": [{"id": TASK}],
                             "warm_start": {"dataset": "/d", "steps": 1, "lr": 1e-3, "successful_only": False}})


def test_the_teacher_plays_in_sessions_with_the_domains_session_options(pytool_url, tmp_path):
    # a bug: the demonstrations were played on the server's default screen, not the one RL plays on
    cfg = RunConfig.from_dict({**_config(seeds=[1], oracle_seeds=[3]).to_dict(),
                               "envs": [{"domain": "pytool", "session_options": {"width": 640, "height": 480}}]})
    play_oracle(cfg, {"pytool": [pytool_url]}, tmp_path, lambda _: None)
    [(path, played)] = list(iter_run(tmp_path))
    from PIL import Image

    assert Image.open(path / played.steps[0].screenshot).size == (640, 480)


def test_a_teacher_pressing_two_buttons_the_other_way_round_is_scored_0_and_cloned_click_by_click(
        local_server, tmp_path):
    from mintgym.agents.answer import AnswerAgent
    from mintgym.trajectory.imitation import imitation_records

    task = "miniwob/click-button-sequence"
    cfg = RunConfig.from_dict({"model": {"path": "/m"},
                               "tasks": [{"id": task, "env_domain": "web", "seeds": [1], "oracle_seeds": [3, 4]}],
                               "agent": {"kind": "answer"},
                               "warm_start": {"oracle": True, "steps": 1, "lr": 1e-3, "successful_only": False,
                                              "demonstrator": "mistaken-oracle",
                                              "demonstrator_options": {"order_rate": 1.0}}})
    url = local_server("web")
    assert play_oracle(cfg, {"web": [url]}, tmp_path / "swapped", lambda _: None) == {task: 0}
    right = RunConfig.from_dict({**cfg.to_dict(), "warm_start": {**cfg.to_dict()["warm_start"],
                                                                  "demonstrator": "scripted",
                                                                  "demonstrator_options": {}}})
    assert play_oracle(right, {"web": [url]}, tmp_path / "right", lambda _: None) == {task: 2}
    clicks = {}
    for run in ("swapped", "right"):
        clicks[run] = {t.seed: [(s.action["x"], s.action["y"]) for s in t.steps if s.action["type"] == "click"]
                       for _, t in iter_run(tmp_path / run)}
    assert {seed: pair[::-1] for seed, pair in clicks["swapped"].items()} == clicks["right"]
    assert all(len(pair) == 2 for pair in clicks["right"].values())

    def student():
        return AnswerAgent(None, click_grid={"web": [4, 4]}, crop={"web": [0, 50, 160, 210]}, pick="modulo",
                           decisions=2)

    records = asyncio.run(imitation_records(tmp_path / "swapped", student, only_success=False))
    # two decisions an episode, each on the screen its click was made on: button TWO's cell, then ONE's
    cells = {seed: [student().point_cell("web", point, (160, 210)) for point in pair]
             for seed, pair in clicks["right"].items()}
    assert {seed: [r["response_token_ids"][0] for r in records if r["seed"] == seed] for seed in cells} == {
        seed: pair[::-1] for seed, pair in cells.items()}
    assert [r["step"] for r in records] == [0, 1, 0, 1]
