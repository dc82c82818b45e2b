"""Layer 6: the trainer's precision (``train.precision``): float32 master weights, low-precision compute.

Adam stepping bfloat16 weights loses most small updates: bfloat16 keeps 8 significant bits, so a weight near
0.02 moves in steps of about 1.2e-4 and an update of 1e-6 rounds to nothing (at lr 1e-6, 50 Adam steps
changed 2% of a bfloat16 model's weights, by a mean 100 times smaller than in float32). With ``mixed`` (the
default) a model given in a low-precision dtype (``model.dtype: bfloat16``) is held in float32: these master
weights, their gradients and Adam's state are float32, the forward and backward run under autocast in the
given dtype, and the samplers get the weights rounded to it (:func:`published`). ``pure`` steps the
low-precision weights themselves (half the memory, the small updates lost).

    >>> Precision.of(torch.bfloat16, "mixed")
    Precision(compute=torch.bfloat16, master=torch.float32)
    >>> Precision.of(torch.bfloat16, "pure").mixed
    False
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Precision:
    """The dtypes of a trainer's weights."""

    #: The forward and backward's dtype, and that of the weights the samplers get.
    compute: torch.dtype
    #: The dtype of the weights the optimizer steps, of their gradients and of the optimizer's state.
    master: torch.dtype

    @classmethod
    def of(cls, dtype: torch.dtype, mode: str) -> Precision:
        """The precision of a model given in ``dtype`` under ``train.precision`` ``mode``."""
        if mode not in ("mixed", "pure"):
            raise ValueError(f"precision: expected 'mixed' or 'pure', got {mode!r}")
        low = dtype.is_floating_point and torch.finfo(dtype).bits < 32
        return cls(dtype, torch.float32 if mode == "mixed" and low else dtype)

    @property
    def mixed(self) -> bool:
        return self.compute != self.master

    def autocast(self, device: torch.device) -> contextlib.AbstractContextManager[Any]:
        """The context a forward pass runs in: autocast to ``compute`` when the weights are float32 masters."""
        return torch.autocast(device.type, dtype=self.compute) if self.mixed else contextlib.nullcontext()

    def published(self, state: Mapping[str, torch.Tensor], *, copy: bool = False) -> dict[str, torch.Tensor]:
        """``state`` as the samplers get it: floating tensors in ``compute`` (``copy``: never sharing storage)."""
        return {name: value.detach().to(self.compute if value.is_floating_point() else value.dtype, copy=copy)
                for name, value in state.items()}


def model_dtype(model: torch.nn.Module) -> torch.dtype:
    """The dtype of ``model``'s first floating parameter (float32 if it has none)."""
    return next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
