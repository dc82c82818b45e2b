"""Layer 5: the weight transport ABC, one per process boundary (trainer -> engines)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Mapping

import numpy as np

from mintgym.errors import MintGymError


class WeightSyncTimeout(MintGymError):
    """Published weights did not reach every engine in time; the message says who waited on what."""


class WeightBroadcast(ABC):
    """Trainer side ``send``s versioned weights; engine side ``receive``s any newer than it has."""

    @abstractmethod
    def send(self, version: int, state: Mapping[str, Any]) -> None:
        """Publish ``state`` (name -> numpy array or tensor) as ``version`` (strictly increasing)."""

    @abstractmethod
    def latest_version(self) -> int | None:
        """The newest published version (None before the first send)."""

    @abstractmethod
    def receive(self, after: int | None = None) -> tuple[int, dict[str, np.ndarray]] | None:
        """The newest (version, state) if newer than ``after``, else None."""


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
