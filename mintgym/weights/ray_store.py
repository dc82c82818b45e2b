"""Layer 5: weights through Ray's object store: ``ray.put`` once per version, workers ``ray.get`` it.

A small named actor (:class:`WeightRegistry`) remembers the newest version and its ``ObjectRef`` (wrapped
in a list so Ray passes the reference, not the arrays). The arrays are numpy, so every worker on a node
maps the same shared-memory copy instead of unpickling its own; bf16 weights travel in their own two bytes
(:func:`~mintgym.weights.base.to_wire_state`) and are received as bf16 tensors over that same copy. The
registry also keeps each worker's acknowledged version, which the trainer reads.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import ray

from mintgym.weights.base import WeightBroadcast, check_ack, from_wire_state, to_wire_state


class WeightRegistry:
    """The newest (version, [ObjectRef]), kept alive here so the object outlives the trainer's handle, and
    each worker's acknowledged (version, time)."""

    def __init__(self) -> None:
        self.version: int | None = None
        self.ref: list[Any] | None = None
        self.acked: dict[int, tuple[int, float]] = {}

    def publish(self, version: int, ref: list[Any]) -> None:
        if self.version is not None and version <= self.version:
            raise ValueError(f"weights version {version} is not newer than the published {self.version}")
        self.version, self.ref = version, ref

    def latest(self) -> tuple[int | None, list[Any] | None]:
        return self.version, self.ref

    def latest_version(self) -> int | None:
        return self.version

    def ack(self, worker_id: int, version: int) -> None:
        self.acked[worker_id] = (version, time.time())

    def acks(self) -> dict[int, tuple[int, float]]:
        return dict(self.acked)


class RayObjectStoreBroadcast(WeightBroadcast):
    """Pass the same instance (it pickles to a handle on the named registry) to trainer and workers."""

    def __init__(self, name: str = "mintgym-weights", namespace: str | None = None):
        self.name = name
        self.namespace = namespace
        self._registry = None

    def _handle(self):
        if self._registry is None:
            self._registry = ray.remote(WeightRegistry).options(
                name=self.name, namespace=self.namespace, get_if_exists=True, num_cpus=0,
                lifetime=None).remote()
        return self._registry

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "namespace": self.namespace, "_registry": None}

    def send(self, version: int, state: Mapping[str, Any]) -> None:
        ref = ray.put(to_wire_state(state))
        ray.get(self._handle().publish.remote(version, [ref]))

    def latest_version(self) -> int | None:
        return ray.get(self._handle().latest_version.remote())

    def receive(self, after: int | None = None) -> tuple[int, dict[str, np.ndarray]] | None:
        version, ref = ray.get(self._handle().latest.remote())
        if version is None or (after is not None and version <= after):
            return None
        return version, from_wire_state(ray.get(ref[0]))

    async def areceive(self, after: int | None = None) -> tuple[int, dict[str, np.ndarray]] | None:
        version, ref = await self._handle().latest.remote()
        if version is None or (after is not None and version <= after):
            return None
        return version, from_wire_state(await ref[0])

    def ack(self, worker_id: int, version: int) -> None:
        check_ack(worker_id, version)
        ray.get(self._handle().ack.remote(worker_id, version))

    async def aack(self, worker_id: int, version: int) -> None:
        check_ack(worker_id, version)
        await self._handle().ack.remote(worker_id, version)

    def acks(self) -> dict[int, tuple[int, float]]:
        return ray.get(self._handle().acks.remote())
