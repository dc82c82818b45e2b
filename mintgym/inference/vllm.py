"""In-process vLLM on GPU (the ``vllm`` extra), written against vLLM's offline API.

Prompts are rendered with the checkpoint's own processor chat template (the same text the hf engine
feeds its model) and passed as ``{"prompt": text, "multi_modal_data": {"image": [...]}}`` to
``LLM.generate`` with one ``SamplingParams`` per request (``logprobs=top_logprobs``, so the sampled
token's logprob always comes back). Weights are updated in place through
:class:`~mintgym.inference.vllm_worker.WeightUpdateExtension` (``worker_extension_cls`` +
``collective_rpc``, the pattern of vLLM's RLHF examples), then the prefix cache is reset so no KV block
computed with the old weights is reused.

Logprobs: by default ``logprobs_mode="processed_logprobs"`` (vLLM >= 0.10.2): after temperature (and
top-p/top-k, when set), i.e. the sampling distribution. The trainer's recompute uses the temperature only,
so with ``top_p < 1`` the two differ on truncated tokens; measure with the mismatch metrics.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mintgym.inference.base import InferenceEngine
from mintgym.inference.images import DEFAULT_MAX_IMAGE_PIXELS
from mintgym.inference.messages import split_messages
from mintgym.inference.types import Generation, GenerationRequest, SamplingParams


def import_vllm() -> Any:
    """The vllm module, or an ImportError that says how to get it."""
    try:
        import vllm
    except ImportError as err:
        raise ImportError(
            "the 'vllm' inference engine needs vLLM and a GPU: pip install 'mintgym[vllm]' "
            f"(import failed: {err}); on CPU use make_engine('hf', ...)"
        ) from err
    return vllm


def build_prompt(processor: Any, request: GenerationRequest,
                 max_image_pixels: int | None = DEFAULT_MAX_IMAGE_PIXELS) -> dict[str, Any]:
    """vLLM's prompt dict for ``request``: chat-template text plus the images, in order."""
    messages, images = split_messages(request.messages, max_image_pixels)
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    prompt: dict[str, Any] = {"prompt": text}
    if images:
        prompt["multi_modal_data"] = {"image": images}
    return prompt


def sampling_kwargs(params: SamplingParams) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for these sampling params."""
    kwargs: dict[str, Any] = {
        "n": 1, "max_tokens": params.max_new_tokens, "temperature": params.temperature, "top_p": params.top_p,
        "logprobs": params.top_logprobs, "skip_special_tokens": True,
    }
    if params.seed is not None:
        kwargs["seed"] = params.seed
    if params.stop:
        kwargs["stop"] = list(params.stop)
    return kwargs


def parse_output(output: Any, request: GenerationRequest, version: int, timings: dict[str, float]) -> Generation:
    """A :class:`Generation` from one ``vllm.RequestOutput``."""
    completion = output.outputs[0]
    token_ids = list(completion.token_ids)
    logprobs = top = None
    if completion.logprobs is not None:
        logprobs = [float(step[tok].logprob) for tok, step in zip(token_ids, completion.logprobs)]
        if request.sampling.top_logprobs:
            top = [sorted(((int(t), float(lp.logprob)) for t, lp in step.items()
                           if lp.rank is not None and lp.rank <= request.sampling.top_logprobs),
                          key=lambda item: -item[1]) for step in completion.logprobs]
    return Generation(
        text=completion.text,
        prompt_token_ids=list(output.prompt_token_ids or []),
        response_token_ids=token_ids,
        response_logprobs=logprobs,
        policy_version=version,
        finish_reason="length" if completion.finish_reason == "length" else "stop",
        timings=dict(timings),
        logprobs_source="sampler" if logprobs is not None else "none",
        top_logprobs=top,
        request_id=request.request_id,
    )


class VLLMEngine(InferenceEngine):
    """vLLM's ``LLM`` in this process.

    Args:
        model_path: checkpoint directory.
        max_images: most images per prompt (``limit_mm_per_prompt``).
        logprobs_mode: vLLM's logprobs mode; None leaves vLLM's default (raw logprobs, before temperature).
        policy_version: version of the initial weights.
        **llm_kwargs: passed to ``vllm.LLM`` (``gpu_memory_utilization``, ``max_model_len``, ``dtype``...).
    """

    def __init__(
        self,
        model_path: str | os.PathLike,
        *,
        max_images: int = 4,
        max_image_pixels: int | None = DEFAULT_MAX_IMAGE_PIXELS,
        logprobs_mode: str | None = "processed_logprobs",
        seed: int = 0,
        policy_version: int = 0,
        **llm_kwargs: Any,
    ):
        vllm = import_vllm()
        from mintgym.models.loading import load_processor

        self._vllm = vllm
        self.name = str(model_path)
        self.max_image_pixels = max_image_pixels
        self.processor = load_processor(model_path)
        self.tokenizer = self.processor.tokenizer
        kwargs: dict[str, Any] = {
            "model": str(model_path), "limit_mm_per_prompt": {"image": max_images}, "seed": seed,
            "worker_extension_cls": "mintgym.inference.vllm_worker.WeightUpdateExtension",
        }
        if logprobs_mode is not None:
            kwargs["logprobs_mode"] = logprobs_mode
        kwargs.update(llm_kwargs)
        self.llm = vllm.LLM(**kwargs)
        self._version = policy_version
        self._lock = threading.Lock()
        self._weights_dir = Path(tempfile.mkdtemp(prefix="mintgym-weights-", dir="/dev/shm"
                                                  if os.path.isdir("/dev/shm") else None))

    @property
    def policy_version(self) -> int:
        return self._version

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        asked = time.perf_counter()
        prompts = [build_prompt(self.processor, r, self.max_image_pixels) for r in requests]
        params = [self._vllm.SamplingParams(**sampling_kwargs(r.sampling)) for r in requests]
        with self._lock:
            started = time.perf_counter()
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
            version = self._version
        done = time.perf_counter()
        results = []
        for output, request in zip(outputs, requests):
            timings = {"queue": started - asked, "total": done - asked}
            metrics = getattr(output, "metrics", None)
            if metrics is not None and getattr(metrics, "first_token_latency", None) is not None:
                timings["ttft"] = float(metrics.first_token_latency)
            results.append(parse_output(output, request, version, timings))
        return results

    def update_weights(self, version: int, state: Mapping[str, Any] | str | os.PathLike) -> None:
        """Load ``state`` (a state dict with HF parameter names, or a safetensors file) into every worker."""
        if not isinstance(version, int):
            raise ValueError(f"policy version must be an int, got {version!r}")
        with self._lock:
            if isinstance(state, (str, os.PathLike)):
                path = str(state)
            else:
                from safetensors.torch import save_file

                path = str(self._weights_dir / "weights.safetensors")
                save_file({k: v.detach().contiguous().cpu() for k, v in state.items()}, path)
            self.llm.collective_rpc("mintgym_load_weights", args=(path,))
            self.llm.reset_prefix_cache()
            self._version = version

    def weight_sum(self) -> float:
        """Sum of all parameters on the first worker (a fingerprint for checks)."""
        return float(self.llm.collective_rpc("mintgym_weight_sum")[0])

    def close(self) -> None:
        import shutil

        shutil.rmtree(self._weights_dir, ignore_errors=True)
