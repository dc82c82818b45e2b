"""The learner sharded with FSDP2 over two torchrun processes (gloo, 127.0.0.1) trains one step exactly as one
process does: same loss, same full gradients, same weights after the optimizer step."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from mintgym.models.loading import load_model, load_processor
from mintgym.trainer.config import TrainConfig
from mintgym.trainer.learner import Learner
from mintgym.trainer.sharding import Shards, passes

WORKER = Path(__file__).with_name("sharded_worker.py")
ROOT = WORKER.parents[2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from mintgym.models.tiny import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(command: list[str]) -> None:
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


def test_two_sharded_processes_train_one_step_as_one_process(tiny, tmp_path):
    """Two ranks (five turns: rank 1 runs a filler pass) with activation checkpointing, against one process
    without: loss within 1e-6 relative, every full gradient within 1e-7 absolute (they are about 1e-2), the
    weights after Adam's step within 1e-6."""
    _run([sys.executable, str(WORKER), tiny, str(tmp_path / "one.pt")])
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--nnodes", "1",
                "--master-addr", "127.0.0.1", "--master-port", str(_free_port())]
    _run([*torchrun, str(WORKER), tiny, str(tmp_path / "two.pt"), "--checkpointing"])
    one, two = (torch.load(tmp_path / f"{n}.pt", weights_only=False) for n in ("one", "two"))
    assert two["world"] == 2 and one["world"] == 1
    for key in ("loss", "grad_norm", "tokens", "sequences", "is/ratio_mean", "mismatch/kl_mean"):
        assert two["metrics"][key] == pytest.approx(one["metrics"][key], rel=1e-6), key
    assert two["metrics"]["sequences"] == 5 and two["metrics"]["mismatch/sequences"] == 5
    assert one["grads"].keys() == two["grads"].keys() and len(one["grads"]) > 40
    assert max(g.abs().max() for g in one["grads"].values()) > 1e-2
    for name, grad in one["grads"].items():
        torch.testing.assert_close(two["grads"][name], grad, rtol=0, atol=1e-7, msg=name)
    assert one["weights"].keys() == two["weights"].keys()
    for name, weight in one["weights"].items():
        torch.testing.assert_close(two["weights"][name], weight, rtol=0, atol=1e-6, msg=name)


def test_every_rank_runs_the_same_passes_and_each_turn_runs_once():
    two = [passes(5, 2, Shards(rank, 2, None)) for rank in (0, 1)]
    assert two == [[[0, 2], [4]], [[1, 3], [None]]]
    three = [passes(7, 2, Shards(rank, 3, None)) for rank in range(3)]
    assert [[len(p) for p in rank] for rank in three] == [[2, 1]] * 3
    assert sorted(i for rank in three for p in rank for i in p if i is not None) == list(range(7))
    assert passes(5, 2, None) == [[0, 1], [2, 3], [4]]


def test_sharding_outside_torchrun_is_an_error_naming_what_is_missing(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RuntimeError, match="launched by torchrun: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT"):
        Shards.from_env()


def test_a_sharded_learner_refuses_mismatch_snapshots(tiny):
    with pytest.raises(ValueError, match="mismatch_snapshots .* sharded learner"):
        Learner(load_model(tiny), load_processor(tiny), TrainConfig(mismatch_snapshots=2), shards=Shards(0, 2, None))
