"""The RL loop end to end on real parts: Ray actors, a local null env server, the tiny Qwen2-VL.

One Ray instance for the module (Ray startup is slow). Covers sync mode (lag 0, exact zero mismatch every
step), async mode with resume (step count and buffer accounting carried over), a worker killed mid-run
(restarted by Ray, its in-flight groups counted lost once), a weight sync that times out loudly, an env
server killed mid-run (restarted, or the run fails naming it), and a run whose every episode fails (it stops,
naming the error).
"""

import json
from pathlib import Path

import pytest
import ray

from mintgym.config import RunConfig
from mintgym.rl import train
from mintgym.weights.base import WeightSyncTimeout


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    ray.init(address="local", num_cpus=2, include_dashboard=False, configure_logging=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    from mintgym.models.tiny import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256)


def config(model_path, extra=None, **train):
    return RunConfig.from_dict({
        **(extra or {}),
        "model": {"path": model_path},
        "tasks": [{"id": "null/echo", "seeds": [0, 1]}],
        "agent": {"kind": "answer", "options": {"choices": {"null": ["no", "ok"]}}},
        "rollout": {"workers": 1, "groups_in_flight": 2, "group_size": 4, "max_new_tokens": 1},
        "train": {"groups_per_step": 2, "lr": 0.01, "steps": 2, "checkpoint_every": 1, "sync_timeout": 60,
                  "batch_timeout": 120, **train},
    })


def test_sync_mode_trains_at_lag_zero_with_exact_zero_mismatch(model_path, tmp_path):
    """Also: weights through the filesystem transport, and sample episodes written for the viewer."""
    from mintgym.models.loading import load_processor
    from mintgym.trajectory.store import load_run

    tokenizer = load_processor(str(model_path)).tokenizer
    extra = {"weights": {"transport": "filesystem"}, "log": {"sample_episodes_every": 2, "sample_episodes": 3}}
    result = train(config(model_path, extra, mode="sync"), tmp_path, log=lambda s: None)
    assert result.steps == 2 and len(result.history) == 2
    for m in result.history:
        assert m["lag/max"] == 0 and m["samples"] == 8
        assert m["rollout/episodes"] == 8 and m["rollout/episode_errors"] == m["rollout/lost_groups"] == 0
        assert m["mismatch/sequences"] == 8
        assert m["mismatch/kl_mean"] == 0.0 and m["mismatch/max_abs"] == 0.0
        assert m["is/ratio_max"] == 1.0  # same weights, aligned logprobs: every token's ratio is exactly 1
    counts = result.buffer["counts"]
    assert counts["consumed"] == 4 and counts["pushed"] == 4 and counts["lost"] == 0
    assert (tmp_path / "reward_curve.png").stat().st_size > 0
    assert list((tmp_path / "tb").iterdir())
    assert (tmp_path / "weights" / "LATEST").read_text() == "2"  # what the engines loaded
    assert [p.name for p in (tmp_path / "episodes").iterdir()] == ["step_2"]
    episodes = load_run(tmp_path / "episodes")
    assert len(episodes) == 3 and {t.task_id for t in episodes} == {"null/echo"}
    for traj in episodes:
        assert traj.status in ("success", "failure") and traj.total_reward in (0.0, 1.0)
        (turn,) = traj.steps
        assert len(turn.response_token_ids) == 1 and turn.policy_version == 1
        assert turn.text == tokenizer.decode(turn.response_token_ids)  # the sampled token, as the model wrote it
        assert "<|image_pad|>x" in turn.extra["prompt"] and turn.screen_size[0] > 0
        shown = [part for m in turn.messages for part in m["content"] if part["type"] == "image"]
        assert shown == [{"type": "image", "frame_id": turn.frame_id, "size": list(turn.screen_size)}]
        assert (tmp_path / "episodes" / "step_2" / traj.id / turn.screenshot).stat().st_size > 0


