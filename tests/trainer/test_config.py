from pathlib import Path

import pytest

from mintgym.trainer.config import RunConfig

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name", ["quickstart.yaml", "qwen25vl_3b_gpu.yaml"])
def test_shipped_configs_load(name):
    cfg = RunConfig.from_yaml(EXAMPLES / name)
    assert len(cfg.domains) >= 2


def test_unknown_keys_and_bad_values_are_named():
    with pytest.raises(ValueError, match=r"config.train: unknown keys \['lrr'\]"):
        RunConfig.from_dict({"model": {"path": "m"}, "tasks": [{"id": "null/echo"}], "train": {"lrr": 1}})
    with pytest.raises(ValueError, match="correction"):
        RunConfig.from_dict({"model": {"path": "m"}, "tasks": [{"id": "null/echo"}],
                             "train": {"correction": "clip"}})
    with pytest.raises(ValueError, match="domain_weights"):
        RunConfig.from_dict({"model": {"path": "m"}, "tasks": [{"id": "null/echo"}],
                             "train": {"domain_weights": {"web": 1.0}}})


def test_train_command_is_registered():
    from typer.testing import CliRunner

    from mintgym.cli import app

    result = CliRunner().invoke(app, ["train", "--help"])
    assert result.exit_code == 0 and "--config" in result.output and "--out" in result.output


def test_quickstart_agent_clicks_on_web_and_answers_on_pytool():
    from mintgym.rollout.ray_worker import WorkerSpec, make_episode_agent

    cfg = RunConfig.from_yaml(EXAMPLES / "quickstart.yaml")
    assert cfg.domains == ["pytool", "web"]
    spec = WorkerSpec(worker_id=0, model_path="unused", tasks=[], env_urls={}, agent=cfg.agent.kind,
                      agent_options=cfg.agent.options, max_new_tokens=cfg.rollout.max_new_tokens)
    agent = make_episode_agent(spec, engine=None)
    assert agent.click_grid == {"web": (4, 5)} and len(agent.choices["pytool"]) == 10
    assert agent.sampling.max_new_tokens == 1


def test_publish_delay_is_checked_against_max_lag_and_mode():
    base = {"model": {"path": "/m"}, "tasks": [{"id": "null/echo"}]}
    with pytest.raises(ValueError, match="publish_delay 5 > max_lag 4"):
        RunConfig.from_dict({**base, "train": {"publish_delay": 5, "max_lag": 4}})
    with pytest.raises(ValueError, match="publish_delay needs mode: async"):
        RunConfig.from_dict({**base, "train": {"publish_delay": 1, "mode": "sync"}})
    with pytest.raises(ValueError, match="must be >= 0"):
        RunConfig.from_dict({**base, "train": {"eval_groups": -1}})
    assert RunConfig.from_dict({**base, "train": {"publish_delay": 4, "max_lag": 4}}).train.publish_delay == 4


def test_train_command_overrides_are_validated_like_the_file(tmp_path):
    from typer.testing import CliRunner

    from mintgym.cli import app

    recipe = tmp_path / "run.yaml"
    recipe.write_text("model: {path: /nowhere}\ntasks: [{id: null/echo}]\ntrain: {publish_delay: 2, max_lag: 2}\n")
    result = CliRunner().invoke(app, ["train", "--config", str(recipe), "--out", str(tmp_path / "out"),
                                      "--mode", "sync"])
    assert result.exit_code != 0
    assert "publish_delay needs mode: async" in str(result.exception)
    assert not (tmp_path / "out").exists()  # refused before anything started
