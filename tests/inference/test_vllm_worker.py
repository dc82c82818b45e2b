"""The code that runs in vLLM's workers, on CPU: a weights file reaches ``load_weights`` in bounded chunks."""

from __future__ import annotations

import types

import torch
from safetensors.torch import save_file

from mintgym.inference import vllm_worker
from mintgym.inference.vllm_worker import WeightUpdateExtension, load_in_chunks


class Model(torch.nn.Module):
    """Stands for vLLM's model: records what each ``load_weights`` call got."""

    def __init__(self):
        super().__init__()
        self.p = torch.nn.Parameter(torch.zeros(1, dtype=torch.bfloat16))
        self.calls: list[list[tuple[str, torch.Tensor]]] = []

    def load_weights(self, weights):
        self.calls.append(list(weights))
        return {name for name, _ in self.calls[-1]}


def weights_file(tmp_path) -> tuple[str, dict[str, torch.Tensor]]:
    state = {f"layer{i}.weight": torch.randn(256, 1024).to(torch.bfloat16) for i in range(6)}  # 512 KiB each
    state["big.weight"] = torch.randn(1024, 1024).to(torch.bfloat16)  # 2 MiB: above the chunk size alone
    path = str(tmp_path / "w.safetensors")
    save_file(state, path)
    return path, state


def test_the_worker_feeds_load_weights_in_bounded_chunks(tmp_path, monkeypatch):
    path, state = weights_file(tmp_path)
    monkeypatch.setattr(vllm_worker, "CHUNK_BYTES", 1 << 20)  # 1 MiB (1 GiB on a real engine)
    worker = WeightUpdateExtension()
    worker.model_runner = types.SimpleNamespace(model=Model())
    assert worker.mintgym_load_weights(path) == len(state)
    calls = worker.model_runner.model.calls
    assert len(calls) >= 4
    for call in calls:
        nbytes = sum(t.numel() * t.element_size() for _, t in call)
        assert nbytes <= 1 << 20 or len(call) == 1
    got = [item for call in calls for item in call]
    assert sorted(name for name, _ in got) == sorted(state)
    for name, tensor in got:
        assert tensor.dtype == torch.bfloat16 and tensor.device.type == "cpu" and torch.equal(tensor, state[name])


def test_each_chunk_goes_to_the_device_it_is_loaded_on(tmp_path):
    """The ``meta`` device stands in for the GPU: every tensor is moved there, one chunk at a time."""
    path, state = weights_file(tmp_path)
    chunks = []
    assert load_in_chunks(path, chunks.append, torch.device("meta"), max_bytes=1 << 20) == len(state)
    assert len(chunks) >= 4 and sum(len(c) for c in chunks) == len(state)
    assert all(t.device.type == "meta" and tuple(t.shape) == tuple(state[n].shape) for c in chunks for n, t in c)


class Runner:
    """Stands for vLLM's CPU model runner: ``reload_weights`` records the iterator it was given, consumed."""

    def __init__(self, model):
        self.model = model
        self.reloads: list[dict] = []

    def reload_weights(self, weights_iterator=None, weights_path=None, is_checkpoint_format=True):
        self.reloads.append({"weights": list(weights_iterator), "path": weights_path,
                             "checkpoint_format": is_checkpoint_format})


def test_on_cpu_the_runners_reload_gets_the_file_as_one_iterator(tmp_path):
    """vLLM's CPU build repacks linear weights once loaded (their parameters left empty): ``load_weights``
    cannot reach them, its runner's ``reload_weights`` can. It gets every tensor once, in checkpoint format."""
    path, state = weights_file(tmp_path)
    worker = WeightUpdateExtension()
    worker.model_runner = Runner(Model())
    assert worker.mintgym_load_weights(path, max_bytes=1 << 20) == len(state)
    [reload] = worker.model_runner.reloads
    assert reload["checkpoint_format"] is True and reload["path"] is None
    assert worker.model_runner.model.calls == []  # not the model's own load_weights
    assert sorted(name for name, _ in reload["weights"]) == sorted(state)
    assert all(torch.equal(t, state[name]) for name, t in reload["weights"])
