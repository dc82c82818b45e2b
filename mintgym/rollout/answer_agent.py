"""Layer 4: a one-turn answering agent: the screenshot and task in, one short sampled answer out as ``done``.

Made for RL smoke runs with tiny models (the quickstart). The model never writes action syntax: it samples
``max_new_tokens`` tokens (one by default), submitted as ``done(answer=<text>)``. With ``choices`` for the
observation's domain the prompt lists numbered options and the first sampled token picks one: with
``pick="digit"`` a sampled digit ``i`` answers ``choices[i]`` (anything else is answered as typed); with
``pick="modulo"`` token id ``t`` answers ``choices[t % len(choices)]``, a fixed many-to-one map from the
vocabulary onto K options, so an untrained model already picks each option about 1 time in K. It takes the engine it is given (no import of
``mintgym.agents``); token ids, logprobs and the policy version go into the step like the VLM agent's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from mintgym.action_spaces import Done
from mintgym.inference import GenerationRequest, InferenceEngine, SamplingParams
from mintgym.policy import AgentContext, AgentStep
from mintgym.types import Observation


class AnswerAgent:
    name = "answer"

    def __init__(self, engine: InferenceEngine, *, choices: dict[str, list[str]] | None = None,
                 max_new_tokens: int = 1, temperature: float = 1.0, image_size: tuple[int, int] = (112, 112),
                 pick: str = "digit"):
        if pick not in ("digit", "modulo"):
            raise ValueError(f"pick must be 'digit' or 'modulo', got {pick!r}")
        self.pick = pick
        self.engine = engine
        self.choices = {d: list(c) for d, c in (choices or {}).items()}
        for domain, options in self.choices.items():
            if not options or (pick == "digit" and len(options) > 10):
                raise ValueError(f"choices for {domain!r} need 1 to 10 options (one digit each), got {len(options)}")
        self.sampling = SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature)
        self.image_size = tuple(image_size)
        self.context: AgentContext | None = None

    async def start(self, context: AgentContext) -> None:
        self.context = context

    def prompt(self, observation: Observation) -> list[dict[str, Any]]:
        ctx = self.context
        instruction = (ctx.instruction if ctx is not None else "") or observation.instruction
        text = f"Task: {instruction}\n"
        options = self.choices.get(observation.domain)
        if options:
            text += "Options: " + ", ".join(f"{i}) {o}" for i, o in enumerate(options)) + "\nOption:"
        else:
            text += "The answer is"
        image = np.asarray(Image.fromarray(observation.screenshot).resize(self.image_size, Image.BILINEAR))
        return [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": text}]}]

    def answer(self, text: str, domain: str, token_ids: list[int] | None = None) -> str:
        raw = text.strip()
        options = self.choices.get(domain)
        if options and self.pick == "modulo" and token_ids:
            return options[token_ids[0] % len(options)]
        if options and raw.isdigit() and int(raw) < len(options):
            return options[int(raw)]
        return raw

    async def act(self, observation: Observation) -> AgentStep:
        [gen] = await self.engine.agenerate([GenerationRequest(self.prompt(observation), self.sampling)])
        answer = self.answer(gen.text, observation.domain, gen.response_token_ids)
        return AgentStep(Done(answer=answer), text=gen.text, prompt_token_ids=gen.prompt_token_ids,
                         response_token_ids=gen.response_token_ids, logprobs=gen.response_logprobs,
                         policy_version=gen.policy_version, extra={"answer": answer})
