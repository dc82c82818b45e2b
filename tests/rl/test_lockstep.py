"""``mintgym train`` under torchrun: two ranks (FSDP2 on gloo, CPU) run one run as one process does, a resume
under torchrun goes on bit for bit, and launches that cannot work are one line before anything starts."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parents[2]
STEPS = 3


def _train(config: Path, out: Path, *args: str, ranks: int = 0, env: dict[str, str] | None = None,
           check: bool = True) -> subprocess.CompletedProcess:
    """``mintgym train`` as a user starts it: plain, or by torchrun with ``ranks`` processes."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks), "--nnodes", "1",
                "--master-addr", "127.0.0.1", "--master-port", str(port), "-m"] if ranks else [sys.executable, "-m"]
    done = subprocess.run([*launcher, "mintgym.cli", "train", "--config", str(config), "--out", str(out), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=400, check=False,
                          env={**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", **(env or {})})
    if check:
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return done


def _sft_dataset(folder: Path) -> Path:
    """Three imitation rows (an image, an instruction, the answer): the warm start's supervised steps run on two
    ranks with one of them short of a row."""
    import datasets
    from PIL import Image

    rng = np.random.default_rng(0)
    rows = [{"task_id": "null/echo", "seed": i, "response": answer, "response_token_ids": [],
             "messages": json.dumps([{"role": "user", "content": [{"type": "image", "image": 0},
                                                                  {"type": "text", "text": f"Say ok ({i})"}]}]),
             "images": [Image.fromarray(rng.integers(0, 256, (28, 28, 3), dtype=np.uint8))]}
            for i, answer in enumerate(["ok", "no", "ok"])]
    datasets.Dataset.from_list(rows).save_to_disk(str(folder))
    return folder


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> Path:
    from mintgym.models.tiny import build_tiny_vlm

    root = tmp_path_factory.mktemp("lockstep")
    path = root / "run.yaml"
    path.write_text(yaml.safe_dump({
        "model": {"path": build_tiny_vlm(root / "model", vocab_size=256)},
        "tasks": [{"id": "null/echo", "seeds": [0]}],
        "agent": {"kind": "answer", "options": {"choices": {"null": ["no", "ok"]}}},
        "rollout": {"workers": 1, "group_size": 2, "groups_in_flight": 1, "max_new_tokens": 1, "temperature": 0},
        "warm_start": {"dataset": str(_sft_dataset(root / "sft")), "steps": 2, "lr": 1e-3, "batch_size": 3},
        # greedy rollouts: the same episodes in every run; an entropy bonus gives the tied answers a gradient
        "train": {"mode": "sync", "steps": STEPS, "groups_per_step": 1, "lr": 1e-3, "checkpoint_every": 1,
                  "entropy_coef": 0.5, "skip_no_signal": False, "sync_timeout": 60, "batch_timeout": 120},
        "eval": {"groups": 1},
    }))
    return path


@pytest.fixture(scope="module")
def runs(config, tmp_path_factory) -> dict[str, Path]:
    """The run in one process and under ``torchrun --nproc-per-node 2``."""
    root = tmp_path_factory.mktemp("runs")
    _train(config, root / "one")
    _train(config, root / "two", ranks=2)
    return {"one": root / "one", "two": root / "two"}


def _rows(out: Path) -> dict[int, dict]:
    return {int(row["step"]): row for row in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())}


def _checkpoint(out: Path, step: int = STEPS) -> Path:
    return out / "checkpoints" / f"step-{step:06d}"


@pytest.mark.slow  # two runs of a minute each on 2 cores
@pytest.mark.timeout(900)
def test_two_ranks_train_as_one_process(runs):
    """Warm start, three sync steps, final eval: the sharded run's warm-start losses and per-step loss and grad norm
    agree with one process's within 1e-5 relative. Its weights agree within 1e-4 (a tenth of one Adam step at lr
    1e-3), all but 0.1% of them within 1e-6: Adam divides by the root of its second moment, so an element whose
    gradient is near 0 moves by up to the learning rate whatever its rounding, and two ranks sum each gradient in
    another order. The checkpoint is one process's: the same files, optimizer state keyed alike, loaded by
    ``from_pretrained``; the final eval (``mintgym eval --model OUT``'s code) scored it alike."""
    from mintgym.models.loading import load_model

    one, two = runs["one"], runs["two"]
    assert json.loads((_checkpoint(two) / "state.json").read_text())["ranks"] == 2
    assert (_checkpoint(two) / "rng.rank1.pt").is_file()
    warm = [json.loads((out / "warm_start" / "summary.json").read_text())["losses"] for out in (one, two)]
    assert warm[1] == pytest.approx(warm[0], rel=1e-6) and len(warm[0]) == 2
    rows = [_rows(out) for out in (one, two)]
    assert sorted(rows[1]) == list(range(1, STEPS + 1))
    for step, row in rows[0].items():
        for key in ("loss", "grad_norm", "entropy"):
            assert rows[1][step][key] == pytest.approx(row[key], rel=1e-5), (step, key)
    mine, theirs = (load_file(_checkpoint(out) / "model.safetensors") for out in (two, one))
    assert mine.keys() == theirs.keys()
    gaps = torch.cat([(mine[k] - theirs[k]).abs().flatten() for k in theirs])
    assert gaps.max() < 1e-4 and (gaps > 1e-6).float().mean() < 1e-3
    saved = [torch.load(_checkpoint(out) / "optimizer.pt", weights_only=True) for out in (one, two)]
    assert saved[1]["param_groups"] == saved[0]["param_groups"] and saved[1]["state"].keys() == saved[0]["state"].keys()
    for index, state in saved[0]["state"].items():
        for key, value in state.items():
            torch.testing.assert_close(saved[1]["state"][index][key], value, rtol=0, atol=1e-6, msg=f"{index} {key}")
    sorted_files = [sorted(p.name for p in _checkpoint(out).iterdir() if p.name != "rng.rank1.pt")
                    for out in runs.values()]
    assert sorted_files[0] == sorted_files[1]
    loaded = [load_model(_checkpoint(out)).state_dict() for out in (one, two)]
    assert loaded[1].keys() == loaded[0].keys()
    assert max(float((loaded[1][k] - v).abs().max()) for k, v in loaded[0].items()) < 1e-4
    evals = [json.loads((out / "final_eval.json").read_text()) for out in (one, two)]
    assert evals[1]["domains"] == evals[0]["domains"] and evals[0]["domains"]["null"]["episodes"] == 1


@pytest.mark.slow  # a third run under torchrun
@pytest.mark.timeout(900)
def test_a_resume_under_torchrun_goes_on_as_the_uninterrupted_run(runs, config, tmp_path):
    """The torchrun run killed after step 2's checkpoint and started again under torchrun ends on the same step-3
    loss, weights, Adam state and every rank's random state as the run that was not interrupted, and says
    nothing changed in the optimizer."""
    resumed = tmp_path / "resumed"
    shutil.copytree(runs["two"], resumed)
    shutil.rmtree(_checkpoint(resumed))
    said = _train(config, resumed, ranks=2)
    output = said.stdout + said.stderr
    assert "resumed from" in output and "at step 2" in output and "changed on resume" not in output, output[-3000:]
    assert _rows(resumed)[STEPS]["loss"] == _rows(runs["two"])[STEPS]["loss"]
    mine, theirs = (load_file(_checkpoint(out) / "model.safetensors") for out in (resumed, runs["two"]))
    assert [k for k, v in theirs.items() if not torch.equal(v, mine[k])] == []
    for name in ("optimizer.pt", "rng.pt", "rng.rank1.pt"):
        a, b = (torch.load(_checkpoint(out) / name, weights_only=True) for out in (resumed, runs["two"]))
        for index, state in (a["state"] if name == "optimizer.pt" else {0: a}).items():
            other = b["state"][index] if name == "optimizer.pt" else b
            assert all(torch.equal(torch.as_tensor(v), torch.as_tensor(other[k])) for k, v in state.items()
                       if isinstance(v, torch.Tensor)), (name, index)


# -- launches that cannot work: one line from rank 0, before anything starts ----------------------------------

def _one_rank(**env: str) -> dict[str, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port), **env}


@pytest.mark.parametrize(("env", "args", "said"), [
    ({"WORLD_SIZE": "2"}, [], ("mintgym train shards the learner over the GPUs of one node: torchrun started 2 "
                               "ranks, 1 on this node; launch it with --nnodes 1 (rollouts scale out over Ray)")),
    ({}, ["train.mismatch_snapshots=2"], ("train.mismatch_snapshots needs a whole model to score lagged turns "
                                          "with: set it to 0 under torchrun (the learner is sharded)")),
    ({}, ["model.device=cuda:1"], ("model.device cuda:1 under torchrun: each rank trains on its own GPU "
                                   "(LOCAL_RANK); set model.device: cuda")),
])
def test_a_launch_that_cannot_work_is_one_line(config, tmp_path, env, args, said):
    done = _train(config, tmp_path / "run", *args, env=_one_rank(**env), check=False)
    assert (done.returncode, done.stderr.strip().splitlines()[-1:]) == (2, [f"error: {said}"]), done.stderr[-2000:]
    assert "error:" not in done.stdout and not (tmp_path / "run").exists()


def test_ranks_given_different_runs_are_refused_in_one_line(config, tmp_path):
    """Rank 1 started with another learning rate (torchrun hands every rank the same arguments; a launcher of one's
    own may not): rank 0 names the key, rank 1 exits quietly, nothing is written."""
    env = _one_rank(WORLD_SIZE="2", LOCAL_WORLD_SIZE="2")
    command = [sys.executable, "-m", "mintgym.cli", "train", "--config", str(config), "--out", str(tmp_path / "run")]
    procs = [subprocess.Popen([*command, *extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", **env,
                                              "RANK": str(rank), "LOCAL_RANK": str(rank)})
             for rank, extra in enumerate([[], ["train.lr=0.01"]])]
    (_, first), (_, second) = (proc.communicate(timeout=120) for proc in procs)
    assert [proc.returncode for proc in procs] == [2, 0], first[-2000:] + second[-2000:]
    assert first.strip().splitlines()[-1] == (
        "error: rank 1 was given another run than rank 0 (it differs in train.lr): "
        "launch every rank with the same --config, overrides and --out")
    assert "error:" not in second and not (tmp_path / "run").exists()


def test_a_bad_config_under_torchrun_is_one_line(config, tmp_path):
    """Every rank reads the same bad value: rank 0 says it, the others exit quietly."""
    done = _train(config, tmp_path / "run", "train.lr=-1", ranks=2, check=False)
    said = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error:")]
    assert done.returncode != 0, said
    assert said == ["error: train.lr: input should be greater than or equal to 0 (got -1)"], said
