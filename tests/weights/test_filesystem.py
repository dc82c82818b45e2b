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
