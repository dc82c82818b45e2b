"""Per-session options of an android environment (the ``env_options`` of a session)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

_Name = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:\-]+$")]


class AndroidOptions(BaseModel):
    """Options of an android session: what ``AndroidHost.create`` reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The adb serial of the device to use (default: the host's).
    serial: _Name | None = None
    #: An emulator snapshot to load on reset.
    snapshot: _Name | None = None
    #: Seconds to let the screen settle after an action.
    settle: float = Field(0.5, ge=0, le=60)
