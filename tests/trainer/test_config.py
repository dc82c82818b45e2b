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
