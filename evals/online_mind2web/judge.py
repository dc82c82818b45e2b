"""WebJudge: Online-Mind2Web's LLM-as-a-judge, run against any OpenAI-compatible model.

The procedure is the one of the Online-Mind2Web paper (Xue et al., 2025) and its ``WebJudge_Online_Mind2Web``
evaluator; the prompt wording is MintGym's own:

1. **Key points**: the model lists the requirements stated explicitly in the task (superlatives such as
   "cheapest" or "newest" become a sort or filter requirement).
2. **Screenshot relevance**: each trajectory screenshot is rated 1-5 for how much it shows evidence of
   those key points, with a one-paragraph reasoning. Screenshots rated at least ``score_threshold``
   (3) are kept, at most ``max_images`` (50) of them; an answer without a readable score counts as 0.
3. **Verdict**: given the task, key points, the numbered action history and the kept screenshots with
   their reasoning, the model writes its thoughts and ``Status: success`` or ``Status: failure``; the
   task succeeded when the text after ``Status:`` contains "success".

The engine is any :class:`~mintgym.inference.base.InferenceEngine`; ``OpenAIEngine(base_url, model)``
talks to OpenAI, vLLM or any compatible server. Sampling is greedy.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mintgym.evals.online_mind2web.results import read_result

from mintgym.inference.base import InferenceEngine
from mintgym.inference.types import GenerationRequest, SamplingParams

KEY_POINTS_SYSTEM = """You read a web task and list what it explicitly requires.

List every requirement the task states: the item, its attributes, filters, ranges, dates, quantities and
the final action (for example a submission). Add nothing the task does not say. A superlative such as
"cheapest", "best", "highest-rated", "latest" or "closest" is a requirement to sort or filter by it
(write it as, for example, "Sort by lowest price").

Answer with a line "Key Points:" followed by a numbered list, one requirement per line, no explanations."""

IMAGE_SYSTEM = """You check one screenshot of a web agent's work against the requirements of its task.

Describe what the screenshot shows (page, visible text, selected filters, results), then decide how much
it shows progress or evidence for the listed key points: applied filters or sorting, entered values,
results that meet the requirements, a confirmation.

Answer in this form:
Reasoning: <what you see and how it relates to the key points>
Score: <one number from 1 to 5>
where 1 = nothing relevant, 2 = little and unclear, 3 = some relevant evidence but incomplete,
4 = important evidence, nearly complete, 5 = clear evidence that is essential to the task."""

VERDICT_SYSTEM = """You decide whether a web agent completed the user's task.

You get the task, its key points, the agent's action history and, when available, the screenshots of
its trajectory that looked relevant, each with a note. Check every key point against that evidence:
- Required filters and sorting must actually be applied and visible in the results; typing all the
  requirements into a search box does not guarantee them.
- A required range (price, years, counts) must match exactly, neither broader nor narrower.
- Tasks that ask to submit, book, add or show something need that final action or result.
- If the site shows no matching result although the agent did the right thing, that is a success.
- If the page already lists every item, choosing the right one without a filter is a success.

Answer in exactly two lines:
Thoughts: <your check of each key point>
Status: success or failure"""


@dataclass
class ImageRating:
    image: str
    score: int
    reasoning: str
    response: str


@dataclass
class Verdict:
    """WebJudge's judgment of one task."""

    task_id: str
    success: bool
    key_points: str
    ratings: list[ImageRating] = field(default_factory=list)
    kept_images: list[str] = field(default_factory=list)
    response: str = ""

    @property
    def predicted_label(self) -> int:
        return int(self.success)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "predicted_label": self.predicted_label}


def parse_key_points(text: str) -> str:
    """The list after the last "Key Points" marker (markdown bold tolerated), lines left-stripped."""
    parts = re.split(r"\**Key Points\**\s*:\**", text, flags=re.IGNORECASE)
    body = parts[-1] if len(parts) > 1 else text
    return "\n".join(line.lstrip() for line in body.replace("\n\n", "\n").strip().splitlines())


def parse_score(text: str) -> int:
    """The first digit 1-5 after "Score", or 0 when there is none."""
    parts = re.split(r"score", text, flags=re.IGNORECASE)
    if len(parts) < 2:
        return 0
    found = re.search(r"[1-5]", parts[1])
    return int(found.group()) if found else 0


