"""Layer 5: the weight transport ABC, one per process boundary (trainer -> engines).

A transport owns the weight versions end to end: the trainer ``send``s a version, each worker ``receive``s
it into its engine and ``ack``s the version it loaded, and the trainer reads ``acks()`` to know which worker
runs which weights (its sync checks). Acknowledgements reset with the transport: a new run starts with none.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from pathlib import Path
from collections.abc import Mapping
from typing import Any

import numpy as np

from mintgym.errors import MintGymError


class WeightSyncTimeout(MintGymError):
    """Published weights did not reach every engine in time; the message says who waited on what."""


class WeightBroadcast(ABC):
    """Trainer side ``send``s versioned weights and reads ``acks``; engine side ``receive``s any newer than
    it has and ``ack``s what it loaded."""

    @abstractmethod
    def send(self, version: int, state: Mapping[str, Any]) -> None:
        """Publish ``state`` (name -> numpy array or tensor) as ``version`` (strictly increasing)."""

    @abstractmethod
    def latest_version(self) -> int | None:
        """The newest published version (None before the first send)."""

    @abstractmethod
    def receive(self, after: int | None = None) -> tuple[int, dict[str, np.ndarray]] | None:
        """The newest (version, state) if newer than ``after``, else None."""

    @abstractmethod
    def ack(self, worker_id: int, version: int) -> None:
        """Engine side: worker ``worker_id`` now generates with ``version`` (replaces its earlier ack)."""

    @abstractmethod
    def acks(self) -> dict[int, tuple[int, float]]:
        """Trainer side: worker id -> (the version it acknowledged last, when: ``time.time()`` seconds)."""

    def receive_file(self, after: int | None = None) -> tuple[int, Path] | None:
        """The newest (version, weights file) if newer than ``after``, for engines that load a file themselves
        (vLLM's in-place update); None when there is none, or when this transport has no files."""
        return None

    async def areceive(self, after: int | None = None) -> tuple[int, dict[str, np.ndarray]] | None:
        """:meth:`receive` for code running on an event loop (a Ray async actor)."""
        return await asyncio.to_thread(self.receive, after)

    async def aack(self, worker_id: int, version: int) -> None:
        """:meth:`ack` for code running on an event loop."""
        await asyncio.to_thread(self.ack, worker_id, version)


def check_ack(worker_id: int, version: int) -> None:
    """Refuse an acknowledgement no trainer could read back (a bad id or version), naming it."""
    if isinstance(worker_id, bool) or not isinstance(worker_id, int) or worker_id < 0:
        raise ValueError(f"weights ack: worker id must be an int >= 0, got {worker_id!r}")
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(f"weights ack: version must be an int >= 0, got {version!r}")


def to_numpy_state(state: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """A state dict as CPU numpy arrays (what crosses process boundaries without pickling tensors)."""
    out: dict[str, np.ndarray] = {}
    for name, value in state.items():
        if hasattr(value, "detach"):
            value = value.detach().cpu()
            if str(value.dtype) == "torch.bfloat16":
                value = value.float()
            value = value.numpy()
        out[name] = np.asarray(value)
    return out
