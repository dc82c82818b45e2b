"""A vision-language-model agent: screenshot in, one action of the domain's action set out.

Each step the agent shows the model the screenshot (optionally resized to at most ``max_pixels``), the
task, the earlier steps (the last ``history`` screenshots and the text of older answers) and a system
prompt generated from the domain's :class:`~mintgym.action_spaces.ActionSet`. The answer is parsed by the
one shared parser, which converts the model's coordinates to screen pixels through the agent's declared
:class:`~mintgym.action_spaces.frames.CoordinateFrame`. The frame actually used on a step (a resized
screenshot turns ``absolute`` into ``resized_absolute:WxH``) is recorded with the step.

An answer that does not parse is returned as ``AgentStep(action=None, text=raw, error=why)``: the rollout
sends the raw text and the env server counts an invalid step. With ``retries`` the model is first told why
and asked again. A model server that keeps failing raises (the episode ends as ``error`` with the reason);
one that refuses an image as too large makes the agent shrink the image and ask again.

:meth:`VLMAgent.imitate` takes a given action (an oracle's) as if the model had chosen it: the same prompt
``act`` builds, the answer written in the agent's coordinate frame by the shared renderer
(:func:`~mintgym.action_spaces.render_action`, which the parser reads back), and the same history update;
behaviour-cloning data for a warm start comes from it.

    >>> agent = VLMAgent(engine="openai", base_url="http://127.0.0.1:8001/v1")  # doctest: +SKIP
    >>> agent = VLMAgent(engine="hf", model_path="/tmp/tiny-vlm", frame="normalized_1000")  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from mintgym.action_spaces import ACTION_TYPES, ActionModel, ActionSet, InvalidAction, render_action
from mintgym.action_spaces.frames import (
    QWEN_MAX_PIXELS,
    Absolute,
    CoordinateFrame,
    ResizedAbsolute,
    frame_from_name,
    smart_resize,
)
from mintgym.agents.channels import channel_intro, channel_text
from mintgym.agents.history import History, Turn
from mintgym.errors import ServerError
from mintgym.inference import GenerationRequest, InferenceEngine, SamplingParams, make_engine
from mintgym.inference.images import ImageTooLarge
from mintgym.policy import AgentContext, AgentStep
from mintgym.types import Observation

#: How many times one step may shrink its image after the model server refused it as too large.
MAX_SHRINKS = 3


def fit_pixels(size: tuple[int, int], max_pixels: int | None) -> tuple[int, int]:
    """(width, height) scaled down, aspect kept, to at most ``max_pixels`` pixels (unchanged if it fits)."""
    width, height = size
    if max_pixels is None or width * height <= max_pixels:
        return size
    scale = math.sqrt(max_pixels / (width * height))
    return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))


def resize_image(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The RGB image resized to (width, height) (returned as is when it already has that size)."""
    if (image.shape[1], image.shape[0]) == tuple(size):
        return image
    from PIL import Image

    return np.asarray(Image.fromarray(image).resize(size, Image.Resampling.BICUBIC))


