"""The state a transport carries: bf16 weights travel in their own two bytes and come back bf16, exactly,
through both transports that carry numpy arrays (Ray's object store and the filesystem)."""

from __future__ import annotations

import numpy as np
import pytest
import ray
import torch

from mintgym.rollout.ray_worker import load_weights
from mintgym.weights import FilesystemBroadcast
from mintgym.weights.base import BF16_NAMES, from_wire_state, to_wire_state
from mintgym.weights.ray_store import RayObjectStoreBroadcast


def _state() -> dict[str, torch.Tensor]:
    w = torch.randn(256, 128).to(torch.bfloat16)
    return {"w": w, "w_t": w.t(), "b": torch.randn(3), "n": torch.arange(4), "h": torch.ones(2, dtype=torch.float16)}


class _Engine:
    """What a rollout worker's engine is handed (``load_weights``, the worker's own path)."""

    def update_weights(self, version, state):
        self.state = state


def _same(got: dict, state: dict[str, torch.Tensor]) -> None:
    engine = _Engine()
    load_weights(engine, 1, got)
    tensors = engine.state
    assert sorted(tensors) == sorted(state)
    for name, value in state.items():
        assert tensors[name].dtype == value.dtype and torch.equal(tensors[name], value), name


def test_bf16_goes_as_its_own_bytes_and_comes_back_bf16_without_a_copy():
    state = _state()
    wire = to_wire_state(state)
    assert wire["w"].dtype == np.int16 and wire["w"].nbytes == 256 * 128 * 2  # float32 would be twice that
    assert sorted(wire[BF16_NAMES].tolist()) == ["w", "w_t"] and wire["b"].dtype == np.float32
    back = from_wire_state(wire)
    _same(back, state)
    assert back["w"].data_ptr() == wire["w"].ctypes.data  # a view: workers share the object store's copy


def test_a_float32_state_has_no_bf16_entry():
    assert BF16_NAMES not in to_wire_state({"b": torch.zeros(2)})


def test_a_tensor_named_as_the_wire_formats_own_entry_is_refused():
    with pytest.raises(ValueError, match=BF16_NAMES):
        to_wire_state({BF16_NAMES: torch.zeros(1)})


def test_the_filesystem_transport_writes_half_the_bytes_of_float32_and_reads_bf16_back(tmp_path):
    bc = FilesystemBroadcast(tmp_path)
    big = torch.randn(512, 512).to(torch.bfloat16)
    bc.send(1, {"big": big})
    assert (tmp_path / "weights-00000001.npz").stat().st_size < 512 * 512 * 2 + 4096
    state = _state()
    bc.send(2, state)
    _same(bc.receive()[1], state)


def test_the_ray_transport_carries_bf16_and_gives_it_back_bf16(local_ray):
    bc = RayObjectStoreBroadcast(name="test-wire-weights")
    state = _state()
    bc.send(3, state)
    version, got = bc.receive()
    assert version == 3
    _same(got, state)
    _, refs = ray.get(bc._handle().latest.remote())
    assert ray.get(refs[0])["w"].nbytes == 256 * 128 * 2  # what the object store holds
