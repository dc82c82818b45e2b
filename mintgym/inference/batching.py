"""Collect requests from concurrent callers for a few milliseconds and run them as one batch."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections import deque
from dataclasses import dataclass

from mintgym.inference.base import InferenceEngine
from mintgym.inference.types import Generation, GenerationRequest


@dataclass
class _Pending:
    request: GenerationRequest
    future: asyncio.Future
    enqueued: float


class RequestBatcher:
    """Queues requests; a worker task sends up to ``max_batch_size`` of them to the engine at once, the most
    urgent first (lowest ``GenerationRequest.priority``, then the earliest).

    A batch closes when no request came for ``window_s``, or ``max_wait_s`` (default 5 x ``window_s``) after
    it began collecting, so a burst of callers is seen whole before it is split by priority; requests beyond
    ``max_batch_size`` wait for the next batch, which goes at once if they fill it, ahead of any less urgent
    newcomer. The engine runs in a thread, so the event loop keeps accepting requests meanwhile. A batch
    whose engine call fails is sent again one request at a time, so an error reaches only the callers whose
    own request fails.
    """

    def __init__(self, engine: InferenceEngine, max_batch_size: int = 16, window_s: float = 0.010,
                 max_wait_s: float | None = None):
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.max_wait_s = 5 * window_s if max_wait_s is None else max_wait_s
        self.engine = engine
        self.max_batch_size = max_batch_size
        self.window_s = window_s
        self._queue: asyncio.Queue[_Pending] | None = None
        self._worker: asyncio.Task | None = None
        #: Sizes of the latest batches (for tests and benchmarks); totals in ``batches`` and ``requests``.
        self.batch_sizes: deque[int] = deque(maxlen=10_000)
        self.batches = 0
        self.requests = 0
        self.largest_batch = 0

    async def start(self) -> None:
        if self._worker is None:
            self._queue = asyncio.Queue()
            self._worker = asyncio.create_task(self._run(), name="mintgym-inference-batcher")

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
            self._worker = None

    async def submit(self, request: GenerationRequest) -> Generation:
        if self._queue is None or self._worker is None:
            raise RuntimeError("RequestBatcher.start() was not called")
        if self._worker.done():
            raise RuntimeError("the batching worker has stopped") from self._worker.exception()
        future = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(request, future, time.perf_counter()))
        return await future

    async def _alone(self, pending: _Pending) -> Generation | None:
        """``pending``'s request in a call of its own: its generation, or None once its caller got the error."""
        try:
            [result] = await asyncio.to_thread(self.engine.generate, [pending.request])
        except Exception as err:  # noqa: BLE001 - handed to this request's caller
            if not pending.future.done():
                pending.future.set_exception(err)
            return None
        return result

    async def _run(self) -> None:
        assert self._queue is not None
        waiting: list[tuple[int, int, _Pending]] = []  # a heap: (priority, arrival, request)
        arrivals = itertools.count()

        def hold(p: _Pending) -> None:
            heapq.heappush(waiting, (p.request.priority, next(arrivals), p))

        while True:
            carried = len(waiting)  # left over from the batch before: they have waited through it
            if not waiting:
                hold(await self._queue.get())
            while not self._queue.empty():
                hold(self._queue.get_nowait())
            # Unless those left over fill a batch, keep collecting while requests keep coming (each within
            # window_s of the last), up to max_wait_s: a burst of callers lands whole in the heap.
            deadline = time.perf_counter() + (0.0 if carried >= self.max_batch_size else self.max_wait_s)
            while True:
                remaining = min(self.window_s, deadline - time.perf_counter())
                if remaining <= 0:
                    break
                try:
                    hold(await asyncio.wait_for(self._queue.get(), remaining))
                except TimeoutError:
                    break
            batch = []
            while waiting and len(batch) < self.max_batch_size:
                pending = heapq.heappop(waiting)[2]
                if not pending.future.cancelled():
                    batch.append(pending)
            if not batch:
                continue
            self.batch_sizes.append(len(batch))
            self.batches += 1
            self.requests += len(batch)
            self.largest_batch = max(self.largest_batch, len(batch))
            started = time.perf_counter()
            try:
                results = await asyncio.to_thread(self.engine.generate, [p.request for p in batch])
            except Exception as err:  # noqa: BLE001 - handed to the callers whose own request fails, not swallowed
                if len(batch) == 1:
                    if not batch[0].future.done():
                        batch[0].future.set_exception(err)
                    continue
                # One bad request (a prompt over the context, say) fails the whole call: each request is sent
                # again alone, so only its own caller gets the error, never the other episodes batched with it.
                results = [await self._alone(p) for p in batch]
            for p, result in zip(batch, results, strict=True):
                if result is None:
                    continue
                result.timings["queue"] = result.timings.get("queue", 0.0) + started - p.enqueued
                if not p.future.done():
                    p.future.set_result(result)
