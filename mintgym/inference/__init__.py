"""Inference engines: one interface (:class:`InferenceEngine`) over transformers, OpenAI-compatible servers
and vLLM, returning text, token ids, per-token logprobs and the policy version.

    >>> from mintgym.inference import make_engine, GenerationRequest, SamplingParams  # doctest: +SKIP
    >>> engine = make_engine("hf", model_path="/tmp/tiny-vlm")  # doctest: +SKIP
    >>> [g] = engine.generate([GenerationRequest([{"role": "user", "content": "hi"}],
    ...                                          SamplingParams(max_new_tokens=8, seed=0))])  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from mintgym.inference.base import InferenceEngine
from mintgym.inference.types import Generation, GenerationRequest, SamplingParams

ENGINES: dict[str, str] = {
    "hf": "mintgym.inference.hf:HFEngine",
    "openai": "mintgym.inference.openai:OpenAIEngine",
    "vllm": "mintgym.inference.vllm:VLLMEngine",
}


def make_engine(name: str, **config: Any) -> InferenceEngine:
    """Build the engine registered as ``name`` (``hf``, ``openai``, ``vllm``) with its keyword config."""
    import importlib

    try:
        target = ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown inference engine {name!r}; known: {', '.join(ENGINES)}") from None
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)(**config)


__all__ = ["ENGINES", "Generation", "GenerationRequest", "InferenceEngine", "SamplingParams", "make_engine"]
