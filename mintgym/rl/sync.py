"""Layer 7: publishing the learner's weights and checking that every rollout worker loaded them.

The weight transport carries the versions and the workers' acknowledgements; this module decides when a
version is sent (``sync_every``, ``publish_delay``) and how long the trainer tolerates a worker behind it
(``sync_timeout``), failing the run with who is behind and what it was doing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import torch

from mintgym.config import TrainConfig
from mintgym.errors import error_line
from mintgym.weights.base import WeightBroadcast, WeightSyncFailed, WeightSyncTimeout


class WeightSync:
    """The trainer's side of the weight traffic: ``publish`` versions, ``check`` the workers' acks."""

    def __init__(self, weights: WeightBroadcast, train: TrainConfig, workers: list[Any]):
        self.weights, self.train, self.workers = weights, train, workers
        self.published = -1
        #: Versions trained but not yet published (``publish_delay``), oldest first.
        self.held: list[tuple[int, dict[str, torch.Tensor]]] = []
        #: Published versions some worker has not acknowledged yet, with when they were sent.
        self.pending: list[tuple[int, float]] = []

    def send_first(self, version: int, state: Mapping[str, torch.Tensor]) -> None:
        """The weights workers start from (no worker is waited for)."""
        self.weights.send(version, state)
        self.published = version

    def publish(self, version: int, state: Mapping[str, torch.Tensor], final: bool = False) -> None:
        """Send ``version``, or with ``publish_delay`` the one that many versions older (``final``: this one
        regardless, for the final evaluation)."""
        delay = self.train.publish_delay
        if delay and not final:
            self.held.append((version, {k: v.clone() for k, v in state.items()}))
            due = [h for h in self.held if h[0] <= version - delay]
            if not due:
                return
            version, state = due[-1]
            self.held = [h for h in self.held if h[0] > version]
        if version <= self.published:
            return
        self.weights.send(version, state)
        self.published = version
        self.pending.append((version, time.monotonic()))

    def wait_all(self) -> None:
        """Have every worker load the newest weights now. Returns once every worker acknowledged the published
        version; WeightSyncFailed (one line, naming the worker) if a worker's load raised, WeightSyncTimeout
        after ``sync_timeout``. A worker that answers with an older version (its refresh was already under
        way when the version came out) is asked again."""
        import ray

        started = time.monotonic()
        behind = list(range(len(self.workers)))
        while behind:
            left = self.train.sync_timeout - (time.monotonic() - started)
            calls = {self.workers[i].sync_weights.remote(): i for i in behind}
            done, _ = ray.wait(list(calls), num_returns=len(calls), timeout=max(0.0, left))
            for ref in done:  # a task that raised is "done" too: its error surfaces here
                try:
                    ray.get(ref)
                except Exception as err:
                    raise WeightSyncFailed(f"worker {calls[ref]} failed to load weights version {self.published}: "
                                           f"{_one_line(err)}") from err
            acks = self.weights.acks()
            behind = [i for i in behind if acks.get(i, (-1, 0.0))[0] < self.published]
            if behind and (len(done) < len(calls) or time.monotonic() - started >= self.train.sync_timeout):
                self._failed(self.published, time.monotonic() - started)
            if behind:
                time.sleep(0.05)
        self.pending.clear()

    def check(self) -> None:
        """Forget versions every worker acknowledged; WeightSyncTimeout for one older than ``sync_timeout``."""
        if not self.pending:
            return
        acks = self.weights.acks()
        oldest = min((acks.get(i, (-1, 0.0))[0] for i in range(len(self.workers))), default=-1)
        self.pending = [(v, t) for v, t in self.pending if v > oldest]
        for v, t in self.pending:
            if time.monotonic() - t > self.train.sync_timeout:
                self._failed(v, time.monotonic() - t)

    def _failed(self, version: int, waited: float) -> None:
        acks = self.weights.acks()
        lines = []
        for i, w in enumerate(self.workers):
            have = acks.get(i, (None, 0.0))[0]
            if have is None or have < version:
                lines.append(f"worker {i} still at version {have} ({worker_doing(w)})")
        raise WeightSyncTimeout(f"weights version {version} not loaded by every engine after {waited:.0f}s "
                                f"(sync_timeout={self.train.sync_timeout}s); the trainer was waiting on: "
                                + "; ".join(lines or ["(all caught up just now)"]))


def worker_doing(worker: Any) -> str:
    """What a rollout worker actor is doing, from its ``status()``, for an error message that names it; its
    failure to answer within 5 s is said instead."""
    import ray

    try:
        status = ray.get(worker.status.remote(), timeout=5)
    except Exception as err:  # noqa: BLE001 -- the message must name the worker even when it cannot answer
        return f"not answering ({type(err).__name__})"
    kinds = status.get("error_kinds") or {}
    failing = f"; most frequent error: {max(kinds, key=kinds.get)}" if kinds else ""
    return (f"{status['in_flight']} episodes in flight, {status['groups']} groups pushed, "
            f"{status['denied']} admissions denied, {status['errors']} of {status['episodes']} episodes "
            f"failed{failing}")


def _one_line(err: BaseException) -> str:
    """``Type: first line`` of a worker's error (Ray wraps it: the original is its ``cause``)."""
    cause = getattr(err, "cause", None)
    return error_line(cause if isinstance(cause, BaseException) else err)
