"""Runs inside vLLM's worker processes: loads new weights in place (``worker_extension_cls``).

vLLM mixes this class into its GPU worker, so ``LLM.collective_rpc("mintgym_load_weights", args=(path,))``
calls the method on every worker. Weights travel as a safetensors file (the filesystem weight
transport): it works the same whether the workers are in-process or separate processes.
"""

from __future__ import annotations

from typing import Any


class WeightUpdateExtension:
    """Methods added to vLLM's worker; ``self.model_runner`` is the worker's."""

    model_runner: Any

    def mintgym_load_weights(self, path: str) -> int:
        """Load the safetensors file at ``path`` into the model with its own ``load_weights``; tensor count."""
        import torch
        from safetensors.torch import load_file

        model = self.model_runner.model
        device = next(model.parameters()).device
        state = load_file(path, device=str(device))
        model.load_weights(weights=state.items())
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return len(state)

    def mintgym_weight_sum(self) -> float:
        """Sum of every parameter (a cheap fingerprint: it changes when the weights do)."""
        import torch

        with torch.no_grad():
            return float(sum(p.detach().float().sum() for p in self.model_runner.model.parameters()))
