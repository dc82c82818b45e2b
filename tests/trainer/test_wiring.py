"""What the run config chooses without starting anything: providers, weight transports, sample episodes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mintgym.buffer.types import Batch, Group, Sample, Turn
from mintgym.errors import MintGymError
from mintgym.trainer.config import EnvConfig, RunConfig
from mintgym.trainer.train import _provider, _weight_transport

BASE = {"model": {"path": "/m"}, "tasks": [{"id": "null/echo"}]}


def test_each_domain_gets_the_provider_its_config_names():
    from mintgym.runtime.local import LocalProvider
    from mintgym.runtime.ray import RayProvider

    assert isinstance(_provider(EnvConfig(domain="null")), LocalProvider)
    ray_servers = _provider(EnvConfig(domain="web", provider="ray", num_cpus=2, resources={"envnode": 1},
                                      provider_options={"scheduling": "DEFAULT"}))
    assert isinstance(ray_servers, RayProvider)
    assert (ray_servers.num_cpus, ray_servers.resources, ray_servers.bind, ray_servers.scheduling) == (
        2.0, {"envnode": 1.0}, "127.0.0.1", "DEFAULT")


def test_settings_that_need_a_token_are_refused_by_name():
    with pytest.raises(MintGymError, match=r"envs\[web\]: ray env servers bound on 0.0.0.0 need a bearer token"):
        _provider(EnvConfig(domain="web", provider="ray", provider_options={"bind": "0.0.0.0"}))
    with pytest.raises(MintGymError, match=r"envs\[web\]: docker network 'bridge' needs a bearer token"):
        _provider(EnvConfig(domain="web", provider="docker", provider_options={"network": "bridge"}))


def test_filesystem_transport_starts_over_in_the_run_folder(tmp_path):
    from mintgym.weights import FilesystemBroadcast

    cfg = RunConfig.from_dict({**BASE, "weights": {"transport": "filesystem", "keep": 3}})
    old = FilesystemBroadcast(tmp_path / "weights")
    old.send(7, {"w": torch.ones(2)})  # left by the run before a resume
    broadcast = _weight_transport(cfg, tmp_path)
    assert isinstance(broadcast, FilesystemBroadcast) and broadcast.keep == 3
    assert broadcast.latest_version() is None and not list((tmp_path / "weights").glob("weights-*.npz"))
    broadcast.send(2, {"w": torch.zeros(2)})  # the checkpoint's version, lower than the stale 7
    assert broadcast.receive()[0] == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU message")
def test_vllm_transport_is_a_clear_error_on_cpu(tmp_path):
    cfg = RunConfig.from_dict({**BASE, "engine": {"name": "vllm"}, "weights": {"transport": "vllm"}})
    with pytest.raises(MintGymError, match="not available on CPU: it needs CUDA GPUs; use weights.transport: ray"):
        _weight_transport(cfg, tmp_path)


def _group(gid: str, rewards: list[float]) -> Group:
    samples = [Sample("null/echo", "null", 3, r, [Turn([1, 2, 3], [7], [-0.5], policy_version=2,
                                                       images=[np.full((4, 6, 3), i, np.uint8)])],
                      "success" if r else "failure", episode_id=f"{gid}-{i}") for i, r in enumerate(rewards)]
    return Group(gid, "null/echo", "null", 3, samples)


def test_sample_episodes_take_the_first_of_every_group_first(tmp_path):
    from mintgym.trainer.samples import write_sample_episodes
    from mintgym.trajectory.store import load_trajectory

    batch = Batch([_group("null/echo-3-aaaa", [1.0, 0.0]), _group("null/echo-3-bbbb", [0.0, 0.0, 1.0]),
                   _group("null/echo-3-aaaa", [0.0, 1.0])], trainer_version=3)  # a task id's slash; a same id
    dirs = write_sample_episodes(tmp_path, 5, batch, n=4)
    assert [d.name for d in dirs] == ["00-null_echo-3-aaaa-0", "01-null_echo-3-bbbb-0", "02-null_echo-3-aaaa-0",
                                      "03-null_echo-3-aaaa-1"]
    assert all(d.parent == tmp_path / "episodes" / "step_5" for d in dirs)
    first = load_trajectory(dirs[0])
    assert first.status == "success" and first.total_reward == 1.0 and first.extra["lag"] == 1
    assert first.extra["advantage"] == pytest.approx(1.0, abs=1e-5)  # (1 - 0.5) / std 0.5
    (step,) = first.steps
    assert step.screen_size == (6, 4) and step.response_token_ids == [7] and step.logprobs == [-0.5]
    assert step.terminated and step.reward == 1.0 and step.policy_version == 2


@pytest.mark.parametrize("quiet", [True, False])
def test_ray_output_goes_to_the_run_log_unless_asked(tmp_path, capfd, caplog, quiet):
    import logging
    import os

    from mintgym.trainer.train import _ray_quiet

    before = logging.getLogger("ray").level  # ray sets its own level once imported (earlier tests may have)
    with _ray_quiet(tmp_path, quiet):
        os.write(2, b"[E core_worker.cc] from Ray's C++ core\n")
        logging.getLogger("ray._private.authentication").warning("Token authentication is enabled")
    os.write(2, b"ours, after\n")
    console = capfd.readouterr().err
    assert "ours, after" in console
    assert ("core_worker.cc" in console) is not quiet
    assert ("Token authentication" in caplog.text) is not quiet
    if quiet:
        assert "from Ray's C++ core" in (tmp_path / "ray.log").read_text()
    assert logging.getLogger("ray").level == before  # restored


def test_a_decoded_prompt_becomes_the_messages_the_inspector_shows():
    from mintgym.trainer.samples import prompt_messages

    pad = "<|vision_start|>" + "<|image_pad|>" * 3 + "<|vision_end|>"
    text = (f"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n{pad}Before{pad}Now: count<|im_end|>\n"
            "<|im_start|>assistant\n")
    assert prompt_messages(text, "turn-1", (60, 40), images=2) == [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "[image 1 of 2, not stored]"},
                                     {"type": "text", "text": "Before"},
                                     {"type": "image", "frame_id": "turn-1", "size": [60, 40]},
                                     {"type": "text", "text": "Now: count"}]}]
    assert prompt_messages("plain prompt", "turn-0", (0, 0), images=0) == [
        {"role": "prompt", "content": [{"type": "text", "text": "plain prompt"}]}]
