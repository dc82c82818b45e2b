"""The vector env steps N sessions in one request per step and behaves as gymnasium's SyncVectorEnv over
``mintgym.make`` does: same observations, rewards, ends and infos, autoreset included."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import mintgym
from mintgym.runtime.vector import MintVectorEnv

SIZE = {"width": 64, "height": 48}


def vector(url, n=3, **kwargs) -> MintVectorEnv:
    return MintVectorEnv("null/echo", n, base_url=url, encoding="raw", env_options=SIZE, **kwargs)


def counting_batches(venv: MintVectorEnv) -> list[str]:
    """The paths of the requests ``venv`` sends from now on."""
    sent, request = [], venv._http.request

    def counted(method, path, json=None):
        sent.append(path)
        return request(method, path, json)

    venv._http.request = counted
    return sent


@pytest.mark.parametrize("mode, resets", [(AutoresetMode.NEXT_STEP, 0), (AutoresetMode.SAME_STEP, 2)])
def test_matches_sync_vector_env_in_one_request_per_step(null_server, mode, resets):
    """NEXT_STEP resets in the next step's request; SAME_STEP adds one request in each step where envs ended."""
    ours = vector(null_server, autoreset_mode=mode)
    theirs = SyncVectorEnv([lambda: mintgym.make("null/echo", base_url=null_server, encoding="raw", env_options=SIZE)
                            for _ in range(3)], autoreset_mode=mode)
    try:
        assert ours.metadata["autoreset_mode"] == theirs.metadata["autoreset_mode"] == mode
        assert ours.single_observation_space == theirs.single_observation_space
        sent = counting_batches(ours)
        results = [(ours.reset(seed=7), theirs.reset(seed=7))]
        plan = [["done(answer='ok')", "click(x=1, y=2)", "done(answer='no')"],
                ["click(x=3, y=3)", "move(x=5, y=5)", "click(x=9, y=9)"],  # 0 and 2 start over: actions ignored
                ["click(x=4, y=4)", "done(answer='ok')", "wait(seconds=0)"],
                ["click(x=6, y=6)", "click(x=7, y=7)", "click(x=8, y=8)"]]
        for actions in plan:
            results.append((ours.step(actions), theirs.step(actions)))
        assert sent == ["/v1/batch"] * (1 + len(plan) + resets)
        for mine, reference in results:
            assert data_equivalence(mine, reference, exact=True), (mine, reference)
        (_, rewards, terminated, _, _), _ = results[1]
        assert rewards.tolist() == [1.0, 0.0, 0.0] and terminated.tolist() == [True, False, True]
        if mode == AutoresetMode.NEXT_STEP:
            (obs, rewards, terminated, _, _), _ = results[2]
            assert obs["step"].tolist() == [0, 2, 0] and not terminated.any() and not rewards.any()
            assert ours.observation_space.contains(obs)
    finally:
        ours.close()
        theirs.close()


def test_same_step_autoreset_keeps_the_final_observation(null_server):
    venv = vector(null_server, n=2, autoreset_mode="SameStep")
    try:
        venv.reset(seed=1)
        obs, rewards, terminated, _, info = venv.step(["done(answer='ok')", "click(x=1, y=1)"])
        assert terminated.tolist() == [True, False] and rewards.tolist() == [1.0, 0.0]
        assert obs["step"].tolist() == [0, 1]  # env 0 already started over
        assert info["_final_obs"].tolist() == [True, False]
        assert info["final_obs"][0]["step"] == 1 and info["final_info"]["action"]["type"][0] == "done"
        obs, *_ = venv.step(["click(x=2, y=2)", "click(x=2, y=2)"])
        assert obs["step"].tolist() == [1, 2]
    finally:
        venv.close()


def test_disabled_autoreset_resets_only_the_masked_envs(null_server):
    venv = vector(null_server, n=2, autoreset_mode=AutoresetMode.DISABLED, max_episode_steps=2)
    try:
        venv.reset(seed=1)
        venv.step(["click(x=1, y=1)"] * 2)
        _, _, terminated, truncated, _ = venv.step(["click(x=1, y=1)"] * 2)
        assert truncated.tolist() == [True, True] and not terminated.any()  # the server's step limit
        with pytest.raises(ValueError, match="autoreset is DISABLED"):
            venv.step(["click(x=1, y=1)"] * 2)
        obs, info = venv.reset(options={"reset_mask": np.array([True, False])})
        assert obs["step"].tolist() == [0, 2] and info["_seed"].tolist() == [True, False]
        with pytest.raises(ValueError, match="autoreset is DISABLED"):
            venv.step(["click(x=1, y=1)"] * 2)  # env 1 still ended
    finally:
        venv.close()


def test_gymnasium_make_vec_uses_the_batching_env(null_server):
    venv = gymnasium.make_vec("mintgym/null.echo", num_envs=2, base_url=null_server, env_options=SIZE)
    try:
        assert isinstance(venv, MintVectorEnv) and venv.spec.id == "mintgym/null.echo"
        assert venv.max_episode_steps == 50  # the task's limit, from the spec
        obs, _ = venv.reset(seed=0)
        assert obs["screenshot"].shape == (2, 48, 64, 3)
        venv.action_space.seed(0)
        _, _, _, _, info = venv.step(venv.action_space.sample())
        assert "error" not in info  # sampled actions are accepted
        assert [f.shape for f in venv.render()] == [(48, 64, 3)] * 2
    finally:
        venv.close()
    sync = gymnasium.make_vec("mintgym/null.echo", num_envs=2, vectorization_mode="sync", base_url=null_server,
                              env_options=SIZE)
    try:  # gymnasium's own vectorizer over gymnasium.make of the task still works
        assert isinstance(sync, SyncVectorEnv) and sync.reset(seed=0)[0]["screenshot"].shape == (2, 48, 64, 3)
    finally:
        sync.close()


def test_bad_input_is_one_line(null_server):
    with pytest.raises(ValueError, match="num_envs is a positive integer"):
        vector(null_server, n=0)
    with pytest.raises(ValueError, match="is a domain"):
        MintVectorEnv("null", 2, base_url=null_server)
    venv = vector(null_server, n=2)
    try:
        with pytest.raises(ValueError, match="call reset"):
            venv.step(["wait()"] * 2)
        with pytest.raises(ValueError, match="the first reset\\(\\) resets every env"):
            venv.reset(options={"reset_mask": np.array([True, False])})
        venv.reset()
        with pytest.raises(ValueError, match="1 actions for 2 envs"):
            venv.step(["wait()"])
        with pytest.raises(ValueError, match="unknown reset options"):
            venv.reset(options={"task_id": "null/echo"})
    finally:
        venv.close()
    assert venv.session_ids == []


@pytest.mark.web
def test_miniwob_frames_have_the_tasks_viewport():
    venv = gymnasium.make_vec("mintgym/miniwob.click-test", num_envs=2)
    try:
        assert venv.single_observation_space["screenshot"].shape == (210, 160, 3)
        obs, _ = venv.reset(seed=3)
        assert obs["screenshot"].shape == (2, 210, 160, 3)
        _, _, _, _, info = venv.step(["click(x=80, y=105)"] * 2)
        assert "error" not in info
    finally:
        venv.close()
