"""The request batcher: a burst is split into batches by priority, then by arrival."""

from __future__ import annotations

import asyncio
import threading

from mintgym.inference.base import InferenceEngine
from mintgym.inference.batching import RequestBatcher
from mintgym.inference.types import Generation, GenerationRequest


class _Echo(InferenceEngine):
    """Answers each request with its own text; keeps the texts of every generate call; the first call can
    be held until released, so requests pile up behind it."""

    def __init__(self):
        self.calls: list[list[str]] = []
        self.entered, self.release = threading.Event(), threading.Event()
        self.release.set()

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        self.entered.set()
        self.release.wait(10)
        self.calls.append([r.messages[0]["content"] for r in requests])
        return [Generation(r.messages[0]["content"], None, None, None, None, "stop") for r in requests]

    @property
    def policy_version(self) -> int | None:
        return None


def _request(text: str, priority: int = 0) -> GenerationRequest:
    return GenerationRequest([{"role": "user", "content": text}], priority=priority)


async def test_a_burst_goes_most_urgent_first_whatever_its_order_of_arrival():
    engine = _Echo()
    batcher = RequestBatcher(engine, max_batch_size=3, window_s=0.5)
    await batcher.start()
    try:
        # low-priority requests arrive first; the urgent ones (priority -5) a moment later
        late = [_request(f"slow-{i}", priority=-5) for i in range(3)]
        early = [_request(f"fast-{i}") for i in range(3)]
        tasks = [asyncio.create_task(batcher.submit(r)) for r in early]
        await asyncio.sleep(0.01)
        tasks += [asyncio.create_task(batcher.submit(r)) for r in late]
        answers = await asyncio.gather(*tasks)
    finally:
        await batcher.stop()
    assert [a.text for a in answers] == [r.messages[0]["content"] for r in early + late]  # each its own
    assert engine.calls == [["slow-0", "slow-1", "slow-2"], ["fast-0", "fast-1", "fast-2"]]


async def test_requests_left_over_go_before_a_less_urgent_newcomer_and_equal_ones_in_arrival_order():
    engine = _Echo()
    engine.release.clear()
    batcher = RequestBatcher(engine, max_batch_size=2, window_s=0.01)
    await batcher.start()
    try:
        first = asyncio.create_task(batcher.submit(_request("first")))
        await asyncio.to_thread(engine.entered.wait, 10)  # the first batch is in the engine, held
        tasks = [asyncio.create_task(batcher.submit(_request(t, p)))
                 for t, p in [("a", 1), ("b", 0), ("c", 0), ("d", 1)]]
        await asyncio.sleep(0.05)
        engine.release.set()
        await asyncio.gather(first, *tasks)
    finally:
        await batcher.stop()
    assert engine.calls == [["first"], ["b", "c"], ["a", "d"]]
