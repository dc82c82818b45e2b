"""A one-decision agent: the screenshot and task in, one sampled token out, as an answer or a click.

Made for RL smoke runs with tiny models (the quickstart). The model never writes action syntax: it samples
``max_new_tokens`` tokens (one by default) and the first one is mapped onto the domain's options.

- ``choices[domain]``: K answers, submitted as ``done(answer=...)``. With ``pick="digit"`` a sampled digit
  ``i`` answers ``choices[i]`` (anything else is answered as typed); with ``pick="modulo"`` token id ``t``
  answers ``choices[t % K]``, a fixed many-to-one map of the vocabulary onto K options, so an untrained
  model already picks each option about 1 time in K.
- ``click_grid[domain] = [cols, rows]``: K = cols x rows click points, the centres of a fixed grid over
  the screenshot (of the domain's ``crop`` when it has one: the cells are what the model is shown); token id
  ``t`` picks cell ``t % K`` (row-major) and the step is a real pixel ``click(x, y)`` of the shared action
  space. The episode gets ``decisions`` clicks (one by default), each a model call on the screen as it is
  then, the prompt saying which click of how many it is; if they did not end it, the next step is
  ``done(success=False)`` without another model call, so the env's own reward of those clicks is what gets
  trained on (with two or more, one reward at the end for several decisions: multi-turn credit assignment).

``crop[domain] = [x0, y0, x1, y1]`` shows the model only that screen region (pytool's task image panel is
``[8, 36, 488, 396]``), so a small image still holds its detail. ``blind=True`` shows the model a black image
instead of the screenshot: the ablation that tells a policy that reads the pixels from one that learnt a fixed
answer. ``show_instruction=False`` leaves the task's instruction out of the prompt (the screen and the options
only). Domains with neither are answered with the text as typed. Token ids, logprobs, the policy version and the
prompt as sent go into the step like the VLM agent's.

``imitate(observation, action)`` is the same decision made by a teacher (behaviour cloning, see
:mod:`mintgym.trajectory.imitation`): a click becomes the token of the grid cell it falls in, an answer the
token of its choice; the first decision on the episode's first screen, each later one on the screen its click
was made on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mintgym.action_spaces import ActionModel, Click, Done
from mintgym.agents.vlm import recorded_messages, resize_image
from mintgym.inference import GenerationRequest, InferenceEngine, SamplingParams
from mintgym.policy import AgentContext, AgentStep
from mintgym.types import Observation


def grid_point(cell: int, grid: tuple[int, int], screen_size: tuple[int, int]) -> tuple[int, int]:
    """Pixel centre of ``cell`` (row-major) of a ``(cols, rows)`` grid over a ``(width, height)`` screen."""
    cols, rows = grid
    if not 0 <= cell < cols * rows:
        raise ValueError(f"cell {cell} is outside a {cols}x{rows} grid")
    width, height = screen_size
    col, row = cell % cols, cell // cols
    return int((col + 0.5) * width / cols), int((row + 0.5) * height / rows)


def grid_cell(point: tuple[int, int], grid: tuple[int, int], screen_size: tuple[int, int]) -> int:
    """The cell (row-major) of a ``(cols, rows)`` grid over a ``(width, height)`` screen that holds ``point``."""
    cols, rows = grid
    width, height = screen_size
    x, y = point
    if not (0 <= x < width and 0 <= y < height):
        raise ValueError(f"point {point} is off the {width}x{height} screen")
    return int(y * rows // height) * cols + int(x * cols // width)


class AnswerAgent:
    name = "answer"
    #: The commands build this agent an inference engine (``--engine``, ``--model``, ``--model-url``).
    needs_engine = True
    #: The shared command-line options it takes (mintgym.cli.agent_options).
    cli_flags = ("temperature",)

    def __init__(self, engine: InferenceEngine, *, choices: dict[str, list[str]] | None = None,
                 click_grid: dict[str, list[int]] | None = None, max_new_tokens: int = 1,
                 temperature: float = 1.0, image_size: tuple[int, int] = (112, 112), pick: str = "digit",
                 blind: bool = False, crop: dict[str, list[int]] | None = None, show_instruction: bool = True,
                 decisions: int = 1):
        if pick not in ("digit", "modulo"):
            raise ValueError(f"pick must be 'digit' or 'modulo', got {pick!r}")
        if not isinstance(decisions, int) or decisions < 1:
            raise ValueError(f"decisions is the number of model calls per episode, at least 1, got {decisions!r}")
        #: Model calls per episode (clicks of a ``click_grid`` domain; an answer ends the episode at the first).
        self.decisions = decisions
        self.pick = pick
        self.engine = engine
        self.choices = {d: list(c) for d, c in (choices or {}).items()}
        for domain, options in self.choices.items():
            if not options or (pick == "digit" and len(options) > 10):
                raise ValueError(f"choices for {domain!r} need 1 to 10 options (one digit each), got {len(options)}")
        self.click_grid: dict[str, tuple[int, int]] = {}
        for domain, grid in (click_grid or {}).items():
            if len(grid) != 2 or min(grid) < 1:
                raise ValueError(f"click_grid for {domain!r} is [cols, rows] with both >= 1, got {grid!r}")
            if domain in self.choices:
                raise ValueError(f"domain {domain!r} has both choices and a click_grid; give it one")
            self.click_grid[domain] = (int(grid[0]), int(grid[1]))
        self.sampling = SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature)
        self.image_size = tuple(image_size)
        #: Show the model a black image instead of the screenshot (the ablation of a policy that cannot see).
        self.blind = bool(blind)
        #: Put the task's instruction in the prompt (off: the model is shown the screen and the options only).
        self.show_instruction = bool(show_instruction)
        #: Per domain, the screen region ``[x0, y0, x1, y1]`` the model is shown (resized to ``image_size``).
        self.crop: dict[str, tuple[int, int, int, int]] = {}
        for domain, box in (crop or {}).items():
            if len(box) != 4 or not (0 <= box[0] < box[2] and 0 <= box[1] < box[3]):
                raise ValueError(f"crop for {domain!r} is [x0, y0, x1, y1] with x0 < x1 and y0 < y1, got {box!r}")
            self.crop[domain] = tuple(int(v) for v in box)
        self.context: AgentContext | None = None
        #: Decisions made in this episode.
        self.made = 0
        self._first_prompt: tuple[list[dict[str, Any]], Observation] | None = None

    @property
    def decided(self) -> bool:
        """Whether the episode's decisions are all made."""
        return self.made >= self.decisions

    async def start(self, context: AgentContext) -> None:
        self.context = context
        self.made = 0
        #: ``imitate``: the first observation's prompt, which the one decision is made on.
        self._first_prompt: tuple[list[dict[str, Any]], Observation] | None = None

    def prompt(self, observation: Observation) -> list[dict[str, Any]]:
        ctx = self.context
        instruction = (ctx.instruction if ctx is not None else "") or observation.instruction
        text = f"Task: {instruction}\n" if self.show_instruction else ""
        options = self.choices.get(observation.domain)
        grid = self.click_grid.get(observation.domain)
        if options:
            text += "Options: " + ", ".join(f"{i}) {o}" for i, o in enumerate(options)) + "\nOption:"
        elif grid:
            text += f"Click one cell of a {grid[0]}x{grid[1]} grid over the screen, row by row.\n"
            if self.decisions > 1:
                text += f"Click {self.made + 1} of {self.decisions}.\n"
            text += "Cell:"
        else:
            text += "The answer is"
        if self.blind:
            image = np.zeros((self.image_size[1], self.image_size[0], 3), dtype=np.uint8)
        else:
            image = resize_image(self.region(observation), self.image_size)
        return [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": text}]}]

    def region(self, observation: Observation) -> np.ndarray:
        """The part of the screenshot the model is shown: the domain's ``crop``, or all of it."""
        box = self.crop.get(observation.domain)
        if box is None:
            return observation.screenshot
        height, width = observation.screenshot.shape[:2]
        if box[2] > width or box[3] > height:
            raise ValueError(f"crop {list(box)} for {observation.domain!r} is outside the {width}x{height} screen")
        return observation.screenshot[box[1]:box[3], box[0]:box[2]]

    def recorded(self, messages: list[dict[str, Any]], observation: Observation) -> list[dict[str, Any]]:
        """``messages`` JSON-safe; a blind prompt's black image refers to no frame (``blank``: the model saw
        none), a cropped one says which region of its frame it shows (``crop``)."""
        image = messages[0]["content"][0]["image"]
        recorded = recorded_messages(messages, [] if self.blind else [(image, observation.frame_id)])
        box = self.crop.get(observation.domain)
        if self.blind:
            recorded[0]["content"][0]["blank"] = True
        elif box is not None:
            recorded[0]["content"][0]["crop"] = list(box)
        return recorded

    def answer(self, text: str, domain: str, token_ids: list[int] | None = None) -> str:
        raw = text.strip()
        options = self.choices.get(domain)
        if options and self.pick == "modulo" and token_ids:
            return options[token_ids[0] % len(options)]
        if options and raw.isdigit() and int(raw) < len(options):
            return options[int(raw)]
        return raw

    def grid_area(self, domain: str, screen_size: tuple[int, int]) -> tuple[int, int, int, int]:
        """The screen box ``[x0, y0, x1, y1]`` a domain's click grid lies over: its ``crop``, else the screen."""
        return self.crop.get(domain) or (0, 0, *screen_size)

    def cell_point(self, domain: str, cell: int, screen_size: tuple[int, int]) -> tuple[int, int]:
        """The screen pixel at the centre of ``cell`` of the domain's grid."""
        x0, y0, x1, y1 = self.grid_area(domain, screen_size)
        x, y = grid_point(cell, self.click_grid[domain], (x1 - x0, y1 - y0))
        return x0 + x, y0 + y

    def point_cell(self, domain: str, point: tuple[int, int], screen_size: tuple[int, int]) -> int:
        """The cell of the domain's grid that holds the screen pixel ``point`` (ValueError off the grid)."""
        x0, y0, x1, y1 = self.grid_area(domain, screen_size)
        return grid_cell((point[0] - x0, point[1] - y0), self.click_grid[domain], (x1 - x0, y1 - y0))

    def click(self, domain: str, token_ids: list[int], screen_size: tuple[int, int]) -> tuple[int, Click]:
        """The grid cell the first sampled token picks and the click at its centre."""
        grid = self.click_grid[domain]
        if not token_ids:
            raise ValueError("the engine sampled no token; a click needs one")
        cell = token_ids[0] % (grid[0] * grid[1])
        x, y = self.cell_point(domain, cell, screen_size)
        return cell, Click(x=x, y=y)

    async def act(self, observation: Observation) -> AgentStep:
        if self.decided:  # the episode's decisions are made and did not end it, so it ends unsolved
            return AgentStep(Done(success=False), text="done()", extra={"after_decision": True})
        messages = self.prompt(observation)
        [gen] = await self.engine.agenerate([GenerationRequest(messages, self.sampling)])
        self.made += 1
        common = dict(text=gen.text, prompt_token_ids=gen.prompt_token_ids, response_token_ids=gen.response_token_ids,
                      logprobs=gen.response_logprobs, policy_version=gen.policy_version,
                      messages=self.recorded(messages, observation))
        if observation.domain in self.click_grid:
            cell, action = self.click(observation.domain, list(gen.response_token_ids or []), observation.screen_size)
            return AgentStep(action, **common, extra={"cell": cell})
        answer = self.answer(gen.text, observation.domain, gen.response_token_ids)
        return AgentStep(Done(answer=answer), **common, extra={"answer": answer})

    async def imitate(self, observation: Observation, action: ActionModel) -> AgentStep | None:
        """The step this agent takes to play a teacher's decision: the one token that maps onto the teacher's
        next action it can express, on the prompt of the first observation it was shown for its first decision
        (made there even if the teacher took other steps first: a pytool teacher's code, then its answer) and of
        the observation the teacher's click was made on for each later one. Token id ``i`` stands for option or
        cell ``i``, which every pick maps back to ``i``. None while no such action has come, and after the
        episode's decisions."""
        if self.decided:
            return None
        if self._first_prompt is None:
            self._first_prompt = (self.prompt(observation), observation)
        messages, first = self._first_prompt if not self.made else (self.prompt(observation), observation)
        domain = first.domain
        if domain in self.click_grid and isinstance(action, Click):
            try:
                option = self.point_cell(domain, (action.x, action.y), first.screen_size)
            except ValueError:
                return None  # a click off the grid: not a decision this agent could make
            x, y = self.cell_point(domain, option, first.screen_size)
            played: ActionModel = Click(x=x, y=y)
            extra: dict[str, Any] = {"cell": option}
        elif domain in self.choices and isinstance(action, Done) and action.answer in self.choices[domain]:
            option = self.choices[domain].index(action.answer)
            played, extra = Done(answer=action.answer), {"answer": action.answer}
        else:
            return None
        self.made += 1
        return AgentStep(played, text=self.option_text(option), response_token_ids=[self.option_token(option)],
                         messages=self.recorded(messages, first), extra=extra)

    def option_token(self, option: int) -> int:
        """The response token id that picks ``option``: the id itself under ``pick="modulo"`` (``i % K == i``);
        under ``pick="digit"`` the digit's token, which needs the engine's tokenizer."""
        if self.pick == "modulo":
            return option
        tokenizer = getattr(self.engine, "tokenizer", None)
        if tokenizer is None:
            raise ValueError("pick='digit' imitation needs an engine with a tokenizer to spell the digit")
        [token] = tokenizer.encode(str(option), add_special_tokens=False)
        return int(token)

    def option_text(self, option: int) -> str:
        tokenizer = getattr(self.engine, "tokenizer", None)
        return tokenizer.decode([self.option_token(option)]) if tokenizer is not None else ""
