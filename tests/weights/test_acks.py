"""Weight acknowledgements live in the transport: each worker acks the version it loaded, the trainer reads
who has what. Both transports, the filesystem one across processes and the Ray one across actors."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import ray
import torch

from mintgym.weights import FilesystemBroadcast
from mintgym.weights.ray_store import RayObjectStoreBroadcast


def test_filesystem_acks_are_per_worker_and_the_latest_wins(tmp_path):
    bc = FilesystemBroadcast(tmp_path)
    assert bc.acks() == {}
    before = time.time()
    bc.ack(0, 3)
    bc.ack(1, 2)
    bc.ack(0, 4)
    acks = bc.acks()
    assert {w: v for w, (v, _) in acks.items()} == {0: 4, 1: 2}
    assert all(before <= t <= time.time() for _, t in acks.values())


def test_filesystem_acks_cross_processes_and_reset_forgets_them(tmp_path):
    code = ("import sys; from mintgym.weights import FilesystemBroadcast; "
            "FilesystemBroadcast(sys.argv[1]).ack(5, 9)")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=60)
    bc = FilesystemBroadcast(tmp_path)
    assert bc.acks()[5][0] == 9
    bc.send(1, {"w": torch.ones(1)})
    bc.reset()
    assert bc.acks() == {} and bc.latest_version() is None


@pytest.mark.parametrize("worker_id, version, problem", [(-1, 0, "worker id"), (0, -2, "version"),
                                                         ("0", 1, "worker id"), (0, 1.5, "version")])
def test_a_bad_ack_is_refused_by_name(tmp_path, worker_id, version, problem):
    with pytest.raises(ValueError, match=f"weights ack: {problem} must be an int >= 0"):
        FilesystemBroadcast(tmp_path).ack(worker_id, version)


class _Worker:
    """Stands where a rollout worker does: receives through its own copy of the transport, acks."""

    def __init__(self, weights: RayObjectStoreBroadcast, worker_id: int):
        self.weights, self.worker_id = weights, worker_id

    async def load_and_ack(self) -> int:
        version, state = await self.weights.areceive()
        await self.weights.aack(self.worker_id, version)
        return int(state["w"][0])


def test_ray_store_acks_from_worker_actors_reach_the_trainer(local_ray):
    bc = RayObjectStoreBroadcast(name="test-acks-weights")
    bc.send(0, {"w": torch.zeros(2)})
    workers = [ray.remote(_Worker).options(num_cpus=0).remote(bc, i) for i in range(2)]
    try:
        assert ray.get([w.load_and_ack.remote() for w in workers], timeout=60) == [0, 0]
        bc.send(3, {"w": torch.full((2,), 7.0)})
        assert ray.get(workers[1].load_and_ack.remote(), timeout=60) == 7
        assert {w: v for w, (v, _) in bc.acks().items()} == {0: 0, 1: 3}
        bc.ack(0, 3)  # the synchronous form, as a worker outside an event loop would call it
        assert bc.acks()[0][0] == 3
        with pytest.raises(ValueError, match="worker id"):
            bc.ack(-1, 3)
    finally:
        for w in workers:
            ray.kill(w)
        ray.kill(bc._handle())


def test_two_runs_do_not_share_acks(local_ray):
    first, second = RayObjectStoreBroadcast(name="test-acks-a"), RayObjectStoreBroadcast(name="test-acks-b")
    try:
        first.ack(0, 1)
        assert second.acks() == {}
    finally:
        ray.kill(first._handle())
        ray.kill(second._handle())
