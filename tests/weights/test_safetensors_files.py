"""The ``vllm`` weight transport: safetensors files in the trainer's dtype, and a handed-out file that no later
publication can delete before its reader is done with it."""

from __future__ import annotations

import json
import os
import struct
import threading
import time

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from mintgym.weights.safetensors_files import SafetensorsBroadcast


def header(path) -> dict:
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def state(x: float) -> dict[str, torch.Tensor]:
    return {"w": torch.full((4,), float(x))}


@pytest.mark.parametrize("keep", [1, 2])
def test_a_handed_out_file_outlives_later_publications(tmp_path, keep):
    """The reviewer's race: a worker gets a path, the engine waits on its lock, the trainer publishes on."""
    bc = SafetensorsBroadcast(tmp_path, keep=keep)
    bc.send(1, state(1))
    version, path = bc.receive_file(after=0)
    for v in (2, 3, 4):
        bc.send(v, state(v))
    assert version == 1 and load_file(str(path))["w"].tolist() == [1.0] * 4  # what a vLLM worker reads
    assert len(list(tmp_path.glob("weights-*.safetensors"))) == keep  # the folder itself still holds keep


def test_files_nobody_can_need_are_removed(tmp_path):
    bc = SafetensorsBroadcast(tmp_path, keep=1)
    bc.send(1, state(1))
    _, first = bc.receive_file()
    bc.send(2, state(2))
    _, second = bc.receive_file(after=1)  # this reader is done with version 1: its hold on it goes
    assert not first.exists() and load_file(str(second))["w"][0] == 2.0
    assert sorted(p.name for p in tmp_path.glob("weights-*")) == ["weights-00000002.safetensors"]
    assert len(list((tmp_path / "pins").iterdir())) == 1
    # a reader gone without a word (its process died) holds its file for pin_ttl_s at most
    stale = tmp_path / "pins" / f"{int(time.time()) - 7200}-00000001-gone-1.safetensors"
    os.link(tmp_path / "weights-00000002.safetensors", stale)
    bc.send(3, state(3))
    assert not stale.exists() and second.exists()
    bc.reset()
    assert not list(tmp_path.glob("weights-*")) and not list((tmp_path / "pins").iterdir())


def test_two_readers_each_keep_their_file(tmp_path):
    """Two workers (two transport copies, as Ray gives each worker) hold different versions at once."""
    import pickle

    bc = SafetensorsBroadcast(tmp_path, keep=1)
    a, b = pickle.loads(pickle.dumps(bc)), pickle.loads(pickle.dumps(bc))
    bc.send(1, state(1))
    _, path_a = a.receive_file()
    bc.send(2, state(2))
    _, path_b = b.receive_file()
    bc.send(3, state(3))
    assert load_file(str(path_a))["w"][0] == 1.0 and load_file(str(path_b))["w"][0] == 2.0


def test_concurrent_publications_never_fail_a_reader(tmp_path):
    bc = SafetensorsBroadcast(tmp_path, keep=1)
    bc.send(0, state(0))
    stop, seen, errors = threading.Event(), [], []

    def publish():
        v = 1
        while not stop.is_set():
            bc.send(v, state(v))
            v += 1
            time.sleep(0.001)

    thread = threading.Thread(target=publish)
    thread.start()
    try:
        for _ in range(200):
            try:
                version, path = bc.receive_file()
                seen.append((version, float(load_file(str(path))["w"][0])))
            except Exception as err:  # noqa: BLE001 - collected for the assertion
                errors.append(err)
    finally:
        stop.set()
        thread.join()
    assert not errors and all(v == w for v, w in seen)


def test_bf16_stays_bf16(tmp_path):
    """No upcast on the vLLM path: the file holds the trainer's bf16 bytes, not twice as many."""
    bc = SafetensorsBroadcast(tmp_path)
    w = torch.randn(1024, 512).to(torch.bfloat16)
    bc.send(1, {"w": w, "b": torch.ones(3, dtype=torch.float32)})
    _, path = bc.receive_file()
    head = header(path)
    assert head["w"]["dtype"] == "BF16" and head["b"]["dtype"] == "F32"
    assert os.path.getsize(path) < 1024 * 512 * 2 + 1024  # the tensor's own bytes and a small header
    loaded = load_file(str(path))
    assert loaded["w"].dtype == torch.bfloat16 and torch.equal(loaded["w"], w)


def test_a_bf16_file_received_as_a_state_for_an_engine_that_takes_a_state_dict(tmp_path):
    """``receive`` (the hf engine's path) gives the state as every transport does: numpy arrays, and bf16
    (which numpy has not) as torch bfloat16 tensors with the same values."""
    bc = SafetensorsBroadcast(tmp_path)
    w = torch.randn(8, 4).to(torch.bfloat16)
    bc.send(1, {"w": w, "n": np.arange(3, dtype=np.int64)})
    version, arrays = bc.receive()
    assert version == 1 and arrays["w"].dtype == torch.bfloat16 and torch.equal(arrays["w"], w)
    assert isinstance(arrays["n"], np.ndarray) and arrays["n"].tolist() == [0, 1, 2]


def test_tied_and_strided_tensors_are_written(tmp_path):
    """A CPU trainer's state may share storage (tied embeddings) or hold views: each is written whole."""
    emb = torch.randn(6, 4)
    bc = SafetensorsBroadcast(tmp_path)
    bc.send(1, {"embed": emb, "lm_head": emb, "t": emb.t()})
    loaded = load_file(str(bc.receive_file()[1]))
    assert torch.equal(loaded["lm_head"], emb) and torch.equal(loaded["t"], emb.t())
