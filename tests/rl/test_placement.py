"""Which env servers go with which rollout worker, and what each pod reserves (the pure part of
mintgym.rl.placement; the placement on a real cluster: tests/trainer/test_three_nodes.py)."""

from __future__ import annotations

import pytest

from mintgym.config import RunConfig
from mintgym.rl.placement import Pod, bundle, pods, ray_domains, server_indices
from mintgym.rl.wiring import servers_of_worker


def test_each_server_serves_one_worker_when_there_are_enough():
    assert [server_indices(w, 2, 4) for w in range(2)] == [[0, 2], [1, 3]]
    assert [server_indices(w, 3, 2) for w in range(3)] == [[0], [1], [0]]  # fewer servers: shared
    with pytest.raises(ValueError, match="worker 2 is not one of 2 workers"):
        server_indices(2, 2, 4)


def test_servers_of_worker_plays_on_the_servers_its_pod_holds():
    urls = {"web": [f"http://w{i}" for i in range(5)]}
    for w in range(2):
        assert servers_of_worker(urls, w, 2)["web"] == [urls["web"][j] for j in server_indices(w, 2, 5)]


def test_one_pod_per_worker_with_its_own_servers():
    assert pods(2, {"web": 4, "pytool": 2}) == [Pod((0,), {"web": (0, 2), "pytool": (0,)}),
                                                Pod((1,), {"web": (1, 3), "pytool": (1,)})]


def test_workers_sharing_a_server_share_a_pod():
    # 4 workers, 2 pytool servers: workers 0 and 2 share server 0, 1 and 3 share server 1
    assert pods(4, {"web": 4, "pytool": 2}) == [Pod((0, 2), {"web": (0, 2), "pytool": (0,)}),
                                                Pod((1, 3), {"web": (1, 3), "pytool": (1,)})]
    # one server of a domain ties every worker to one node
    assert pods(3, {"web": 6, "null": 1}) == [Pod((0, 1, 2), {"web": tuple(range(6)), "null": (0,)})]


def test_every_server_is_in_exactly_one_pod():
    for workers, count in [(1, 3), (3, 3), (3, 7), (5, 2), (4, 1)]:
        held = sorted(j for pod in pods(workers, {"d": count}) for j in pod.servers["d"])
        assert held == list(range(count)), (workers, count)
        assert sorted(w for pod in pods(workers, {"d": count}) for w in pod.workers) == list(range(workers))


def _config(**sections) -> RunConfig:
    return RunConfig.from_dict({"model": {"path": "m"}, "tasks": [{"id": "null/echo"}], **sections})


def test_a_pod_reserves_its_worker_and_its_servers_together():
    cfg = _config(rollout={"workers": 2, "worker_num_cpus": 1, "worker_num_gpus": 0.5,
                           "worker_resources": {"envnode": 1}},
                  envs=[{"domain": "null", "provider": "ray", "servers": 4, "num_cpus": 0.5,
                         "resources": {"envnode": 1}, "provider_options": {"memory": 2**20}}])
    [first, _] = pods(2, ray_domains(cfg))
    assert bundle(first, cfg) == {"CPU": 2.0, "GPU": 0.5, "envnode": 3.0, "memory": 2.0 * 2**20}


def test_only_ray_servers_the_run_starts_are_paired():
    assert ray_domains(_config(envs=[{"domain": "null", "provider": "ray", "servers": 3}])) == {"null": 3}
    assert ray_domains(_config(envs=[{"domain": "null", "provider": "local"}])) == {}
    assert ray_domains(_config(envs=[{"domain": "null", "provider": "ray", "urls": ["http://x"]}])) == {}
    cfg = _config(envs=[{"domain": "null", "provider": "ray"}])
    assert bundle(pods(1, ray_domains(cfg))[0], cfg) == {}  # nothing reserved: nothing to place by
