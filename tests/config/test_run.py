from pathlib import Path

import pytest

from mintgym.config import ConfigError, RunConfig, apply_overrides

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name", ["quickstart.yaml", "qwen25vl_3b_gpu.yaml", "must_see.yaml",
                                  "rl_beyond_imitation.yaml"])
def test_shipped_configs_load(name):
    cfg = RunConfig.from_yaml(EXAMPLES / name)
    assert cfg.domains and cfg.tasks


def test_the_held_out_curve_is_off_unless_asked_and_reads_its_keys():
    assert (RunConfig.from_dict(BASE).eval.every, RunConfig.from_dict(BASE).eval.every_groups) == (0, 32)
    cfg = RunConfig.from_dict(apply_overrides({**BASE, "eval": {}}, ["eval.every=5", "eval.every_groups=8"]))
    assert (cfg.eval.every, cfg.eval.every_groups) == (5, 8)


BASE = {"model": {"path": "m"}, "tasks": [{"id": "null/echo"}]}


@pytest.mark.parametrize(("overrides", "message"), [
    (["train.lrr=1"], r"^train.lrr: unknown key \(known: mode, steps, .*lr, "),
    (["train.lr=fast"],
     r"^train.lr: input should be a valid number, unable to parse string as a number \(got 'fast'\)$"),
    (["train.lr=-1"], r"^train.lr: input should be greater than or equal to 0 \(got -1\)$"),
    (["train.max_grad_norm=big"], r"^train.max_grad_norm: input should be a valid number, .* \(got 'big'\)$"),
    (["rollout.group_size=1"], r"^rollout.group_size: input should be greater than or equal to 2 \(got 1\)$"),
    (["train.correction=clip"], r"^train.correction: input should be 'none', .* or 'ppo_clip' \(got 'clip'\)$"),
    (["train.steps=2.5"],
     r"^train.steps: input should be a valid integer, got a number with a fractional part \(got 2.5\)$"),
    (["tasks.0.seeds=[]"], r"^tasks.0.seeds: list should have at least 1 item after validation, not 0 \(got \[\]\)$"),
    # an item or value inside a field is described by its own type, not the field's
    (["tasks.0.seeds=[1, x]"], r"^tasks.0.seeds.1: input should be a valid integer, .* \(got 'x'\)$"),
    (["train.domain_weights={'null': heavy}"],
     r"^train.domain_weights.null: input should be a valid number, .* \(got 'heavy'\)$"),
    (["rollout.simulated_step_seconds=[slow, 0.5]"],
     r"^rollout.simulated_step_seconds.0: input should be a valid number, .* \(got 'slow'\)$"),
    (["tasks.2.id=x"], r"^tasks.2: no such item \(tasks has 1;"),
    (["train.domain_weights={web: 1.0}"], r"domain_weights name \['web'\], not domains of the tasks"),
    (["envs.0.domain='null'", "envs.0.resources={a: 1}"], r"^envs.0: .*need provider: ray, not 'local'$"),
    (["eval.temperature=-1"], r"^eval.temperature: input should be greater than or equal to 0 \(got -1\)$"),
    (["eval.every=-2"], r"^eval.every: input should be greater than or equal to 0 \(got -2\)$"),
    (["eval.every_groups=0"], r"^eval.every_groups: input should be greater than or equal to 1 \(got 0\)$"),
    (["train.eval_groups=3"],
     r"^train: eval_groups is now eval.groups \(the final evaluation has a section of its own\)$"),
    (["warm_start.steps=10"], r"^warm_start: steps needs a source: set oracle: true, or dataset: PATH$"),
    (["tasks.0.eval_seeds=[1, 2]", "tasks.0.oracle_seeds=[2, 3]"],
     r"^tasks.0: oracle_seeds and eval_seeds share seed\(s\) \[2\]: the warm start would train on the held-out"),
    (["tasks.0.seeds=[1, 2]", "tasks.0.eval_seeds=[2, 3]"],
     r"^tasks.0: seeds and eval_seeds share seed\(s\) \[2\]: RL would train on the held-out evaluation$"),
    (["warm_start.oracle=true", "warm_start.dataset=d"], r"^warm_start: give oracle: true or a dataset, not both$"),
    (["weights.transport=vllm"], r"weights.transport vllm .* needs engine.name: vllm"),
    (["weights.transport=filesystem", "weights.keep=true"],
     r"^weights.keep: input should be a valid integer \(got True\)$"),
    (["engine.name=vllm", "engine.options.gpu_memory_utilization=1.5"],
     r"^engine.options.gpu_memory_utilization: input should be less than or equal to 1 \(got 1.5\)$"),
    (["train.lr"], r"^override 'train.lr': expected key.path=value"),
    (["tasks.1={id: null/echo, seeds: [4, 5], eval_seeds: [0]}"],  # the first entry trains on seed 0
     r"^tasks: each task id once \(its weight repeats it\), got \['null/echo'\] more than once$"),
    (["train.lr=.inf"], r"^train.lr: input should be a finite number \(got inf\)$"),
    # pydantic's lax mode made it 1
    (["train.steps=true"], r"^train.steps: true or false where a number is expected \(got True\)$"),
    (["tasks.0.seeds=[true]"], r"^tasks.0.seeds: true or false where a number is expected \(got \[True\]\)$"),
    # it built a model in the cwd
    (["model.path="], r"^model.path: string should have at least 1 character \(got ''\)$"),
    (["train.clip_eps=1.5"], r"^train.clip_eps: input should be less than 1 \(got 1.5\)$"),  # the loss needs (0, 1)
])
def test_a_bad_key_or_value_is_one_line_naming_the_key(overrides, message):
    import copy

    with pytest.raises(ConfigError, match=message) as caught:
        RunConfig.from_dict(apply_overrides(copy.deepcopy(BASE), overrides))
    assert "\n" not in str(caught.value)


