"""Shared fixtures: a real uvicorn server on loopback in a thread, for apps built in the test; a local Ray
instance for a test module; local env servers of a domain for a test module."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from mintgym.runtime.make import provider
from mintgym.testing import serve_asgi

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


running_app = serve_asgi  # a real uvicorn server on loopback in a thread


@pytest.fixture
def serve_app():
    stack = contextlib.ExitStack()
    yield lambda app: stack.enter_context(running_app(app))
    stack.close()


@pytest.fixture(scope="module")
def local_ray():
    """A local one-CPU Ray instance for the module's tests, shut down after them."""
    import ray

    ray.init(address="local", num_cpus=1, include_dashboard=False, configure_logging=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def worker_spec():
    """``worker_spec(model_path, tasks, env_urls, **sections)``: a rollout worker's spec over a run config made of
    ``tasks`` ((task id, seeds, env domain) triples; one task may stand for several domains here, as a run could
    not) and the given sections (``agent``, ``engine``, ``rollout``, ``envs``), the rest defaults."""
    from mintgym.config import RunConfig, TaskConfig
    from mintgym.rollout.ray_worker import WorkerSpec

    def build(model_path, tasks, env_urls, *, eval_seeds=None, **sections):
        entries = [TaskConfig(id=task, seeds=seeds, env_domain=domain, eval_seeds=(eval_seeds or {}).get(task))
                   for task, seeds, domain in tasks]
        run = RunConfig.from_dict({"model": {"path": str(model_path)}, "tasks": [{"id": tasks[0][0]}], **sections})
        return WorkerSpec(worker_id=0, run=run.model_copy(update={"tasks": entries}), env_urls=env_urls)

    return build


@pytest.fixture(scope="module")
def local_server():
    """``local_server(domain)``: the base URL of a local env server of ``domain``, started once per module."""
    prov = provider("local")
    started = {}

    def url(domain: str, ready_timeout: float = 120.0) -> str:
        if domain not in started:
            started[domain] = prov.start(domain)
            prov.wait_ready(started[domain], ready_timeout)
        return started[domain].base_url

    yield url
    for handle in started.values():
        prov.stop(handle)


@pytest.fixture(scope="module")
def null_server(local_server):
    """The base URL of a local env server of the null domain, started once per module."""
    return local_server("null")
