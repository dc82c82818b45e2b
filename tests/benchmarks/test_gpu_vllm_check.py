"""benchmarks/gpu_vllm_check.py without a GPU: its steps run with the hf engine in vLLM's place (the plumbing a
lent GPU then runs with vLLM), its checks fail when the engine does not get the trainer's weights, and the
config of its ``mintgym train`` step is a valid vLLM run config."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_vllm_check.py"


def hf_args(**over):
    args = {"engine": "hf", "model": None, "gpu_memory_utilization": 0.3, "max_model_len": 2048, "dtype": "bfloat16",
            "lr": 0.05, "rl_steps": 0, "rl_timeout": 300.0, "json": None}
    args.update(over)
    return argparse.Namespace(**args)


@pytest.mark.slow  # 65 s: the whole benchmark on CPU; its checks are tested one by one below
def test_every_step_passes_with_the_hf_engine_in_vllms_place(tmp_path):
    """The script as a lent GPU runs it, with ``--engine hf``: sampling, a trainer step, the trainer's weights
    through the transport into the engine, the mismatch before and after, and ``mintgym train``."""
    out = tmp_path / "summary.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--engine", "hf", "--rl-steps", "1", "--json", str(out)],
                          check=False, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads(out.read_text())
    checks = summary["checks"]
    assert all(checks.values()) and len(checks) >= 18, checks
    figures = summary["figures"]
    # hf samples and scores with the same float32 model: the same weights give no mismatch at all, the
    # weights from before the trainer's step a clear one
    assert figures["step1_mismatch_kl_mean"] == 0.0 and figures["step2_mismatch_kl_mean"] == 0.0
    assert figures["old_weights_kl_mean"] > 1e-3
    assert figures["rl_step1_mismatch_kl_mean"] == 0.0


def test_an_engine_that_keeps_its_old_weights_fails_the_check(tmp_path, monkeypatch, load_benchmark):
    """The bug class the check is for: the version moves but the weights never reach the engine."""
    from mintgym.models.tiny import build_tiny_vlm

    script = load_benchmark("gpu_vllm_check")
    model = build_tiny_vlm(tmp_path / "model", seed=0)

    def version_only(engine, transport, after):
        got = transport.receive_file(after)
        if got is not None:
            engine._version = got[0]
        return None if got is None else got[0]

    monkeypatch.setattr(script, "load_published", version_only)
    checks, figures = {}, {}
    script.engine_checks(hf_args(), str(model), tmp_path, checks, figures)
    assert checks["loaded_the_published_version"]  # the version alone looks right
    assert not checks["fingerprint_changed"] and not checks["greedy_outputs_changed"]
    assert not checks["engine_holds_the_trainers_weights"]
    assert figures["step2_mismatch_kl_mean"] > 1e-3  # the trainer's recompute no longer matches the sampler


def test_vision_features_from_the_old_weights_fail_the_check(tmp_path, monkeypatch, load_benchmark):
    """What a vLLM encoder cache not reset after an update does: the new weights load, but a screenshot seen
    before is read with the old vision tower."""
    from mintgym.models.tiny import build_tiny_vlm

    script = load_benchmark("gpu_vllm_check")
    model = build_tiny_vlm(tmp_path / "model", seed=0)

    def stale_vision(engine, transport, after):
        got = transport.receive(after)
        if got is not None:
            own = engine.model.state_dict()
            engine.update_weights(got[0], {k: own[k].clone() if ".visual." in f".{k}" else torch.from_numpy(v)
                                           for k, v in got[1].items()})
        return None if got is None else got[0]

    monkeypatch.setattr(script, "load_published", stale_vision)
    checks, figures = {}, {}
    script.engine_checks(hf_args(), str(model), tmp_path, checks, figures)
    assert checks["loaded_the_published_version"] and checks["greedy_outputs_changed"]
    assert checks["vision_update_leaves_text_only_answers"] and not checks["vision_update_reaches_a_seen_image"]


def test_the_train_step_config_is_a_valid_vllm_run(load_benchmark):
    from mintgym.config import RunConfig

    script = load_benchmark("gpu_vllm_check")
    cfg = RunConfig.from_dict(script.rl_config("vllm", "/models/tiny", 3, hf_args(engine="vllm")))
    assert cfg.engine.name == "vllm" and cfg.weights.transport == "vllm" and cfg.rollout.worker_num_gpus == 1
    assert cfg.engine.options.enforce_eager and cfg.train.mode == "sync" and cfg.train.steps == 3
    hf = RunConfig.from_dict(script.rl_config("hf", "/models/tiny", 1, hf_args()))
    assert hf.weights.transport == "filesystem" and hf.rollout.worker_num_gpus == 0


@pytest.mark.parametrize("bad", [["--engine", "tpu"], ["--rl-steps", "many"]])
def test_bad_arguments_are_one_line_errors(bad):
    proc = subprocess.run([sys.executable, str(SCRIPT), *bad], check=False, cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "error:" in proc.stderr.strip().splitlines()[-1]
