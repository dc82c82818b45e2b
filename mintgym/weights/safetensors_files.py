"""Layer 5: weights as safetensors files in a shared folder, the format vLLM loads in place.

``weights.transport: vllm``: the trainer writes ``weights-<version>.safetensors`` (atomically, the newest
``keep`` kept) and a vLLM engine loads the file itself on every GPU worker through ``collective_rpc``
(:meth:`mintgym.inference.vllm.VLLMEngine.update_weights` given a path), so no state dict crosses Ray or
numpy on the way. Versions and acknowledgements work as in :class:`FilesystemBroadcast`; ``receive`` still
gives arrays, for engines that take a state dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mintgym.weights.base import to_numpy_state
from mintgym.weights.filesystem import FilesystemBroadcast


class SafetensorsBroadcast(FilesystemBroadcast):
    """Versions as ``weights-<version>.safetensors``; :meth:`receive_file` hands an engine the path."""

    suffix = "safetensors"

    def _save(self, path: Path, state: Mapping[str, Any]) -> None:
        from safetensors.numpy import save_file

        save_file({k: np.ascontiguousarray(v) for k, v in to_numpy_state(state).items()}, str(path))

    def _read(self, path: Path) -> dict[str, np.ndarray]:
        from safetensors.numpy import load_file

        return load_file(str(path))

    def receive_file(self, after: int | None = None) -> tuple[int, Path] | None:
        return self.newest_file(after)
