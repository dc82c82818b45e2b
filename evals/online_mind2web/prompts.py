"""The prompts WebJudge asks with: the authors' (read from the user's copy by :mod:`.official`) or MintGym's
own wording, a named fallback that every verdict and report labels.

A :class:`JudgePrompts` holds the three system messages and the four user templates of the authors'
procedure, with their ``str.format`` fields: key points ``{task}``; each screenshot ``{task}``,
``{key_points}``; the verdict ``{task}``, ``{key_points}``, ``{last_actions}``, ``{thoughts}``, or without
``{thoughts}`` when no screenshot was kept.
"""

from __future__ import annotations

import string
from typing import Literal

from pydantic import BaseModel, ConfigDict

#: The ``str.format`` fields each template must have (webjudge_online_mind2web.py: ``prompt.format`` calls).
FIELDS = {
    "key_points_user": {"task"},
    "image_user": {"task", "key_points"},
    "verdict_user": {"task", "key_points", "last_actions", "thoughts"},
    "verdict_user_no_images": {"task", "key_points", "last_actions"},
}

FALLBACK_LABEL = "MintGym fallback prompts (not the authors' WebJudge wording)"


def template_fields(template: str) -> set[str]:
    """The named ``str.format`` fields of ``template``."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


class JudgePrompts(BaseModel):
    """WebJudge's wording and limits, with where they came from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Literal["official", "mintgym-fallback"]
    #: One line naming the source, printed by every report (repository, commit, file hash).
    label: str
    commit: str | None = None
    sha256: str | None = None
    key_points_system: str
    key_points_user: str
    image_system: str
    image_user: str
    verdict_system: str
    verdict_user: str
    verdict_user_no_images: str
    #: Most screenshots (and thoughts) passed to the verdict (``MAX_IMAGE``).
    max_images: int = 50
    #: Token limit of each call: key points, one screenshot, the verdict.
    key_points_max_tokens: int = 512
    image_max_tokens: int = 512
    verdict_max_tokens: int = 512
    temperature: float = 0.0


def check_templates(where: str, templates: dict[str, str]) -> None:
    """A one-line ``ValueError`` when a template lacks one of its fields or has another."""
    for name, expected in FIELDS.items():
        found = template_fields(templates[name])
        if found != expected:
            raise ValueError(f"{where}: the {name} template has fields {sorted(found)}, expected {sorted(expected)}")


def mintgym_fallback() -> JudgePrompts:
    """MintGym's own wording of the authors' procedure, for use without a copy of their repository."""
    return JudgePrompts(
        source="mintgym-fallback", label=FALLBACK_LABEL,
        key_points_system=(
            "You read a web task and list what it explicitly requires.\n\nList every requirement the task "
            "states: the item, its attributes, filters, ranges, dates, quantities and the final action (for "
            "example a submission). Add nothing the task does not say. A superlative such as \"cheapest\", "
            "\"best\", \"highest-rated\", \"latest\" or \"closest\" is a requirement to sort or filter by it "
            "(write it as, for example, \"Sort by lowest price\").\n\nAnswer with a line \"**Key Points**:\" "
            "followed by a numbered list, one requirement per line, no explanations."),
        key_points_user="Task: {task}",
        image_system=(
            "You check one screenshot of a web agent's work against the requirements of its task.\n\nDescribe "
            "what the screenshot shows (page, visible text, selected filters, results), then decide how much it "
            "shows progress or evidence for the listed key points: applied filters or sorting, entered values, "
            "results that meet the requirements, a confirmation.\n\nAnswer in this form:\n**Reasoning**: <what "
            "you see and how it relates to the key points>\n**Score**: <one number from 1 to 5>\nwhere 1 = "
            "nothing relevant, 2 = little and unclear, 3 = some relevant evidence but incomplete, 4 = important "
            "evidence, nearly complete, 5 = clear evidence that is essential to the task."),
        image_user="Task: {task}\n\nKey points:\n{key_points}\n\nThe screenshot follows.",
        verdict_system=(
            "You decide whether a web agent completed the user's task.\n\nYou get the task, its key points, the "
            "agent's action history and, when available, the screenshots of its trajectory that looked relevant, "
            "each with a note. Check every key point against that evidence:\n- Required filters and sorting must "
            "actually be applied and visible in the results; typing all the requirements into a search box does "
            "not guarantee them.\n- A required range (price, years, counts) must match exactly, neither broader "
            "nor narrower.\n- Tasks that ask to submit, book, add or show something need that final action or "
            "result.\n- If the site shows no matching result although the agent did the right thing, that is a "
            "success.\n- If the page already lists every item, choosing the right one without a filter is a "
            "success.\n\nAnswer in exactly two lines:\nThoughts: <your check of each key point>\nStatus: success "
            "or failure"),
        verdict_user=("User task: {task}\n\nKey points:\n{key_points}\n\nAction history:\n{last_actions}\n\n"
                      "Relevant screenshots of the trajectory follow; their notes:\n{thoughts}"),
        verdict_user_no_images="User task: {task}\n\nKey points:\n{key_points}\n\nAction history:\n{last_actions}",
    )