def test_overrides_reach_any_field_and_parse_yaml_scalars():
    import copy

    cfg = RunConfig.from_dict(apply_overrides(copy.deepcopy(BASE), [
        "train.lr=3e-4", "rollout.group_size=4", "train.max_lag=null", "tasks.0.seeds=[1, 2]",
        "tasks.1.id=web/x", "envs.0.domain=web", "envs.0.provider=ray", "envs.0.resources={envnode: 1}",
        "log.wandb.enabled=true", "weights.transport=filesystem", "agent.options={choices: {pytool: [a, b]}}"]))
    assert cfg.train.lr == 3e-4 and cfg.rollout.group_size == 4 and cfg.train.max_lag is None
    assert cfg.tasks[0].seeds == [1, 2] and cfg.domains == ["null", "web"]
    assert cfg.env_for("web").provider == "ray" and cfg.env_for("web").resources == {"envnode": 1.0}
    assert cfg.log.wandb.enabled and cfg.weights.transport == "filesystem"
    assert cfg.agent.options == {"choices": {"pytool": ["a", "b"]}}
    assert RunConfig.from_dict(cfg.to_dict()) == cfg  # what config.json holds loads back the same


def test_every_field_is_documented():
    from pydantic import BaseModel

    def walk(model):
        for name, info in model.model_fields.items():
            assert info.description, f"{model.__name__}.{name} has no description"
            inner = info.annotation
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                walk(inner)
    walk(RunConfig)


