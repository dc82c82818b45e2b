"""Mind2Web's suite options (``mintgym eval --suite mind2web-test-task --suite-option KEY=VALUE``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Mind2WebOptions(BaseModel):
    """What a Mind2Web run takes besides the data; unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")

    #: The headline table: ``official`` (the official multiple-choice rules, the default) or ``seeclick``
    #: (SeeClick's click-in-box rules). Both are computed and kept in results.json whichever is chosen.
    protocol: Literal["official", "seeclick"] = "official"
    #: The candidate generator's ranks, ``scores_all_data.pkl`` (or JSON in its layout); without them and
    #: without a ``rank`` in the data, no candidate is cut.
    scores: Path | None = None
    #: Candidates ranked at or beyond this are cut (the official ``top_k``).
    top_k: int = Field(50, ge=1)
