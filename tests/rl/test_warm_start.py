"""The warm start's oracle: which seeds it plays (``oracle_seeds``, else ``seeds``; never ``eval_seeds``),
through a real pytool env server, and that a restarted run does not play them again."""

from __future__ import annotations

import pytest

from mintgym.rl.warm_start import play_oracle
from mintgym.runtime.fleet import start_env_servers
from mintgym.runtime.local import LocalProvider
from mintgym.trainer.config import RunConfig
from mintgym.trajectory.store import iter_run

TASK = "pytool/largest-area-1"


@pytest.fixture(scope="module")
def pytool_url():
    with start_env_servers(LocalProvider(), "pytool", 1) as group:
        yield group.urls[0]


def _config(**task) -> RunConfig:
    return RunConfig.from_dict({"model": {"path": "/m"}, "tasks": [{"id": TASK, **task}],
                                "agent": {"kind": "answer"}, "warm_start": {"oracle": True, "steps": 1}})


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
