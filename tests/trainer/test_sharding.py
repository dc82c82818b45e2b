"""The learner sharded with FSDP2 over two torchrun processes (gloo, 127.0.0.1) trains one step exactly as one
process does: same loss, same full gradients, same weights after the optimizer step; its checkpoint resumes bit
for bit under torchrun and loads in one process."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from mintgym.config import TrainConfig
from mintgym.models.loading import load_model, load_processor
from mintgym.trainer.ckpt import load_latest
from mintgym.trainer.learner import Learner
from mintgym.trainer.sharding import Shards, passes

WORKER = Path(__file__).with_name("sharded_worker.py")
ROOT = WORKER.parents[2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from mintgym.models.tiny import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256)


@pytest.fixture(scope="module")
def tiny_with_dropout(tmp_path_factory):
    """The tiny Qwen2-VL with attention dropout: each training forward draws masks from its rank's generator."""
    from mintgym.models.tiny import build_tiny_vlm

    path = Path(build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256))
    config = json.loads((path / "config.json").read_text())
    config["text_config"]["attention_dropout"] = 0.2
    (path / "config.json").write_text(json.dumps(config))
    return str(path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(ranks: int = 2) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks), "--nnodes", "1",
            "--master-addr", "127.0.0.1", "--master-port", str(_free_port())]


def _run(command: list[str]) -> None:
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


def test_two_sharded_processes_train_one_step_as_one_process(tiny, tmp_path):
    """Two ranks (five turns: rank 1 runs a filler pass) with activation checkpointing, against one process
    without: loss within 1e-6 relative, every full gradient within 1e-7 absolute (they are about 1e-2), the
    weights after Adam's step within 1e-6."""
    _run([sys.executable, str(WORKER), tiny, str(tmp_path / "one.pt")])
    _run([*_torchrun(), str(WORKER), tiny, str(tmp_path / "two.pt"), "--checkpointing"])
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


@pytest.mark.slow  # 28 s; tests/rl/test_lockstep.py runs the sharded warm start inside mintgym train too (also slow)
def test_two_sharded_processes_run_the_warm_start_steps_as_one_process(tiny, tmp_path):
    """Two supervised steps of three sequences a batch (rank 1 runs a filler), the gradient clipped: the same
    losses within 1e-6 relative and weights within 1e-6."""
    _run([sys.executable, str(WORKER), tiny, str(tmp_path / "one.pt"), "--sft"])
    _run([*_torchrun(), str(WORKER), tiny, str(tmp_path / "two.pt"), "--sft"])
    one, two = (torch.load(tmp_path / f"{n}.pt", weights_only=False) for n in ("one", "two"))
    assert two["losses"] == pytest.approx(one["losses"], rel=1e-6) and len(one["losses"]) == 2
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


@pytest.mark.slow  # 22 s; the one-step equivalence above stays in the default run
def test_a_sharded_checkpoint_resumes_bit_for_bit_and_loads_in_one_process(tiny_with_dropout, tmp_path):
    """Two ranks with attention dropout (each rank draws its own masks): three steps straight, and one step, a
    checkpoint (rank 0 writes the gathered state), a fresh sharded learner resumed from it, two steps: the same
    losses and weights bit for bit, every rank's generators restored from its own file. The checkpoint is one
    process's too: its optimizer state keyed by parameter index, in the optimizer's order."""
    folder = tmp_path / "run"
    _run([*_torchrun(), str(WORKER), tiny_with_dropout, str(tmp_path / "two.pt"), "--resume", str(folder)])
    result = torch.load(tmp_path / "two.pt", weights_only=False)
    straight, resumed = result["straight"], result["resumed"]
    assert resumed["losses"] == straight["losses"]
    assert straight["weights"].keys() == resumed["weights"].keys() and len(straight["weights"]) > 40
    assert [k for k, v in straight["weights"].items() if not torch.equal(v, resumed["weights"][k])] == []
    checkpoint = folder / "checkpoints" / "step-000001"
    assert json.loads((checkpoint / "state.json").read_text())["ranks"] == 2
    rng = [torch.load(checkpoint / name, weights_only=True)["torch"] for name in ("rng.pt", "rng.rank1.pt")]
    assert not torch.equal(*rng)  # the ranks drew different masks: rank 1 needs its own generator back

    one = Learner(load_model(tiny_with_dropout), load_processor(tiny_with_dropout), TrainConfig(lr=1e-3))
    said: list[str] = []
    path, state = load_latest(folder, one.model, one.optimizer, said.append)
    assert path == checkpoint and state["step"] == 1 and said == []
    params = [p for group in one.optimizer.param_groups for p in group["params"]]
    saved = torch.load(checkpoint / "optimizer.pt", weights_only=True)
    assert sorted(saved["state"]) == list(range(len(params)))
    assert all(one.optimizer.state[p]["exp_avg"].shape == p.shape for p in params)
    assert all(float(one.optimizer.state[p]["step"]) == 1.0 for p in params)
