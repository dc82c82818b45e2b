"""The recording engine: the priority of an episode's requests is asked at each call."""

from __future__ import annotations

from mintgym.inference.base import InferenceEngine
from mintgym.inference.types import Generation, GenerationRequest
from mintgym.rollout.recording import RecordingEngine


class _Seen(InferenceEngine):
    def __init__(self):
        self.priorities: list[int] = []

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        self.priorities += [r.priority for r in requests]
        return [Generation("ok", [1], [2], [-0.1], 0, "stop") for _ in requests]

    @property
    def policy_version(self) -> int | None:
        return 0


async def test_each_call_takes_the_priority_asked_for_after_admission():
    inner, now = _Seen(), {"priority": 0}
    order = []

    async def admitted():
        order.append("admitted")
        if len(order) == 1:
            now["priority"] = -4000  # what the worker knows by the time the first call is let through

    def priority():
        order.append("asked")
        return now["priority"]

    recorder = RecordingEngine(inner, admitted, priority=priority)
    request = GenerationRequest([{"role": "user", "content": "hi"}])
    recorder.begin_step()
    await recorder.agenerate([request, request])
    now["priority"] = -2500
    recorder.begin_step()
    await recorder.agenerate([request])
    assert inner.priorities == [-4000, -4000, -2500] and order[:2] == ["admitted", "asked"]
    assert request.priority == 0  # the agent's request is not changed in place
    assert [c.step for c in recorder.calls] == [0, 0, 1]


async def test_without_a_priority_the_agents_own_goes_through():
    inner = _Seen()
    recorder = RecordingEngine(inner)
    recorder.begin_step()
    await recorder.agenerate([GenerationRequest([{"role": "user", "content": "hi"}], priority=3)])
    assert inner.priorities == [3]