def parse_reasoning(text: str) -> str:
    found = re.search(r"reasoning\**\s*:\**\s*(.*?)(?:\n\s*\n|\n\s*[-*\d. ]*\**score|$)", text,
                      flags=re.IGNORECASE | re.DOTALL)
    return " ".join((found.group(1) if found else "").split())


def parse_status(text: str) -> bool:
    """True when the text after the last "Status:" says success."""
    parts = re.split(r"status\s*:", text, flags=re.IGNORECASE)
    return len(parts) > 1 and "success" in parts[-1].lower()


class WebJudge:
    """Judges Online-Mind2Web results with a multimodal model behind ``engine``."""

    def __init__(self, engine: InferenceEngine, *, score_threshold: int = 3, max_images: int = 50,
                 max_new_tokens: int = 1024):
        if not 1 <= score_threshold <= 5:
            raise ValueError(f"score_threshold must be from 1 to 5, got {score_threshold}")
        if max_images < 0:
            raise ValueError(f"max_images must be >= 0, got {max_images}")
        self.engine, self.score_threshold, self.max_images = engine, score_threshold, max_images
        self.sampling = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0)

    def _ask(self, batch: list[tuple[str, list[dict[str, Any]]]]) -> list[str]:
        requests = [GenerationRequest([{"role": "system", "content": system}, {"role": "user", "content": parts}],
                                      self.sampling) for system, parts in batch]
        return [g.text for g in self.engine.generate(requests)]

    def judge(self, task_id: str, task: str, action_history: list[str], images: list[Any],
              names: list[str] | None = None) -> Verdict:
        """Judge one task from its description, action history and screenshots (PIL images or arrays)."""
        names = names or [str(i) for i in range(len(images))]
        [raw_points] = self._ask([(KEY_POINTS_SYSTEM, [{"type": "text", "text": f"Task: {task}"}])])
        key_points = parse_key_points(raw_points)
        question = f"Task: {task}\n\nKey points:\n{key_points}\n\nThe screenshot follows."
        answers = self._ask([(IMAGE_SYSTEM, [{"type": "text", "text": question}, {"type": "image", "image": img}])
                             for img in images]) if images else []
        ratings = [ImageRating(name, parse_score(a), parse_reasoning(a), a) for name, a in zip(names, answers)]
        kept = [(img, r) for img, r in zip(images, ratings) if r.score >= self.score_threshold][: self.max_images]
        actions = "\n".join(f"{i + 1}. {a}" for i, a in enumerate(action_history)) or "(none)"
        text = f"User task: {task}\n\nKey points:\n{key_points}\n\nAction history:\n{actions}"
        notes = [r.reasoning for _, r in kept if r.reasoning]
        if kept:
            text += "\n\nRelevant screenshots of the trajectory follow; their notes:\n" + "\n".join(
                f"{i + 1}. {n}" for i, n in enumerate(notes))
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
        parts += [{"type": "image", "image": img} for img, _ in kept]
        [response] = self._ask([(VERDICT_SYSTEM, parts)])
        return Verdict(task_id, parse_status(response), key_points, ratings, [r.image for _, r in kept], response)

    def judge_folder(self, folder: str | Path) -> Verdict:
        """Judge one ``<task_id>/`` result folder (result.json + trajectory/*.png)."""
        from PIL import Image

        result, paths = read_result(folder)
        images = [Image.open(p).convert("RGB") for p in paths]
        return self.judge(str(result["task_id"]), str(result["task"]), list(result["action_history"]), images,
                          [p.name for p in paths])


def judge_results(results_root: str | Path, judge: WebJudge, out: str | Path | None = None) -> list[Verdict]:
    """Judge every ``<task_id>/`` folder under ``results_root``; each verdict goes to ``<task_id>/judge.json``
    (or under ``out``), and a folder that already has one is not judged again."""
    root = Path(results_root)
    folders = sorted(p for p in root.iterdir() if (p / "result.json").is_file())
    if not folders:
        raise FileNotFoundError(f"{root} has no <task_id>/result.json folders")
    verdicts = []
    for folder in folders:
        target = (Path(out) / folder.name if out else folder) / "judge.json"
        if target.is_file():
            data = json.loads(target.read_text())
            data["ratings"] = [ImageRating(**r) for r in data.get("ratings", [])]
            data.pop("predicted_label", None)
            verdicts.append(Verdict(**data))
            continue
        verdict = judge.judge_folder(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(verdict.to_json(), indent=1))
        verdicts.append(verdict)
    return verdicts