class VLMAgent:
    """A policy backed by an :class:`~mintgym.inference.InferenceEngine`.

    Args:
        engine: an engine instance (shared, not closed by the agent), or an engine name (``hf``,
            ``openai``, ``vllm``) built with ``engine_config`` and closed by :meth:`close`.
        frame: the coordinate frame the model answers in: a :class:`CoordinateFrame` or its name
            (``absolute``, ``normalized_1000``, ``relative``, ``resized_absolute:WxH``, or bare
            ``resized_absolute`` for Qwen2-VL's own resizing of each screenshot).
        actions: the action types this agent uses, a subset of the domain's set (None: all of it); the prompt
            lists only these and an answer with another is invalid. A short list keeps prompts short (a
            small model's whole context, or CPU time per sequence in training).
        history: screenshots shown per request (the current one and ``history - 1`` before it).
        max_actions: older answers listed as text (None: all).
        max_pixels: resize screenshots to at most this many pixels (None: as captured).
        max_new_tokens, temperature, top_p: sampling.
        sampling: all of the sampling at once (a :class:`SamplingParams`; its ``seed`` is not used), instead
            of ``max_new_tokens``, ``temperature`` and ``top_p``.
        seed: base seed of the per-step sampling seeds (mixed with the episode's seed and the step).
        seeded: False leaves the requests unseeded, so the engine's own random stream samples: what RL
            needs, where the G episodes of a group share one task seed and must not answer alike.
        retries: extra requests after an unparseable answer, each told what was wrong.
        channel_chars: most characters of each text channel shown per turn (the ``a11y`` listing, the ``dom``).
        system_prompt: replaces the generated instructions before the action list.
        name: the agent's name in trajectories.
        **engine_config: options of ``make_engine(engine, ...)`` (``base_url``, ``model``, ``model_path``).
    """

    #: The commands build this agent an inference engine (``--engine``, ``--model``, ``--model-url``).
    needs_engine = True
    #: The shared command-line options it takes (mintgym.cli.agent_options).
    cli_flags = ("frame", "history", "max_pixels", "max_new_tokens", "temperature", "retries", "seed")
    #: In a training rollout: the G episodes of a group share their task's seed, so they must sample apart
    #: (unseeded), and a re-asked answer would not be the sampled one that is trained on.
    training_defaults = {"seeded": False, "retries": 0}

    def __init__(self, engine: InferenceEngine | str = "hf", *, frame: str | CoordinateFrame = "absolute",
                 actions: list[str] | None = None, history: int = 1, max_actions: int | None = 30,
                 max_pixels: int | None = None,
                 max_new_tokens: int | None = None, temperature: float | None = None, top_p: float | None = None,
                 sampling: SamplingParams | None = None, seed: int | None = None, seeded: bool = True,
                 retries: int = 0, channel_chars: int = 8000, system_prompt: str | None = None, name: str = "vlm",
                 **engine_config: Any):
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        if channel_chars < 1:
            raise ValueError(f"channel_chars must be >= 1, got {channel_chars}")
        self.channel_chars = channel_chars
        if max_pixels is not None and max_pixels < 1:
            raise ValueError(f"max_pixels must be a positive number of pixels, got {max_pixels}")
        if actions is not None:
            unknown = [a for a in actions if a not in ACTION_TYPES] if isinstance(actions, (list, tuple)) else None
            if not actions or unknown is None or unknown:
                raise ValueError(f"actions must be a non-empty list of action types ({', '.join(ACTION_TYPES)}), "
                                 f"got {actions!r}")
        self.actions = list(actions) if actions is not None else None
        given = {k: v for k, v in (("max_new_tokens", max_new_tokens), ("temperature", temperature),
                                   ("top_p", top_p)) if v is not None}
        if sampling is not None and given:
            raise ValueError(f"give sampling or {', '.join(sorted(given))}, not both")
        if sampling is None:
            sampling = SamplingParams(**{"max_new_tokens": 256, "temperature": 0.0, "top_p": 1.0, **given})
        elif not isinstance(sampling, SamplingParams):
            raise TypeError(f"sampling must be a SamplingParams, got {type(sampling).__name__}")
        self.sampling = sampling
        self.seeded = bool(seeded)
        if isinstance(engine, str):
            self.engine, self._owns_engine = make_engine(engine, **engine_config), True
        elif isinstance(engine, InferenceEngine):
            if engine_config:
                raise ValueError(f"engine options {sorted(engine_config)} apply only when engine is a name")
            self.engine, self._owns_engine = engine, False
        else:
            raise TypeError(f"engine must be an InferenceEngine or an engine name, got {type(engine).__name__}")
        self._qwen_resize = frame == "resized_absolute"
        self.frame = Absolute() if self._qwen_resize else (frame if isinstance(frame, CoordinateFrame)
                                                           else frame_from_name(frame))
        self.max_pixels = max_pixels
        self.seed = seed
        self.retries = retries
        self.system_prompt = system_prompt
        self.name = name
        self.history = History(history, max_actions)
        self.context: AgentContext | None = None
        #: The action set of the episode: the domain's, restricted to ``actions``.
        self.action_set: ActionSet | None = None
        self._step = 0
        #: (image, frame id) of the screenshots the history may still show, to record prompts by frame reference.
        self._shown: list[tuple[np.ndarray, str]] = []
        #: Lowered when the model server refuses an image as too large; kept for later steps.
        self._pixel_cap: int | None = None

    # -- the Agent protocol ------------------------------------------------------------------------------

    async def start(self, context: AgentContext) -> None:
        domain_set = context.action_set
        if self.actions is not None:
            try:
                domain_set = domain_set.restrict(f"{domain_set.name}[{','.join(self.actions)}]", self.actions)
            except ValueError as err:
                raise ValueError(f"VLMAgent actions: {err}") from None
        self.context, self.action_set = context, domain_set
        self.history.clear()
        self._step = 0
        self._shown = []

    async def act(self, observation: Observation) -> AgentStep:
        if self.context is None:
            raise RuntimeError("VLMAgent.act() called before start()")
        shrinks: list[str] = []
        while True:
            frame, shown = self.frame_for(observation.screen_size)
            image = self._image(observation, shown)
            try:
                step = await self._decide(observation, frame, shown, image)
            except (ServerError, ImageTooLarge) as err:
                if not _too_large(err) or len(shrinks) >= MAX_SHRINKS or not self._can_shrink():
                    raise
                self._pixel_cap = max(1, (shown[0] * shown[1]) // 4)
                shrinks.append(f"{shown[0]}x{shown[1]} refused: {err}")
                continue
            if shrinks:
                step.extra["image_shrinks"] = shrinks
            self._step += 1
            return step

    async def imitate(self, observation: Observation, action: ActionModel) -> AgentStep | None:
        """Take ``action`` (screen pixels) as if the model had chosen it on ``observation``.

        The prompt is the one :meth:`act` would send, the text is the action rendered in this step's
        coordinate frame (what the parser reads back), and the history moves on as after that answer.
        The step's action is the text parsed back, so a coarse frame's rounding is what gets recorded.
        Returns None, leaving the history as it was, for an action the agent cannot write: one outside
        its action set, or off the screen.
        """
        if self.context is None:
            raise RuntimeError("VLMAgent.imitate() called before start()")
        if not isinstance(action, ActionModel):
            raise TypeError(f"imitate needs a typed action (ActionModel), got {type(action).__name__}")
        frame, shown = self.frame_for(observation.screen_size)
        try:
            self.action_set.validate(action, observation.screen_size)
            text = render_action(action, frame, observation.screen_size)
        except (InvalidAction, ValueError):
            return None
        parsed, _error = self._parse(text, frame, observation.screen_size)
        if parsed is None:
            return None
        image = self._image(observation, shown)
        messages = self._messages(observation, frame, shown, image)
        self._remember(observation, image, text, None)
        self._step += 1
        extra: dict[str, Any] = {"frame": frame.spec, "shown_size": list(shown), "imitated": action.to_json()}
        return AgentStep(action=parsed, text=text, messages=recorded_messages(messages, self._shown), extra=extra)

    def close(self) -> None:
        if self._owns_engine:
            self.engine.close()

    # -- one step ----------------------------------------------------------------------------------------

    def frame_for(self, screen_size: tuple[int, int]) -> tuple[CoordinateFrame, tuple[int, int]]:
        """The concrete frame of a step and the size of the image the model is shown."""
        caps = [c for c in (self.max_pixels, self._pixel_cap) if c is not None]
        cap = min(caps) if caps else None
        if self._qwen_resize:
            shown = smart_resize(screen_size, max_pixels=cap or QWEN_MAX_PIXELS)
            return ResizedAbsolute(shown), shown
        if isinstance(self.frame, ResizedAbsolute):
            return self.frame, self.frame.model_size
        shown = fit_pixels(screen_size, cap)
        if isinstance(self.frame, Absolute) and shown != tuple(screen_size):
            return ResizedAbsolute(shown), shown
        return self.frame, shown

    def _can_shrink(self) -> bool:
        return not isinstance(self.frame, ResizedAbsolute) and self.shows_pixels

    @property
    def shows_pixels(self) -> bool:
        """Whether the model is shown the screenshot: the episode's channels include it (or its marked form)."""
        observe = self.context.observe if self.context is not None else ("screenshot",)
        return "screenshot" in observe or "som" in observe

    def _image(self, observation: Observation, shown: tuple[int, int]) -> np.ndarray | None:
        return resize_image(observation.screenshot, shown) if self.shows_pixels else None

    def system_text(self, frame: CoordinateFrame, shown: tuple[int, int]) -> str:
        ctx = self.context
        assert ctx is not None
        intro = self.system_prompt or (
            f"You are an agent that completes tasks on a {ctx.domain} screen, one action at a time. "
            f"{ctx.screen_hint}".strip())
        actions = self.action_set.describe(frame, screen_size=shown)
        channels = channel_intro(ctx.observe)
        intro = f"{intro} {channels}" if channels else intro
        return f"{intro}\n\n{actions}\n\nWhen the task is complete, reply with done(...)."

    def _current_text(self, observation: Observation, frame: CoordinateFrame) -> str:
        lines = []
        own_note = self.history.turns[-1].note if self.history.turns else None
        if observation.last_error and not own_note:  # parsed, but the environment refused it
            lines.append(f"The environment refused your last action: {observation.last_error}")
        if observation.zoom is not None:
            x1, y1, x2, y2 = observation.zoom
            screen = observation.screen_size
            a, b = frame.from_screen(x1, y1, screen)
            c, d = frame.from_screen(min(x2, screen[0] - 1), min(y2, screen[1] - 1), screen)
            lines.append(f"This screenshot shows the region ({a}, {b})-({c}, {d}) enlarged; coordinates you write "
                         "still refer to the full screen.")
        if observation.text:
            text = observation.text if len(observation.text) <= 4000 else observation.text[-4000:]
            lines.append(f"Text output:\n{text}")
        lines.extend(channel_text(observation, frame, self.channel_chars))
        lines.append("What is the next action?")
        return "\n".join(lines)

    def _seed(self, attempt: int) -> int | None:
        ctx = self.context
        if not self.seeded or (self.seed is None and (ctx is None or ctx.seed is None)):
            return None
        base = (self.seed or 0) * 1_000_003 + ((ctx.seed if ctx and ctx.seed is not None else 0) * 7919)
        return (base + self._step * 101 + attempt) % (2**31 - 1)

    async def _decide(self, observation: Observation, frame: CoordinateFrame, shown: tuple[int, int],
                      image: np.ndarray | None) -> AgentStep:
        messages = self._messages(observation, frame, shown, image)
        attempts: list[dict[str, Any]] = []
        for attempt in range(self.retries + 1):
            sampling = dataclasses.replace(self.sampling, seed=self._seed(attempt))
            [gen] = await self.engine.agenerate([GenerationRequest(messages, sampling)])
            action, error = self._parse(gen.text, frame, observation.screen_size)
            attempts.append({"text": gen.text, "error": error})
            if action is not None or attempt == self.retries:
                break
            messages = [*messages, {"role": "assistant", "content": gen.text.strip() or "(empty answer)"},
                        {"role": "user", "content": f"Your answer could not be used: {error}\n"
                                                    "Reply with exactly one valid action."}]
        self._remember(observation, image, gen.text, error)
        extra: dict[str, Any] = {"frame": frame.spec, "shown_size": list(shown), "finish_reason": gen.finish_reason,
                                 "logprobs_source": gen.logprobs_source,
                                 "model_seconds": gen.timings.get("total")}
        if len(attempts) > 1:
            extra["attempts"] = attempts
        return AgentStep(action=action, text=gen.text, error=error, prompt_token_ids=gen.prompt_token_ids,
                         response_token_ids=gen.response_token_ids, logprobs=gen.response_logprobs,
                         policy_version=gen.policy_version, extra=extra,
                         messages=recorded_messages(messages, self._shown))

    def _messages(self, observation: Observation, frame: CoordinateFrame, shown: tuple[int, int],
                  image: np.ndarray | None) -> list[dict[str, Any]]:
        ctx = self.context
        assert ctx is not None
        return self.history.messages(self.system_text(frame, shown), ctx.instruction or observation.instruction,
                                     image, self._current_text(observation, frame))

    def _remember(self, observation: Observation, image: np.ndarray | None, text: str, note: str | None) -> None:
        self.history.add(Turn(image, text, note))
        if image is not None:
            self._shown = [*self._shown, (image, observation.frame_id)][-self.history.images:]

    def _parse(self, text: str, frame: CoordinateFrame, screen_size: tuple[int, int]):
        assert self.action_set is not None
        try:
            return self.action_set.parse(text, frame=frame, screen_size=screen_size), None
        except InvalidAction as err:
            return None, str(err)


def recorded_messages(messages: list[dict[str, Any]], frames: list[tuple[np.ndarray, str]]) -> list[dict[str, Any]]:
    """The chat messages as sent, JSON-safe: texts kept exactly, each image replaced by the id of the frame it
    was made from (``frames``: (image, frame id) pairs, matched by identity) and the size it was shown at."""

    def part(item: dict[str, Any]) -> dict[str, Any]:
        if item.get("type") == "image":
            image = item["image"]
            frame_id = next((fid for shown, fid in frames if shown is image), None)
            return {"type": "image", "frame_id": frame_id, "size": [int(image.shape[1]), int(image.shape[0])]}
        if item.get("type") == "text":
            return {"type": "text", "text": item["text"]}
        return {"type": str(item.get("type")), "text": repr(item)}

    return [{"role": m["role"], "content": [{"type": "text", "text": m["content"]}] if isinstance(m["content"], str)
             else [part(p) for p in m["content"]]} for m in messages]


def _too_large(err: Exception) -> bool:
    return isinstance(err, ImageTooLarge) or (isinstance(err, ServerError) and (
        err.status == 413 or err.code == "image_too_large"))