def test_async_resume_keeps_step_count_and_accounting(model_path, tmp_path):
    cfg = config(model_path, mode="async", steps=4, max_lag=1, mismatch_snapshots=1)
    first = train(cfg, tmp_path, max_steps=2, log=lambda s: None)  # "killed" after step 2's checkpoint
    assert first.steps == 2
    saved = json.loads(sorted((tmp_path / "checkpoints").glob("step-*"))[-1].joinpath("state.json").read_text())
    assert saved["step"] == 2 and saved["buffer"]["counts"]["consumed"] == 4
    logs = []
    second = train(cfg, tmp_path, log=logs.append)
    assert second.steps == 4 and second.resumed_from == 2
    assert any("resumed" in line and "step 2" in line for line in logs)
    counts = second.buffer["counts"]
    assert counts["consumed"] == 8  # 2 steps before the kill + 2 after, nothing counted twice
    assert counts["lost_on_resume"] == saved["buffer"]["queued"] + saved["buffer"]["reserved"]
    for m in first.history + second.history:
        assert m["lag/max"] <= 1  # the hard bound held
        # every turn, lagged or not, is compared against the weights that sampled it: exactly equal
        assert m["mismatch/sequences"] == m["samples"] and m["mismatch/max_abs"] == 0.0
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    # run again: it is finished, says so and returns at once (it used to hang after "resumed ... at step 4")
    logs.clear()
    again = train(cfg, tmp_path, log=logs.append)
    assert again.finished and again.steps == 4 and again.seconds == 0.0 and not again.history
    assert len(logs) == 1 and "is finished" in logs[0] and "step 4 of train.steps 4" in logs[0], logs
    further = train(cfg.model_copy(update={"train": cfg.train.model_copy(update={"steps": 5})}), tmp_path,
                    log=logs.append)  # --steps 5: continues past the last step
    assert not further.finished and further.resumed_from == 4 and further.steps == 5
    assert [json.loads(line)["step"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [
        1, 2, 3, 4, 5]


def test_dead_worker_is_restarted_and_its_episodes_counted_lost(model_path, tmp_path):
    killed = []

    def kill_once(run, metrics):
        if not killed:
            killed.append(True)
            ray.kill(run.workers[0], no_restart=False)
            ray.wait([run.run_refs[0]], timeout=60)  # its run() call fails once the actor is gone

    result = train(config(model_path, mode="async", steps=3, max_lag=None), tmp_path, log=lambda s: None,
                   after_step=kill_once)
    assert result.steps == 3 and result.worker_restarts >= 1
    counts = result.buffer["counts"]
    assert counts["worker_registrations"] >= 2
    # every admitted group is pushed, lost, or still reserved/unpushed at the end -- never twice
    assert counts["pushed"] + counts["lost"] <= counts["admitted"]
    assert counts["late_push"] == 0


def test_sync_timeout_names_who_was_behind(model_path, tmp_path):
    with pytest.raises(WeightSyncTimeout, match=r"version 1 not loaded.*worker 0 still at version 0"):
        train(config(model_path, mode="sync", sync_timeout=0.001), tmp_path, log=lambda s: None)


def test_publish_delay_holds_every_sample_back_and_eval_plays_the_final_weights(model_path, tmp_path):
    cfg = config(model_path, {"eval": {"groups": 3}}, mode="async", steps=4, max_lag=3, publish_delay=2,
                 checkpoint_every=0)
    result = train(cfg, tmp_path, log=lambda s: None)
    assert result.steps == 4
    for step, metrics in enumerate(result.history):  # trained at version ``step``
        lags = [int(k.rsplit("/", 1)[1]) for k in metrics if k.startswith("lag/hist/")]
        assert lags and min(lags) >= min(step, 2), (step, lags)
        assert max(lags) <= 3
    final = result.final_eval
    assert final["version"] == 4 and final["checkpoint"].endswith("step-000004")  # the final weights
    echo = final["domains"]["null"]
    assert echo["episodes"] + echo["failed_episodes"] == 2  # the task's two seeds (eval.groups 3 asks up to 3)
    assert 0.0 <= echo["mean_reward"] <= 1.0
    assert json.loads((tmp_path / "final_eval.json").read_text())["version"] == 4
    results = json.loads((tmp_path / "eval" / "results.json").read_text())  # mintgym eval's own output
    assert sorted(e["seed"] for e in results["episodes"]) == [0, 1] and (tmp_path / "eval" / "report.html").exists()


def test_the_held_out_curve_is_played_at_step_0_every_n_steps_and_the_end_and_logged(model_path, tmp_path):
    """eval.every: greedy points at steps 0, 2 and 3 (the last), in metrics.jsonl beside the steps' rewards; the
    last point plays the final weights on the final eval's seeds, so it scores what the final eval scores."""
    extra = {"eval": {"groups": 2, "temperature": 0, "every": 2, "every_groups": 2}}
    cfg = config(model_path, extra, mode="sync", steps=3, checkpoint_every=0)
    cfg.tasks[0].eval_seeds = [7, 8]
    lines: list[str] = []
    result = train(cfg, tmp_path, log=lines.append)
    assert [int(p["step"]) for p in result.curve] == [0, 2, 3]
    for point in result.curve:
        assert point["eval/episodes"] + point["eval/failed"] == 2 and 0.0 <= point["eval/mean"] <= 1.0
        assert point["eval/null"] == point["eval/mean"] and point["time/eval"] > 0
    rows = {row["step"]: row for row in map(json.loads, (tmp_path / "metrics.jsonl").read_text().splitlines())}
    assert sorted(rows) == [0, 1, 2, 3] and "reward/mean" not in rows[0]
    assert [s for s, row in rows.items() if "eval/mean" in row] == [0, 2, 3]
    assert rows[3]["eval/mean"] == result.curve[-1]["eval/mean"] and "reward/mean" in rows[3]
    assert result.curve[-1]["eval/mean"] == result.final_eval["domains"]["null"]["mean_reward"]
    assert sum("held-out eval after step" in line for line in lines) == 3


def test_lr_0_is_the_rl_free_ablation_its_steps_move_no_weight(model_path, tmp_path):
    from safetensors.torch import load_file

    cfg = config(model_path, mode="sync", lr=0, steps=2, checkpoint_every=0)
    cfg.agent.options = {"choices": {"null": ["no", "ok"]}, "pick": "modulo"}  # any token answers: rewards differ
    result = train(cfg, tmp_path, log=lambda s: None)
    assert result.steps == 2 and all(m["samples"] == 8 for m in result.history)
    assert any(not m["optimizer/skipped_no_signal"] for m in result.history)  # a step that would have moved them
    before = load_file(str(Path(model_path) / "model.safetensors"))
    after = load_file(str(result.checkpoint / "model.safetensors"))
    assert before.keys() == after.keys() and all((before[k] == after[k]).all() for k in before)


def test_ctrl_c_stops_the_env_servers_and_says_how_to_resume(model_path, tmp_path):
    import httpx

    seen = {}

    def interrupt(run, metrics):
        seen["urls"] = [h.base_url for h in run.handles]
        assert all(httpx.get(f"{url}/v1/health", timeout=5).status_code == 200 for url in seen["urls"])
        raise KeyboardInterrupt

    logs = []
    with pytest.raises(KeyboardInterrupt):
        train(config(model_path, mode="async", steps=3, max_lag=1), tmp_path, log=logs.append, after_step=interrupt)
    assert any("interrupted at step 1" in line and "resume from step-000001" in line for line in logs), logs
    assert seen["urls"]
    for url in seen["urls"]:  # the env server this run started is gone
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/v1/health", timeout=2)


def test_session_options_reach_the_env_sessions_and_bad_ones_fail_by_name(model_path, tmp_path):
    def with_sessions(options):
        data = config(model_path, mode="sync", steps=1, checkpoint_every=0).to_dict()
        data["envs"] = [{"domain": "null", "session_options": options}]
        return RunConfig.from_dict(data)

    with pytest.raises(Exception, match="colour"):
        train(with_sessions({"colour": "red"}), tmp_path / "bad", log=lambda s: None)
    result = train(with_sessions({"width": 64, "height": 48}), tmp_path / "ok", log=lambda s: None)
    assert result.steps == 1


class _CountingResets:
    """An ASGI app in front of an env server's that counts the episodes it resets."""

    def __init__(self, app):
        self.app, self.resets = app, 0

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"].endswith("/reset"):
            self.resets += 1
        await self.app(scope, receive, send)


def test_a_worker_plays_on_every_server_of_its_share(model_path, tmp_path):
    """Two servers of a domain, one worker: its episodes go to both (it used to play on the first only)."""
    from mintgym.environments.null import NullHost
    from mintgym.server.app import create_app
    from mintgym.testing import serve_asgi

    first, second = _CountingResets(create_app(NullHost())), _CountingResets(create_app(NullHost()))
    with serve_asgi(first) as one, serve_asgi(second) as two:
        result = train(config(model_path, {"envs": [{"domain": "null", "urls": [one, two]}]}, steps=2),
                       tmp_path, log=lambda s: None)
    assert result.steps == 2
    assert first.resets > 0 and second.resets > 0, (first.resets, second.resets)


def _kill_the_env_server_after_step_1(killed: list):
    """An ``after_step`` that kills the run's env server (its whole process group) once, after step 1, and
    waits until the provider sees it gone."""
    import os
    import signal
    import time

    def kill(run, metrics):
        if run.step != 1:
            return
        group = run.servers[0]
        handle = group.handles[0]
        killed.append(handle.base_url)
        os.killpg(int(handle.ident), signal.SIGKILL)
        deadline = time.monotonic() + 10
        while group.provider.alive(handle) and time.monotonic() < deadline:
            time.sleep(0.05)

    return kill


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_killed_env_server_is_restarted_and_training_goes_on(model_path, tmp_path, mode):
    """Before: sync mode trained on nothing, then waited forever for the workers; async mode failed with a
    weight-sync timeout that blamed the worker. Now the run restarts the server, moves the workers to it and
    trains on."""
    killed, logs = [], []
    cfg = config(model_path, mode=mode, steps=4, max_lag=1, checkpoint_every=0, batch_timeout=60,
                 sync_timeout=60)
    result = train(cfg, tmp_path, log=logs.append, after_step=_kill_the_env_server_after_step_1(killed))
    assert result.steps == 4 and killed
    assert [line for line in logs if f"at {killed[0]} died; restarted at" in line], logs
    assert result.history[-1]["env/server_restarts"] == 1
    assert sum(m["samples"] for m in result.history[1:]) > 0  # trained on the replacement's episodes


def test_a_dead_env_server_that_cannot_be_restarted_fails_the_run_naming_it(model_path, tmp_path):
    from mintgym.errors import BackendError

    killed = []
    kill = _kill_the_env_server_after_step_1(killed)

    def kill_for_good(run, metrics):
        def cannot_start(index):
            raise BackendError("no room for another env server")

        run.servers[0]._start_one = cannot_start
        kill(run, metrics)

    with pytest.raises(BackendError, match=r"env server 'null' at .* died and could not be restarted: "
                                           r"BackendError: no room") as raised:
        train(config(model_path, mode="async", steps=4, checkpoint_every=0, batch_timeout=60), tmp_path,
              log=lambda s: None, after_step=kill_for_good)
    assert killed[0] in str(raised.value)


def test_a_run_whose_every_episode_fails_stops_naming_the_error(model_path, tmp_path):
    """Every episode raises in the worker (a vlm agent that retries makes 2 engine calls on a step, which RL
    cannot train). Before: the run trained 3 steps on nothing and ended as if all was well. Now each step's
    metrics and progress line count the failures, and after 3 such steps in a row the run fails naming the
    ValueError."""
    from mintgym.errors import MintGymError

    data = config(model_path, mode="async", steps=5, checkpoint_every=0, batch_timeout=3).to_dict()
    data["agent"] = {"kind": "vlm", "max_turns": 1, "options": {"actions": ["click", "done"], "retries": 1}}
    data["envs"] = [{"domain": "null", "session_options": {"width": 32, "height": 32}}]
    data["rollout"].update(group_size=2, groups_in_flight=1, max_new_tokens=4)
    logs = []
    with pytest.raises(MintGymError, match=r"3 steps in a row trained on nothing.*most frequent error "
                                           r"\(\d+x\): ValueError: episode <episode> step 0: 2 engine calls"):
        train(RunConfig.from_dict(data), tmp_path, log=logs.append)
    # A step may end before any episode does (on a loaded machine, any step): it neither grows nor breaks
    # the streak, so three steps that saw failures and nothing else end the run.
    steps = [line for line in logs if line.startswith("step ")]
    failing = [line for line in steps if "episodes failed" in line]
    assert len(failing) >= 3 and all("groups lost" in line for line in failing), logs
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == len(steps) <= 5
    assert not any(r.get("samples") for r in rows)
    assert sum(r["rollout/episode_errors"] > 0 and r["rollout/lost_groups"] > 0 for r in rows) >= 3
