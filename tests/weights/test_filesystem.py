import numpy as np
import pytest
import torch

from mintgym.weights import FilesystemBroadcast


def test_send_receive_versions(tmp_path):
    bc = FilesystemBroadcast(tmp_path, keep=2)
    assert bc.latest_version() is None and bc.receive() is None
    bc.send(0, {"w": torch.arange(4.0), "b": np.ones(2, np.float32)})
    version, state = bc.receive()
    assert version == 0 and state["w"].tolist() == [0, 1, 2, 3] and state["b"].dtype == np.float32
    assert bc.receive(after=0) is None
    bc.send(1, {"w": torch.zeros(4)})
    bc.send(2, {"w": torch.ones(4)})
    assert bc.receive(after=0)[0] == 2
    assert len(list(tmp_path.glob("weights-*.npz"))) == 2
    with pytest.raises(ValueError, match="not newer"):
        bc.send(2, {"w": torch.ones(4)})


def test_safetensors_files_are_what_an_engine_loads_in_place(tmp_path):
    """``weights.transport: vllm``: versioned safetensors files; an engine gets the path, others the arrays."""
    from safetensors.numpy import load_file

    from mintgym.weights.safetensors_files import SafetensorsBroadcast

    bc = SafetensorsBroadcast(tmp_path, keep=2)
    assert bc.receive_file() is None
    bc.send(0, {"w": torch.arange(4.0), "h": torch.ones(2, dtype=torch.bfloat16)})
    bc.send(1, {"w": torch.zeros(4), "h": torch.zeros(2)})
    bc.send(2, {"w": torch.full((4,), 2.0), "h": torch.zeros(2)})
    version, path = bc.receive_file(after=0)
    assert version == 2 and path.samefile(tmp_path / "weights-00000002.safetensors")  # a pin of it
    assert load_file(str(path))["w"].tolist() == [2, 2, 2, 2]  # what vLLM's workers read
    assert bc.receive(after=1)[1]["w"].tolist() == [2, 2, 2, 2] and bc.receive_file(after=2) is None
    assert sorted(p.name for p in tmp_path.glob("weights-*")) == ["weights-00000001.safetensors",
                                                                 "weights-00000002.safetensors"]
    bc.ack(0, 2)
    bc.reset()
    assert bc.acks() == {} and bc.latest_version() is None and not list(tmp_path.glob("weights-*"))


def test_npz_files_are_not_handed_to_an_engine_as_its_own_file(tmp_path):
    """A vLLM worker asks ``receive_file`` first and loads what it gets with safetensors: an ``.npz`` path
    would fail there, so the npz transport hands out arrays only (the engine writes its own file)."""
    bc = FilesystemBroadcast(tmp_path)
    bc.send(0, {"w": torch.ones(2)})
    assert bc.receive_file() is None
    version, state = bc.receive()
    assert version == 0 and state["w"].tolist() == [1, 1]
    assert bc.newest_file()[1].suffix == ".npz"


def test_receive_takes_the_newest_when_its_file_went_meanwhile(tmp_path):
    """Between reading LATEST and opening the file, a publication (keep=1) may delete it: read the newest."""
    bc = FilesystemBroadcast(tmp_path, keep=1)
    bc.send(1, {"w": torch.ones(2)})
    read, raced = bc._read, []

    def racing_read(path):
        if not raced:
            raced.append(path)
            bc.send(2, {"w": torch.full((2,), 2.0)})  # deletes version 1's file before it is opened
        return read(path)

    bc._read = racing_read
    version, state = bc.receive()
    assert raced and not raced[0].exists()
    assert version == 2 and state["w"].tolist() == [2.0, 2.0]
