"""Layer 5: weights as safetensors files in a shared folder, the format vLLM loads in place.

``weights.transport: vllm``: the trainer writes ``weights-<version>.safetensors`` (atomically, the newest
``keep`` kept) and a vLLM engine loads the file itself on every GPU worker through ``collective_rpc``
(:meth:`mintgym.inference.vllm.VLLMEngine.update_weights` given a path), so no state dict crosses Ray or
numpy on the way. Tensors keep the trainer's dtype (bf16 stays bf16, half the bytes of float32).
:meth:`SafetensorsBroadcast.receive_file` hands out a pinned path that later publications cannot remove
(see :mod:`mintgym.weights.filesystem`). Versions and acknowledgements work as in
:class:`FilesystemBroadcast`; ``receive`` gives the state as every transport does, for engines that take a
state dict (numpy arrays, bf16 tensors as torch bfloat16).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mintgym.weights.base import from_wire_state, to_wire_state
from mintgym.weights.filesystem import FilesystemBroadcast


def torch_state(state: Mapping[str, Any], dtype: Any = None) -> dict[str, Any]:
    """``state`` (tensors or numpy arrays) as contiguous CPU tensors that safetensors can write: each in its
    own dtype, or floating ones cast to ``dtype`` when given; tensors sharing storage (tied weights) are
    copied apart."""
    import torch

    out: dict[str, torch.Tensor] = {}
    seen: set[int] = set()
    for name, value in state.items():
        if isinstance(value, torch.Tensor):
            tensor = value.detach()
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # arrays from Ray's object store are read-only
                tensor = torch.from_numpy(np.asarray(value))
        if dtype is not None and tensor.is_floating_point() and tensor.dtype != dtype:
            tensor = tensor.to(dtype)
        tensor = tensor.cpu().contiguous()
        storage = tensor.untyped_storage().data_ptr()
        if storage in seen:
            tensor = tensor.clone()
        seen.add(tensor.untyped_storage().data_ptr())
        out[name] = tensor
    return out


def save_safetensors(path: str | os.PathLike, state: Mapping[str, Any], dtype: Any = None) -> None:
    """Write ``state`` to ``path`` in its own dtype (or ``dtype`` for floating tensors)."""
    from safetensors.torch import save_file

    save_file(torch_state(state, dtype), str(path))


class SafetensorsBroadcast(FilesystemBroadcast):
    """Versions as ``weights-<version>.safetensors``; :meth:`receive_file` hands an engine a pinned path."""

    suffix = "safetensors"

    def _save(self, path: Path, state: Mapping[str, Any]) -> None:
        save_safetensors(path, state)

    def _read(self, path: Path) -> dict[str, Any]:
        from safetensors.torch import load_file

        return from_wire_state(to_wire_state(load_file(str(path))))  # received as every transport's are

    def receive_file(self, after: int | None = None) -> tuple[int, Path] | None:
        return self.pinned_file(after)
