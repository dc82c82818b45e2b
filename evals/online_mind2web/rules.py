"""WebJudge's parsing and decision rules, exactly as the authors' code applies them.

Each function follows one passage of the official code, OSU-NLP-Group/Online-Mind2Web (the judge module
``src/methods/webjudge_online_mind2web.py``, read at unclevikram/TripMind@9764b73c, a copy of it; ``src/utils.py``
likewise; ``src/run.py`` at OSU-NLP-Group/Online-Mind2Web@ccdeb0d6). The rules are literal string operations, and
so are these: case-sensitive where the authors' are, first match where they take ``split(...)[1]``, last where
they take ``[-1]``. The differential cases in ``tests/evals/online_mind2web/differential/`` hold the authors'
code's outcomes on adversarial answers; these functions agree on every one.

    >>> predicted_label('Thoughts: ok\\nStatus: "success"')
    1
    >>> predicted_label("Status: failure\\nStatus: success")  # the first Status: decides
    0
    >>> rate_screenshot("**Reasoning**: a form\\n\\n**Score**: 4").score
    4
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict


def key_points_of(response: str) -> str:
    """The key points of the first call's answer (webjudge_online_mind2web.py:126-133).

    Blank lines are halved (``"\\n\\n" -> "\\n"`` once over the text), then the text between the first and
    second ``**Key Points**:`` is taken, or when there is none, everything after the last ``Key Points:``
    (the whole text when there is neither); each line is left-stripped.
    """
    text = response.replace("\n\n", "\n")
    parts = text.split("**Key Points**:")
    body = parts[1] if len(parts) > 1 else text.split("Key Points:")[-1]
    return "\n".join(line.lstrip() for line in body.splitlines())


class ScreenshotRating(BaseModel):
    """One screenshot's rating: ``score`` 0 when the answer has no readable score; ``thought`` None when
    the answer has no ``Score`` at all (the authors' code then keeps the previous screenshot's thought)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    score: int
    thought: str | None


_DIGIT = re.compile(r"[1-5]")  # webjudge_online_mind2web.py:141


def rate_screenshot(response: str | None) -> ScreenshotRating:
    """A screenshot answer's score and thought (webjudge_online_mind2web.py:143-151).

    The score is the first digit 1-5 between the first and second case-sensitive ``Score`` (so "Score: 10"
    reads 1 and "score: 4" reads nothing); the thought is the text after the last ``**Reasoning**:`` (the
    whole answer without one), stripped, up to the first blank line, newlines made spaces. An answer
    without ``Score`` gives score 0 and no thought; one with ``Score`` but no digit 1-5 after it gives score
    0 and its thought.
    """
    if not isinstance(response, str) or "Score" not in response:
        return ScreenshotRating(score=0, thought=None)
    thought = response.split("**Reasoning**:")[-1].strip().lstrip("\n").split("\n\n")[0].replace("\n", " ")
    found = _DIGIT.search(response.split("Score")[1])
    return ScreenshotRating(score=int(found.group()) if found else 0, thought=thought)


class Selection(BaseModel):
    """Which screenshots go to the verdict, and the thoughts listed with them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kept: list[int]
    thoughts: list[str]


def select_screenshots(ratings: Sequence[ScreenshotRating], threshold: int, max_images: int) -> Selection:
    """Screenshots rated at least ``threshold``, their non-empty thoughts, each list cut to ``max_images``
    on its own (webjudge_online_mind2web.py:142-165).

    A screenshot whose answer had no ``Score`` carries the previous screenshot's thought, as the authors'
    loop variable does; with a threshold of 0 or less such a screenshot is kept, and when it is the first
    one the authors' code fails, so this raises ``ValueError``.
    """
    kept: list[int] = []
    thoughts: list[str] = []
    thought: str | None = None
    for i, rating in enumerate(ratings):
        if rating.thought is not None:
            thought = rating.thought
        if rating.score >= threshold:
            if thought is None:
                raise ValueError(f"screenshot {i} has no Score and no earlier screenshot has a thought: the "
                                 f"authors' judge fails here (score threshold {threshold} keeps unrated screenshots)")
            kept.append(i)
            if thought != "":
                thoughts.append(thought)
    return Selection(kept=kept[:max_images], thoughts=thoughts[:max_images])


def numbered(items: Sequence[Any]) -> str:
    """``1. a\\n2. b``: the action history and the thoughts in the verdict prompt (webjudge_online_mind2web.py:173)."""
    return "\n".join(f"{i + 1}. {item}" for i, item in enumerate(items))


def predicted_label(response: str | None) -> int:
    """1 when "success" appears between the first and second ``status:`` of the lower-cased verdict, else 0
    (src/utils.py ``extract_predication``, mode ``WebJudge_Online_Mind2Web_eval``).

    So ``Status :`` and a verdict without ``status:`` give 0, a later ``Status:`` line is never read, and any
    word containing "success" ("unsuccessful") after the first one gives 1.
    """
    try:
        return int("success" in response.lower().split("status:")[1])  # type: ignore[union-attr]
    except (AttributeError, IndexError):
        return 0
