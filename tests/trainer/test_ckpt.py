"""Checkpoints: the newest one that loads is resumed; broken ones are kept aside, never deleted."""

import pytest
import torch

from mintgym.trainer.ckpt import CheckpointUnreadable, load_latest, save_checkpoint


def _model_and_optimizer(seed: int):
    torch.manual_seed(seed)
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    return model, optimizer


def _save(out, step, seed):
    model, optimizer = _model_and_optimizer(seed)
    save_checkpoint(out, step, model, optimizer, {"version": step, "buffer": {}}, keep=3)
    return model


def test_a_truncated_newest_checkpoint_resumes_the_one_before_and_is_kept_aside(tmp_path):
    first = _save(tmp_path, 1, seed=1)
    _save(tmp_path, 2, seed=2)
    newest = tmp_path / "checkpoints" / "step-000002"
    (newest / "model.pt").write_bytes((newest / "model.pt").read_bytes()[:100])  # a disk that filled up
    model, optimizer = _model_and_optimizer(seed=9)
    logged = []
    path, state = load_latest(tmp_path, model, optimizer, logged.append)
    assert path.name == "step-000001" and state["step"] == 1
    assert torch.equal(model.weight, first.weight)
    assert (tmp_path / "checkpoints" / "broken-step-000002" / "model.pt").stat().st_size == 100
    assert "step-000002 does not load" in logged[0] and "resuming from step-000001" in logged[0]


def test_a_bad_state_file_counts_as_unreadable(tmp_path):
    _save(tmp_path, 1, seed=1)
    _save(tmp_path, 2, seed=2)
    (tmp_path / "checkpoints" / "step-000002" / "state.json").write_text("{not json")
    path, _ = load_latest(tmp_path, *_model_and_optimizer(seed=9), lambda _: None)
    assert path.name == "step-000001"


def test_when_none_loads_nothing_is_renamed_or_changed_and_the_error_names_them(tmp_path):
    _save(tmp_path, 1, seed=1)
    (tmp_path / "checkpoints" / "step-000001" / "optimizer.pt").unlink()
    model, optimizer = _model_and_optimizer(seed=9)
    weight = model.weight.detach().clone()
    with pytest.raises(CheckpointUnreadable, match=r"no checkpoint of the run loads: .*step-000001 \(FileNotFound"):
        load_latest(tmp_path, model, optimizer, lambda _: None)
    assert torch.equal(model.weight, weight)  # the model half-loaded before the optimizer failed: restored
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == ["step-000001"]


def test_no_checkpoint_is_none(tmp_path):
    assert load_latest(tmp_path, *_model_and_optimizer(seed=9), lambda _: None) is None
