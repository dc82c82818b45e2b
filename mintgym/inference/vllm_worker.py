"""Runs inside vLLM's worker processes: loads new weights in place (``worker_extension_cls``).

vLLM mixes this class into its GPU worker, so ``LLM.collective_rpc("mintgym_load_weights", args=(path,))``
calls the method on every worker. Weights travel as a safetensors file (the filesystem weight
transport): it works the same whether the workers are in-process or separate processes. The file is read on
the CPU and handed to the model's ``load_weights`` in chunks of at most :data:`CHUNK_BYTES` (one tensor
alone when larger), each moved to the GPU just before, so a weight update needs one chunk of free GPU memory
beside the engine, not a second copy of the model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

#: Most bytes of weights on their way to the GPU at once.
CHUNK_BYTES = 1 << 30


def chunks(path: str, max_bytes: int = CHUNK_BYTES) -> Iterator[list[tuple[str, Any]]]:
    """The tensors of the safetensors file at ``path``, read on the CPU, in groups of at most ``max_bytes``."""
    from safetensors import safe_open

    with safe_open(path, framework="pt", device="cpu") as f:
        group: list[tuple[str, Any]] = []
        size = 0
        for name in f.keys():  # noqa: SIM118 -- safe_open is not a mapping
            tensor = f.get_tensor(name)
            nbytes = tensor.numel() * tensor.element_size()
            if group and size + nbytes > max_bytes:
                yield group
                group, size = [], 0
            group.append((name, tensor))
            size += nbytes
        if group:
            yield group


def load_in_chunks(path: str, load_weights: Callable[[list[tuple[str, Any]]], Any], device: Any,
                   max_bytes: int = CHUNK_BYTES) -> int:
    """Feed ``load_weights`` the file's tensors chunk by chunk, each chunk moved to ``device``; tensor count."""
    count = 0
    for group in chunks(path, max_bytes):
        load_weights([(name, tensor.to(device)) for name, tensor in group])
        count += len(group)
    return count


class WeightUpdateExtension:
    """Methods added to vLLM's worker; ``self.model_runner`` is the worker's."""

    model_runner: Any

    def mintgym_load_weights(self, path: str, max_bytes: int | None = None) -> int:
        """Load the safetensors file at ``path`` into the model with its own ``load_weights``, in chunks of at
        most ``max_bytes`` (default :data:`CHUNK_BYTES`); tensor count."""
        import torch

        model = self.model_runner.model
        device = next(model.parameters()).device
        count = load_in_chunks(path, lambda weights: model.load_weights(weights=weights), device,
                               CHUNK_BYTES if max_bytes is None else max_bytes)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.empty_cache()  # give the chunks' memory back to the engine
        return count

    def mintgym_weight_sum(self) -> float:
        """Sum of every parameter (a cheap fingerprint: it changes when the weights do)."""
        import torch

        with torch.no_grad():
            return float(sum(p.detach().float().sum() for p in self.model_runner.model.parameters()))