def test_bad_files_are_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"nowhere.yaml: no such config file"):
        RunConfig.from_yaml(tmp_path / "nowhere.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("train:\n  lr: [1, 2\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:\d+: not valid YAML"):
        RunConfig.from_yaml(bad)
    bad.write_text("- 1\n")
    with pytest.raises(ConfigError, match="a mapping at the top level, got list"):
        RunConfig.from_yaml(bad)
    bad.write_text("model:\n  path: m\ntrain:\n  lr: 0.1\n  lr: 0.2\ntasks: [{id: null/echo}]\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:5: not valid YAML \(key 'lr' given twice\)$"):
        RunConfig.from_yaml(bad)  # YAML alone keeps the last one silently
    bad.write_bytes(b"model:\n  path: \xff\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: not UTF-8 text \(byte 15\)$"):
        RunConfig.from_yaml(bad)


def test_train_command_is_registered():
    from typer.testing import CliRunner

    from mintgym.cli import app

    result = CliRunner().invoke(app, ["train", "--help"])
    assert result.exit_code == 0 and "--config" in result.output and "--out" in result.output


def test_quickstart_agent_clicks_on_web_and_answers_on_pytool():
    from mintgym.rollout.agents import make_episode_agent

    cfg = RunConfig.from_yaml(EXAMPLES / "quickstart.yaml")
    assert cfg.domains == ["pytool", "web"]
    agent = make_episode_agent(cfg.agent.kind, cfg.agent.options, None, max_new_tokens=cfg.rollout.max_new_tokens)
    assert agent.click_grid == {"web": (4, 5)} and len(agent.choices["pytool"]) == 10
    assert agent.sampling.max_new_tokens == 1


def test_publish_delay_is_checked_against_max_lag_and_mode():
    base = {"model": {"path": "/m"}, "tasks": [{"id": "null/echo"}]}
    with pytest.raises(ValueError, match="publish_delay 5 > max_lag 4"):
        RunConfig.from_dict({**base, "train": {"publish_delay": 5, "max_lag": 4}})
    with pytest.raises(ValueError, match="publish_delay needs mode: async"):
        RunConfig.from_dict({**base, "train": {"publish_delay": 1, "mode": "sync"}})
    with pytest.raises(ValueError, match=r"^eval.groups: input should be greater than or equal to 0 \(got -1\)$"):
        RunConfig.from_dict({**base, "eval": {"groups": -1}})
    assert RunConfig.from_dict({**base, "train": {"publish_delay": 4, "max_lag": 4}}).train.publish_delay == 4


def _mintgym(capsys, monkeypatch, *args):
    """``mintgym ARGS`` through the console entry point (``mintgym.cli.main``), in this process:
    (exit status, stdout, stderr)."""
    import sys

    from mintgym.cli import DEBUG_ENV, main

    monkeypatch.setenv(DEBUG_ENV, "")  # --debug sets it; restored after the test
    monkeypatch.setattr(sys, "argv", ["mintgym", *args])
    with pytest.raises(SystemExit) as ended:
        main()
    out = capsys.readouterr()
    return ended.value.code, out.out, out.err


def test_train_command_errors_are_one_line_with_exit_code_2(tmp_path, capsys, monkeypatch):
    import subprocess
    import sys

    from mintgym.errors import MintGymError

    recipe = tmp_path / "run.yaml"
    recipe.write_text("model: {path: /nowhere}\ntasks: [{id: null/echo}]\ntrain: {publish_delay: 2, max_lag: 2}\n")
    out = tmp_path / "out"
    cases = [
        (["train.lr=fast"], "error: train.lr: input should be a valid number, unable to parse string as a number "
                            "(got 'fast')"),
        (["--mode", "sync"], "error: train: publish_delay needs mode: async"),
        (["train.nope=1"], "error: train.nope: unknown key (known: mode, steps,"),
        (["--steps", "0"], "error: train.steps: input should be greater than or equal to 1 (got 0)"),
    ]
    for extra, line in cases:
        code, _, err = _mintgym(capsys, monkeypatch, "train", "--config", str(recipe), "--out", str(out), *extra)
        assert code == 2 and err.startswith(line) and err.count("\n") == 1, err
    code, _, err = _mintgym(capsys, monkeypatch, "train", "--config", str(tmp_path / "gone.yaml"), "--out", str(out))
    assert code == 2 and err == f"error: {tmp_path / 'gone.yaml'}: no such config file\n"
    monkeypatch.setattr(sys, "argv", ["mintgym", "--debug", "train", "--config", str(recipe), "--out", str(out),
                                      "train.lr=fast"])
    from mintgym.cli import main

    with pytest.raises(MintGymError, match="train.lr: input should be a valid number"):  # --debug: the exception itself
        main()
    assert not out.exists()  # refused before anything started
    # and as a user sees it, in a console of its own
    import os

    env = {k: v for k, v in os.environ.items() if k != "MINTGYM_DEBUG"}
    real = subprocess.run([sys.executable, "-c", "from mintgym.cli import main; main()", "train", "--config",
                           str(recipe), "--out", str(out), "train.lr=fast"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert (real.returncode, real.stderr, real.stdout) == (
        2, "error: train.lr: input should be a valid number, unable to parse string as a number (got 'fast')\n", "")


def test_rerunning_a_finished_run_says_so_and_exits_0_at_once(tmp_path, capsys, monkeypatch):
    import json
    import time

    recipe = tmp_path / "run.yaml"
    recipe.write_text("model: {path: /nowhere}\ntasks: [{id: null/echo}]\ntrain: {steps: 48}\n")
    out = tmp_path / "out"
    (out / "checkpoints" / "step-000048").mkdir(parents=True)
    (out / "checkpoints" / "step-000048" / "state.json").write_text(json.dumps({"step": 48, "version": 48}))
    start = time.monotonic()
    code, stdout, stderr = _mintgym(capsys, monkeypatch, "train", "--config", str(recipe), "--out", str(out))
    assert code == 0, stderr
    assert time.monotonic() - start < 10  # nothing started: no Ray, no env server, no model
    assert "is finished: its last checkpoint is at step 48 of train.steps 48" in stdout
    assert "raise train.steps, e.g. --steps 96, to train further" in stdout
    assert stdout.startswith("mintgym train: ") and stdout.count("\n") == 2, stdout  # the first line, then that


def test_a_warm_start_of_a_real_checkpoint_needs_its_lr_given_in_one_line():
    """The tiny model's warm start lr (1e-3) would wreck a real checkpoint, so no default applies to one."""
    real = {**BASE, "warm_start": {"oracle": True, "steps": 100}}
    message = r"^warm_start.lr: required for a model other than the tiny one \(model.build_tiny is false\); about 1e-5"
    with pytest.raises(ConfigError, match=message) as caught:
        RunConfig.from_dict(real)
    assert "\n" not in str(caught.value)
    assert RunConfig.from_dict({**real, "warm_start": {**real["warm_start"], "lr": 1e-5}}).warm_start.lr == 1e-5
    tiny = RunConfig.from_dict({**real, "model": {"path": "m", "build_tiny": True}})
    assert tiny.warm_start.lr == 1e-3 and RunConfig.from_dict(tiny.to_dict()) == tiny


def test_precision_is_mixed_by_default_and_checked():
    assert RunConfig.from_dict(BASE).train.precision == "mixed"
    with pytest.raises(ConfigError, match=r"^train.precision: input should be 'mixed' or 'pure' \(got 'fp8'\)$"):
        RunConfig.from_dict(apply_overrides({**BASE}, ["train.precision=fp8"]))


def test_the_default_off_policy_correction_is_truncated_is_capped_at_2():
    train = RunConfig.from_dict(BASE).train
    assert (train.correction, train.is_cap) == ("truncated_is", 2.0)


MIXED = {"model": {"path": "m"}, "tasks": [{"id": "null/echo"}, {"id": "pytool/count-shapes-0"}]}


@pytest.mark.parametrize(("train", "message"), [
    # 50 steps x 2 groups x 0.001/1.001 = 0.1 group over the whole run: it might never train
    ({"groups_per_step": 2, "steps": 50, "domain_weights": {"null": 1.0, "pytool": 0.001}},
     r"^train.domain_weights, train.groups_per_step, train.steps: domain 'pytool' \(weight 0.001 of 1.001\) would "
     r"get 0.1 of a group over the run's 50 steps of 2 groups: it needs at least 1 \(raise its weight, "
     r"groups_per_step or steps\)$"),
    # a domain of the tasks left out of the weights had weight 0: its groups were played, never trained
    ({"domain_weights": {"null": 1.0}},
     r"^train.domain_weights, train.groups_per_step, train.steps: no weight > 0 for domain\(s\) \['pytool'\] of "
     r"the tasks: it would never be trained$"),
])
def test_a_mixture_the_schedule_cannot_honour_is_refused_in_one_line_naming_the_fields(train, message):
    """Refused: less than one group of a domain over the whole run. Shares below one group per step are
    honoured over the steps (the schedule carries them), so those load."""
    with pytest.raises(ConfigError, match=message) as caught:
        RunConfig.from_dict({**MIXED, "train": train})
    assert "\n" not in str(caught.value)
    for honoured in ({"groups_per_step": 1, "steps": 50},  # half a group of each domain per step
                     {"groups_per_step": 1, "steps": 50, "domain_weights": {"null": 1.0, "pytool": 0.05}},
                     {"groups_per_step": 2, "steps": 100, "domain_weights": {"null": 0.05, "pytool": 1.0}}):
        assert RunConfig.from_dict({**MIXED, "train": honoured}).train.groups_per_step == honoured["groups_per_step"]


@pytest.mark.parametrize("override, said", [
    ("agent.kind=chess",
     "error: agent.kind: unknown agent 'chess'; choose one of answer, mistaken-oracle, random, scripted, vlm"),
    ("agent.kind=scripted", "error: agent.kind: 'scripted' does not sample from an inference engine"),
    ("agent.options.blnd=true", "error: agent.options: blnd: unknown key (known: choices, "),
    ("engine.options.max_batch_size=lots", "error: engine.options.max_batch_size: input should be a valid integer"),
    ("engine.options.max_batchsize=4", "error: engine.options.max_batchsize: unknown key (known: device, dtype, "),
    ("engine.name=trt", "error: engine: name must be one of 'hf', 'vllm'"),
    ("weights.transport=s3", "error: weights: transport must be one of 'ray', 'filesystem', 'vllm'"),
    ("weights.keep=2", "error: weights.keep: unknown key (known: transport)\n"),  # the ray transport keeps no files
])
def test_the_agent_and_engine_and_their_options_are_checked_by_their_own_code(tmp_path, override, said):
    """Through `mintgym train`: the agent kind is looked up in the one registry of agents (the mintgym.agents
    entry points), and agent and engine options are checked against the constructors that take them, in one
    line, before anything starts (the run folder is not even made)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "mintgym.cli", "train", "--config", "examples/quickstart.yaml",
                           "--out", str(tmp_path / "run"), override], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2], check=False)
    assert proc.returncode == 2 and proc.stderr.startswith(said) and proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "run").exists()


def test_a_seed_range_stands_for_its_seeds_both_ends_included_and_a_bad_one_is_named():
    cfg = RunConfig.from_dict({"model": {"path": "/m"}, "tasks": [
        {"id": "pytool/count-shapes-0", "seeds": "3..6", "oracle_seeds": "10..10", "eval_seeds": [20, 21]}]})
    assert (cfg.tasks[0].seeds, cfg.tasks[0].oracle_seeds) == ([3, 4, 5, 6], [10])
    for bad in ("6..3", "3-6", "a..b", "-1..4"):
        with pytest.raises(ConfigError, match=r"tasks.0.seeds: a seed range is 'FIRST..LAST'"):
            RunConfig.from_dict({"model": {"path": "/m"}, "tasks": [{"id": "pytool/count-shapes-0", "seeds": bad}]})
    with pytest.raises(ConfigError, match=r"seeds and eval_seeds share seed\(s\) \[5\]"):
        RunConfig.from_dict({"model": {"path": "/m"}, "tasks": [
            {"id": "pytool/count-shapes-0", "seeds": "1..5", "eval_seeds": "5..9"}]})


def test_a_linear_learning_rate_schedule_goes_from_lr_at_the_first_step_down_towards_0():
    from mintgym.config import TrainConfig

    linear = TrainConfig(lr=1e-3, steps=4, lr_schedule="linear")
    assert [round(linear.lr_at(s), 10) for s in (1, 2, 3, 4)] == [1e-3, 7.5e-4, 5e-4, 2.5e-4]
    assert linear.lr_at(9) == 0.0  # past the end: nothing left to move
    assert [TrainConfig(lr=1e-3, steps=4).lr_at(s) for s in (1, 4)] == [1e-3, 1e-3]  # constant, the default
    with pytest.raises(ConfigError, match="lr_schedule"):
        RunConfig.from_dict({"model": {"path": "/m"}, "tasks": [{"id": "pytool/count-shapes-0"}],
                             "train": {"lr_schedule": "cosine"}})
