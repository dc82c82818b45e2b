"""WeightSync.wait_all (sync mode, and before the final evaluation) on a small local Ray: a worker counts as
synced only when it acknowledged the published version, and a worker that failed to load says so."""

from __future__ import annotations

import pytest
import ray
import torch

from mintgym.config import TrainConfig
from mintgym.rl.sync import WeightSync
from mintgym.weights import FilesystemBroadcast, WeightSyncFailed, WeightSyncTimeout


class Worker:
    """Stands where a rollout worker does. ``plan``: what each ``sync_weights`` call does in turn: ``"load"``
    (load the newest and ack it), ``"stale"`` (return the version it had, as a refresh that was already under
    way does), ``"fail"`` (its engine raised); the last one repeats."""

    def __init__(self, weights: FilesystemBroadcast, worker_id: int, plan: list[str]):
        self.weights, self.worker_id, self.plan = weights, worker_id, plan
        self.version, self.calls = 0, 0

    def sync_weights(self) -> int:
        step = self.plan[min(self.calls, len(self.plan) - 1)]
        self.calls += 1
        if step == "fail":
            raise FileNotFoundError("weights-00000003.safetensors\n(the rest of a long traceback)")
        if step == "load":
            self.version = self.weights.latest_version()
            self.weights.ack(self.worker_id, self.version)
        return self.version

    def status(self) -> dict:
        # the keys a RolloutWorker's status() always has
        return {"in_flight": 0, "groups": 0, "denied": 0, "errors": 0, "episodes": 0, "error_kinds": {}}

    def count(self) -> int:
        return self.calls


def start(tmp_path, plans: list[list[str]], timeout: float = 20.0) -> tuple[WeightSync, list]:
    weights = FilesystemBroadcast(tmp_path)
    workers = [ray.remote(Worker).options(num_cpus=0).remote(weights, i, plan) for i, plan in enumerate(plans)]
    ray.get([w.count.remote() for w in workers])  # started: sync_timeout is not spent on starting actors
    sync = WeightSync(weights, TrainConfig(sync_timeout=timeout), workers)
    sync.send_first(0, {"w": torch.zeros(2)})
    for i in range(len(plans)):
        weights.ack(i, 0)
    sync.publish(1, {"w": torch.ones(2)})
    return sync, workers


def test_a_worker_that_failed_to_load_is_not_counted_as_synced(local_ray, tmp_path):
    """The reviewer's s5: ray.wait counts a task that raised as done."""
    sync, _ = start(tmp_path, [["load"], ["fail"]])
    with pytest.raises(WeightSyncFailed, match=r"worker 1 failed to load weights version 1: FileNotFoundError: "
                                                r"weights-00000003.safetensors$") as raised:
        sync.wait_all()
    assert "\n" not in str(raised.value)
    assert sync.pending  # version 1 is not known to be loaded everywhere


def test_a_worker_behind_the_published_version_is_asked_again(local_ray, tmp_path):
    sync, workers = start(tmp_path, [["load"], ["stale", "load"]])
    sync.wait_all()
    assert ray.get([w.count.remote() for w in workers]) == [1, 2]
    assert {i: v for i, (v, _) in sync.weights.acks().items()} == {0: 1, 1: 1} and not sync.pending


def test_a_worker_that_stays_behind_times_out_by_name(local_ray, tmp_path):
    sync, _ = start(tmp_path, [["load"], ["stale"]], timeout=1.0)
    with pytest.raises(WeightSyncTimeout, match=r"version 1 not loaded.*worker 1 still at version 0") as raised:
        sync.wait_all()
    assert "worker 0" not in str(raised.value)
