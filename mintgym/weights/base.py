"""Layer 5: the weight transport ABC, one per process boundary (trainer -> engines).

A transport owns the weight versions end to end: the trainer ``send``s a version, each worker ``receive``s
it into its engine and ``ack``s the version it loaded, and the trainer reads ``acks()`` to know which worker
runs which weights (its sync checks). Acknowledgements reset with the transport: a new run starts with none.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mintgym.errors import MintGymError


class WeightSyncTimeout(MintGymError):
    """Published weights did not reach every engine in time; the message says who waited on what."""


class WeightSyncFailed(MintGymError):
    """A worker failed to load published weights; the message names the worker and its error."""


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
    def receive(self, after: int | None = None) -> tuple[int, dict[str, Any]] | None:
        """The newest (version, state) if newer than ``after``, else None. The state maps names to numpy
        arrays, and bfloat16 tensors (numpy has none) to torch bfloat16 tensors (:func:`from_wire_state`)."""

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

    async def areceive(self, after: int | None = None) -> tuple[int, dict[str, Any]] | None:
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


def state_mismatch(expected: Mapping[str, tuple[int, ...]], got: Mapping[str, tuple[int, ...]]) -> str | None:
    """The first difference between two name -> shape maps, in one line (None when they agree).

    Engines call it before copying anything, so a state they refuse leaves them exactly as they were.
    """
    missing = [k for k in expected if k not in got]
    if missing:
        return f"it lacks {missing[0]!r}" + (f" and {len(missing) - 1} more of the model's tensors"
                                              if len(missing) > 1 else "")
    unexpected = [k for k in got if k not in expected]
    if unexpected:
        return f"it has {unexpected[0]!r}, which the model has not" + (
            f" (and {len(unexpected) - 1} more)" if len(unexpected) > 1 else "")
    for name, shape in expected.items():
        if tuple(got[name]) != tuple(shape):
            return f"its {name!r} has shape {tuple(got[name])}, the model's {tuple(shape)}"
    return None


#: The entry of a wire state naming its bfloat16 tensors, which travel as their int16 bit patterns.
BF16_NAMES = "__mintgym_bfloat16__"


def to_wire_state(state: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """A state dict as the CPU numpy arrays the ``ray`` and ``filesystem`` transports carry (what crosses
    process boundaries without pickling tensors). numpy has no bfloat16, so a bf16 tensor goes as its own
    two bytes per value, an int16 view, named under :data:`BF16_NAMES`: half the bytes of the float32 it
    used to be sent as (a 3B-parameter model: 6 GiB per version instead of 12)."""
    import torch

    out: dict[str, np.ndarray] = {}
    bf16: list[str] = []
    for name, value in state.items():
        if name == BF16_NAMES:
            raise ValueError(f"a state dict may not hold a tensor named {BF16_NAMES!r} (the wire format's own)")
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu()
            if value.dtype == torch.bfloat16:
                bf16.append(name)
                value = value.contiguous().view(torch.int16)
            value = value.numpy()
        out[name] = np.asarray(value)
    if bf16:
        out[BF16_NAMES] = np.array(bf16)
    return out


def from_wire_state(arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """What :func:`to_wire_state` wrote: the numpy arrays, and each bf16 tensor as a torch bfloat16 tensor over
    the same bytes (no copy: several workers on a node share the object store's one)."""
    import warnings

    import torch

    named = set(arrays[BF16_NAMES].tolist()) if BF16_NAMES in arrays else set()
    out: dict[str, Any] = {}
    for name, value in arrays.items():
        if name == BF16_NAMES:
            continue
        if name in named:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # the object store's arrays are read-only
                value = torch.from_numpy(value).view(torch.bfloat16)
        out[name] = value
    return out
