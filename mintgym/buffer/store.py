"""Layer 5: the trajectory buffer between rollout workers and the trainer (a Ray actor in a run).

Workers ``admit`` before starting a group of episodes and ``push`` the finished :class:`Group`; the trainer
``get_batch``es. Admission control bounds the lag before any work is spent: a group is admitted only if
the weights it would be sampled with are at most ``max_lag`` versions behind the version the trainer
will have when it trains on it, estimated from the groups already consumed, queued and in flight
(``(consumed + queued + reserved) // groups_per_step``). The mixer then drops, at batch time, whatever
is still too old. Every outcome is counted: admitted, denied, pushed, lost (a worker died with the
reservation open, or a resume found it open), consumed, dropped stale, shortfall.

With ``own_images=True`` (a Ray actor in a run) ``push`` puts each screenshot array into Ray's object store
itself and keeps the reference, so the buffer, not the worker that made them, owns the images: a worker
that dies after pushing leaves its groups intact (Ray frees an object whose owner died).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import asdict
from typing import Any, Mapping, Sequence

from mintgym.buffer.mixer import DomainMixer
from mintgym.buffer.types import Batch, DomainStats, Group


class TrajectoryBuffer:
    """Holds groups per domain and the run's accounting; see the module docstring."""

    def __init__(self, domains: Sequence[str], *, groups_per_step: int, max_lag: int | None = None,
                 weights: Mapping[str, float] | None = None, own_images: bool = False):
        if groups_per_step < 1:
            raise ValueError(f"groups_per_step must be >= 1, got {groups_per_step}")
        self.mixer = DomainMixer(domains, weights, max_lag)
        self.groups_per_step = groups_per_step
        self.max_lag = max_lag
        self.own_images = own_images
        self.trainer_version = 0
        self._reservations: dict[int, tuple[int, int]] = {}  # id -> (worker id, policy version)
        self._ids = itertools.count()
        self._arrived: asyncio.Event | None = None
        self.counts: dict[str, int] = {"admitted": 0, "denied": 0, "pushed": 0, "pushed_samples": 0, "lost": 0,
                                       "lost_on_resume": 0, "consumed": 0, "consumed_samples": 0,
                                       "late_push": 0, "worker_registrations": 0}
        self.worker_versions: dict[int, tuple[int, float]] = {}
        self.worker_restarts: dict[int, int] = {}

    # -- workers --------------------------------------------------------------------------------------

    def register_worker(self, worker_id: int) -> int:
        """A worker (re)starts: reservations it still held are counted lost. Returns how many."""
        self.counts["worker_registrations"] += 1
        if worker_id in self.worker_restarts or worker_id in self.worker_versions:
            self.worker_restarts[worker_id] = self.worker_restarts.get(worker_id, 0) + 1
        else:
            self.worker_restarts.setdefault(worker_id, 0)
        stale = [r for r, (w, _) in self._reservations.items() if w == worker_id]
        for r in stale:
            del self._reservations[r]
        self.counts["lost"] += len(stale)
        return len(stale)

    def planned_version(self) -> int:
        """The trainer version a group admitted now would be trained at (see the module docstring)."""
        ahead = self.counts["consumed"] + len(self.mixer) + len(self._reservations)
        return max(self.trainer_version, ahead // self.groups_per_step)

    def admit(self, worker_id: int, policy_version: int) -> int | None:
        """A reservation id for one group sampled at ``policy_version``, or None (counted) when too stale."""
        if self.max_lag is not None and self.planned_version() - policy_version > self.max_lag:
            self.counts["denied"] += 1
            return None
        reservation = next(self._ids)
        self._reservations[reservation] = (worker_id, policy_version)
        self.counts["admitted"] += 1
        return reservation

    def release(self, reservation: int) -> None:
        """A worker gave up on an admitted group (its episodes failed): counted lost."""
        if self._reservations.pop(reservation, None) is not None:
            self.counts["lost"] += 1

    def push(self, group: Group) -> bool:
        """Queue a finished group. False (counted ``late_push``) if its reservation was already lost."""
        if group.reservation is not None:
            if group.reservation not in self._reservations:
                self.counts["late_push"] += 1
                return False
            del self._reservations[group.reservation]
        if self.own_images:
            _own_images(group)
        self.mixer.add(group)
        self.counts["pushed"] += 1
        self.counts["pushed_samples"] += len(group.samples)
        if self._arrived is not None:
            self._arrived.set()
        return True

    def ack_weights(self, worker_id: int, version: int) -> None:
        self.worker_versions[worker_id] = (version, time.time())

    def get_worker_versions(self) -> dict[int, tuple[int, float]]:
        return dict(self.worker_versions)

    # -- trainer --------------------------------------------------------------------------------------

    def set_trainer_version(self, version: int) -> None:
        self.trainer_version = version

    async def get_batch(self, n_groups: int, trainer_version: int, timeout: float | None = None) -> Batch:
        """Wait until every domain can fill its quota (or ``timeout`` s pass), then build the batch."""
        self.trainer_version = trainer_version
        if self._arrived is None:
            self._arrived = asyncio.Event()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.mixer.ready(n_groups, trainer_version):
            self._arrived.clear()
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                break
            try:
                await asyncio.wait_for(self._arrived.wait(), wait)
            except asyncio.TimeoutError:
                break
        batch = self.mixer.build(n_groups, trainer_version)
        self.counts["consumed"] += len(batch.groups)
        self.counts["consumed_samples"] += len(batch.samples)
        return batch

    def stats(self) -> dict[str, Any]:
        return {"counts": dict(self.counts), "queued": {d: len(q) for d, q in self.mixer.queues.items()},
                "reserved": len(self._reservations), "trainer_version": self.trainer_version,
                "domains": {d: asdict(s) for d, s in self.mixer.totals.items()},
                "worker_restarts": dict(self.worker_restarts)}

    # -- checkpoint -----------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The accounting (not the queued groups: their images live in this run's object store)."""
        return {"counts": dict(self.counts), "domains": {d: asdict(s) for d, s in self.mixer.totals.items()},
                "trainer_version": self.trainer_version, "queued": len(self.mixer),
                "reserved": len(self._reservations), "worker_restarts": dict(self.worker_restarts)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the accounting; what was queued or in flight at the checkpoint is counted lost_on_resume."""
        self.counts.update(state["counts"])
        for d, s in state["domains"].items():
            if d in self.mixer.totals:
                self.mixer.totals[d] = DomainStats(**s)
        self.trainer_version = int(state["trainer_version"])
        self.counts["lost_on_resume"] += int(state["queued"]) + int(state["reserved"])
        self.worker_restarts = {int(k): v for k, v in state.get("worker_restarts", {}).items()}


def _own_images(group: Group) -> None:
    """Replace the group's image arrays by object-store references owned by the calling process."""
    import numpy as np
    import ray

    for sample in group.samples:
        for turn in sample.turns:
            turn.images = [ray.put(img) if isinstance(img, np.ndarray) else img for img in turn.images]
