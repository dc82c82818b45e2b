"""The records an inference engine takes and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

FinishReason = Literal["stop", "length"]
#: Where ``Generation.response_logprobs`` came from: recomputed by :func:`~mintgym.inference.logprobs.
#: sequence_logprobs` ("aligned"), the sampler's own decode step ("sampler"), a server's answer ("server"),
#: or nowhere ("none").
LogprobSource = Literal["aligned", "sampler", "server", "none"]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one response.

    ``temperature=0`` is greedy decoding. The logprobs an engine returns are those of the temperature-scaled
    distribution ``log_softmax(logits / temperature)`` (``temperature=1`` when greedy), before top-p
    truncation: the distribution the trainer recomputes.
    """

    #: Most tokens to generate (at least 1).
    max_new_tokens: int = 128
    #: Softmax temperature; 0 means greedy.
    temperature: float = 1.0
    #: Nucleus sampling mass in (0, 1].
    top_p: float = 1.0
    #: Seed of this request's own random stream; None draws one from the engine.
    seed: int | None = None
    #: Strings that end the response; the text is cut before the first one.
    stop: tuple[str, ...] = ()
    #: How many alternatives per token to return with their logprobs (0: none).
    top_logprobs: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be an integer >= 1, got {self.max_new_tokens!r}")
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if not 0 <= self.top_logprobs <= 20:
            raise ValueError(f"top_logprobs must be in [0, 20], got {self.top_logprobs!r}")
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop))
        if any(not isinstance(s, str) or s == "" for s in self.stop):
            raise ValueError(f"stop strings must be non-empty strings, got {self.stop!r}")


@dataclass
class GenerationRequest:
    """One prompt: OpenAI-style chat messages, images inline, and how to sample.

    ``messages`` is a list of ``{"role": ..., "content": str | [parts]}``; a part is
    ``{"type": "text", "text": ...}``, ``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``
    or ``{"type": "image", "image": <numpy RGB array | PIL image | data URL>}``.
    """

    messages: list[dict[str, Any]]
    sampling: SamplingParams = field(default_factory=SamplingParams)
    request_id: str | None = None
    #: Which requests go first when an engine cannot serve all at once: lower first (vLLM's convention),
    #: then in order of arrival. The in-process batcher orders by it; other engines ignore it.
    priority: int = 0


@dataclass
class Generation:
    """One response, with what RL needs to train on it.

    Token ids and logprobs are None where the engine could not get them (e.g. a server that does not
    return token ids). ``response_token_ids`` include a sampled end-of-turn token; ``text`` does not.
    """

    text: str
    prompt_token_ids: list[int] | None
    response_token_ids: list[int] | None
    #: Per response token, the behaviour policy's logprob (see ``logprobs_source``).
    response_logprobs: list[float] | None
    #: Version of the weights that produced it; None when unknown.
    policy_version: int | None
    finish_reason: FinishReason
    #: Seconds: ``queue`` (waiting for the engine), ``ttft`` (to the first token), ``total``, and
    #: engine-specific ones (``logprobs``: the aligned recompute).
    timings: dict[str, float] = field(default_factory=dict)
    logprobs_source: LogprobSource = "none"
    #: Per response token, up to ``top_logprobs`` (token id, logprob) alternatives, best first.
    top_logprobs: list[list[tuple[int, float]]] | None = None
    request_id: str | None = None
