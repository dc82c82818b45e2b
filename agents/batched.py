"""Batch the requests of concurrent agents that share one in-process engine.

Agents running side by side (``mintgym eval --concurrency K``) each ask for one generation per step.
For an engine in this process (``hf``), :class:`BatchedEngine` gathers the requests arriving within a few
milliseconds into one ``generate`` call with :class:`~mintgym.inference.batching.RequestBatcher`, one
batcher per running event loop (the harness runs one loop per domain).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from mintgym.inference.base import InferenceEngine
from mintgym.inference.batching import RequestBatcher
from mintgym.inference.types import Generation, GenerationRequest


class BatchedEngine(InferenceEngine):
    """``engine`` with ``agenerate`` calls from concurrent callers batched together."""

    def __init__(self, engine: InferenceEngine, max_batch_size: int = 16, window_s: float = 0.01):
        self.engine = engine
        self.max_batch_size = max_batch_size
        self.window_s = window_s
        self._batchers: dict[asyncio.AbstractEventLoop, RequestBatcher] = {}

    @property
    def policy_version(self) -> int | None:
        return self.engine.policy_version

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return self.engine.generate(requests)

    async def agenerate(self, requests: list[GenerationRequest]) -> list[Generation]:
        batcher = await self._batcher()
        return list(await asyncio.gather(*(batcher.submit(r) for r in requests)))

    async def _batcher(self) -> RequestBatcher:
        loop = asyncio.get_running_loop()
        for old in [known for known in self._batchers if known.is_closed()]:
            del self._batchers[old]  # a finished asyncio.run: its worker task went with it
        if loop not in self._batchers:
            batcher = RequestBatcher(self.engine, max_batch_size=self.max_batch_size, window_s=self.window_s)
            await batcher.start()
            self._batchers[loop] = batcher
        return self._batchers[loop]

    def update_weights(self, version: int, state: Mapping[str, Any]) -> None:
        self.engine.update_weights(version, state)

    def close(self) -> None:
        self._batchers.clear()
        self.engine.close()
