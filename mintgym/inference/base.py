"""The one interface every inference engine implements."""

from __future__ import annotations

import asyncio
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Self

from mintgym.inference.types import Generation, GenerationRequest

#: How vLLM (offline or served) says a prompt does not fit the model's context: the engines raise
#: :class:`~mintgym.errors.ContextOverflow` on it.
CONTEXT_OVERFLOW = re.compile(r"maximum (?:context|model) length", re.IGNORECASE)


class InferenceEngine(ABC):
    """Generates responses to chat prompts with images; reports token ids, logprobs and policy version.

    ``generate`` is batched and blocking; ``agenerate`` is its coroutine form (by default ``generate`` in a
    worker thread). Engines that own weights implement ``update_weights``.
    """

    @abstractmethod
    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        """One :class:`Generation` per request, in order."""

    async def agenerate(self, requests: list[GenerationRequest]) -> list[Generation]:
        """Coroutine form of :meth:`generate`."""
        return await asyncio.to_thread(self.generate, requests)

    @property
    @abstractmethod
    def policy_version(self) -> int | None:
        """Version of the weights now in use (None if unknown)."""

    def update_weights(self, version: int, state: Mapping[str, Any]) -> None:
        """Load new weights in place and set the policy version to ``version``."""
        raise NotImplementedError(f"{type(self).__name__} cannot update weights")

    def close(self) -> None:
        """Release clients, threads or GPU memory. Safe to call twice."""
        return None  # an optional hook: nothing to hold by default

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
