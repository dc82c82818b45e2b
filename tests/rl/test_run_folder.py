"""The run folder's record: a folder that is not a run's is refused before anything is written; a resume
may change how a run trains but not what it trains; a replaced record is kept."""

import json

import pytest
import torch

from mintgym.config import RunConfig
from mintgym.errors import MintGymError
from mintgym.rl.run_folder import changes, open_run_folder
from mintgym.trainer.ckpt import save_checkpoint

BASE = {"model": {"path": "/m"}, "tasks": [{"id": "null/echo", "seeds": [1, 2]}], "train": {"steps": 2}}


def _config(**sections) -> RunConfig:
    data = json.loads(json.dumps(BASE))
    for section, values in sections.items():
        data.setdefault(section, {}).update(values) if isinstance(values, dict) else data.update({section: values})
    return RunConfig.from_dict(data)


def _checkpoint(out):
    model = torch.nn.Linear(2, 2)
    save_checkpoint(out, 2, model, torch.optim.Adam(model.parameters()), {"version": 2, "buffer": {}})


def test_a_model_folder_given_as_out_is_refused_and_left_as_it_was(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "qwen2_vl"}')  # a Hugging Face checkpoint's
    with pytest.raises(MintGymError, match=r"is not empty and holds no run's config.json"):
        open_run_folder(_config(), tmp_path, lambda _: None)
    assert (tmp_path / "config.json").read_text() == '{"model_type": "qwen2_vl"}'


def test_a_file_as_out_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(MintGymError, match=r"is a file"):
        open_run_folder(_config(), tmp_path / "f", lambda _: None)


def test_a_new_or_empty_folder_gets_the_record(tmp_path):
    open_run_folder(_config(), tmp_path / "run", lambda _: None)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["tasks"][0]["id"] == "null/echo"


def test_a_resume_that_changes_what_the_run_trains_is_refused_and_writes_nothing(tmp_path):
    open_run_folder(_config(), tmp_path, lambda _: None)
    _checkpoint(tmp_path)
    record = (tmp_path / "config.json").read_text()
    for changed, named in ((_config(tasks=[{"id": "pytool/count-shapes-0"}]), "tasks"),
                           (_config(model={"path": "/other"}), "model"),
                           (_config(rollout={"group_size": 3}), "rollout")):
        said = rf"was trained with other settings of {named} \(.*\): resume it with its config"
        with pytest.raises(MintGymError, match=said):
            open_run_folder(changed, tmp_path, lambda _: None)
        assert (tmp_path / "config.json").read_text() == record


def test_a_resume_may_change_how_it_trains_said_and_the_earlier_record_kept(tmp_path):
    open_run_folder(_config(), tmp_path, lambda _: None)
    _checkpoint(tmp_path)
    logged = []
    open_run_folder(_config(train={"steps": 4, "lr": 0.5}), tmp_path, logged.append)
    assert "train.lr: 1e-05 -> 0.5" in logged[0] and "train.steps: 2 -> 4" in logged[0]
    assert json.loads((tmp_path / "config.before-step-000002.json").read_text())["train"]["lr"] == 1e-5
    assert json.loads((tmp_path / "config.json").read_text())["train"]["lr"] == 0.5


def test_a_run_that_never_checkpointed_takes_the_new_config(tmp_path):
    """A start that failed (a task id typo) leaves its record; the corrected rerun replaces it."""
    open_run_folder(_config(), tmp_path, lambda _: None)
    (tmp_path / "ray.log").write_text("")
    open_run_folder(_config(tasks=[{"id": "null/echo", "seeds": [3]}]), tmp_path, lambda _: None)
    assert json.loads((tmp_path / "config.json").read_text())["tasks"][0]["seeds"] == [3]


def test_changes_are_dotted_keys():
    assert changes({"a": {"b": 1, "c": [1]}}, {"a": {"b": 2, "c": [1]}}) == {"a.b": (1, 2)}


def test_the_settings_of_a_warm_start_of_no_steps_do_not_block_a_resume(tmp_path):
    """A record written when ``warm_start.lr`` defaulted to 1e-3 (no warm start given) resumes today, when the
    lr of a real model's warm start has no default; a warm start that trains is still fixed."""
    open_run_folder(_config(), tmp_path, lambda _: None)
    _checkpoint(tmp_path)
    record = json.loads((tmp_path / "config.json").read_text())
    record["warm_start"]["lr"] = 1e-3
    (tmp_path / "config.json").write_text(json.dumps(record))
    open_run_folder(_config(), tmp_path, lambda _: None)
    with pytest.raises(MintGymError, match=r"other settings of warm_start"):
        open_run_folder(_config(warm_start={"steps": 5, "lr": 1e-5, "oracle": True}), tmp_path, lambda _: None)
