"""Layer 4: training sequences from the engine calls themselves.

A :class:`RecordingEngine` wraps a rollout worker's engine for one episode and keeps, per call, the prompt
token ids the engine fed the model, the sampled token ids, their logprobs, the weights version, the
prompt's images and when the answer came; :meth:`RecordingEngine.attach` writes them into the episode's own
step records, so nothing is re-tokenized and the sample pushed is the episode record (its turns are views of
those steps).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

import numpy as np

from mintgym.inference import Generation, GenerationRequest, InferenceEngine
from mintgym.policy import Agent, AgentContext, AgentStep
from mintgym.trajectory.types import Trajectory
from mintgym.types import Observation


class _Call(NamedTuple):
    step: int
    images: list[np.ndarray]
    generation: Generation
    temperature: float
    answered: float  # time.time() when the engine answered


class RecordingEngine(InferenceEngine):
    """Passes calls to ``inner`` and keeps, for one episode, each call's step, prompt images, generation,
    temperature and answer time; :meth:`attach` then writes them into the episode record's steps (the
    engine's exact ids)."""

    def __init__(self, inner: InferenceEngine, before_call: Callable[[], Awaitable[None]] | None = None,
                 priority: Callable[[], int] | None = None):
        """``before_call``: awaited before every call (the worker's admission and weight refresh);
        ``priority``: asked at every call, after ``before_call``, for its requests' priority
        (``GenerationRequest.priority``)."""
        self.inner = inner
        self.before_call = before_call
        self.priority = priority
        self.calls: list[_Call] = []
        self._step = -1

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        raise RuntimeError("rollout workers call agenerate")

    async def agenerate(self, requests: list[GenerationRequest]) -> list[Generation]:
        if self.before_call is not None:
            await self.before_call()
        if self.priority is not None:
            priority = self.priority()
            requests = [dataclasses.replace(r, priority=priority) for r in requests]
        out = await self.inner.agenerate(requests)
        answered = time.time()
        for req, gen in zip(requests, out, strict=True):
            self.calls.append(_Call(self._step, _images_of(req.messages), gen, req.sampling.temperature, answered))
        return out

    @property
    def policy_version(self) -> int | None:
        return self.inner.policy_version

    def begin_step(self) -> None:
        """The agent is asked for the episode's next step: calls from now on belong to it."""
        self._step += 1

    def marking(self, agent: Agent) -> Agent:
        """``agent``, telling this recorder where each step begins (one ``act`` is one step of the episode)."""
        return _StepMarker(agent, self)

    def attach(self, episode: Trajectory) -> None:
        """Write each step's engine call into its record: the prompt and response token ids the engine used,
        the sampler's logprobs, the weights version, the prompt's images, the temperature and, as
        ``timings["answered"]``, the seconds from the episode's start to the answer. A step with no call (a
        scripted ``done()``) is left as it is; a step with more than one cannot be trained."""
        made: dict[int, list[_Call]] = {}
        for call in self.calls:
            made.setdefault(call.step, []).append(call)
        for i, step in enumerate(episode.steps):
            calls = made.get(i, [])
            if len(calls) > 1:
                raise ValueError(f"episode {episode.id} step {i}: {len(calls)} engine calls; RL trains one call "
                                 "per step (give the agent retries: 0)")
            if not calls:
                continue
            call = calls[0]
            gen = call.generation
            if gen.prompt_token_ids is None or gen.response_token_ids is None or gen.response_logprobs is None:
                raise ValueError("the engine returned no token ids/logprobs; RL needs them")
            step.prompt_token_ids = list(gen.prompt_token_ids)
            step.response_token_ids = list(gen.response_token_ids)
            step.logprobs = list(gen.response_logprobs)
            step.policy_version = int(gen.policy_version if gen.policy_version is not None else -1)
            step.prompt_images, step.temperature = list(call.images), call.temperature
            if episode.started:
                step.timings["answered"] = call.answered - episode.started


class _StepMarker:
    def __init__(self, agent: Agent, recorder: RecordingEngine):
        self.agent, self.recorder, self.name = agent, recorder, agent.name

    async def start(self, context: AgentContext) -> None:
        await self.agent.start(context)

    async def act(self, observation: Observation) -> AgentStep:
        self.recorder.begin_step()
        return await self.agent.act(observation)


def _images_of(messages: list[dict[str, Any]]) -> list[np.ndarray]:
    images = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and "image" in part:
                    images.append(np.asarray(part["image"]))
                elif isinstance(part, dict) and "image_url" in part:
                    raise ValueError("training needs raw images in prompts, not image_url parts")
    return images
