"""Per-session options of a web environment (the ``env_options`` of a session)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mintgym.environments.web.task import DEFAULT_VIEWPORT

_Pixels = Annotated[int, Field(ge=64, le=4096)]
#: ``host`` or ``host:port``: a DNS name or IP literal, no scheme, path or wildcard.
_Host = Annotated[str, Field(min_length=1, max_length=253,
                             pattern=r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.\-]+)(:[0-9]{1,5})?$")]


class WebOptions(BaseModel):
    """Options a client may pass when it creates a web session; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: (width, height) before the first task sets its own; tasks carry their pack's viewport.
    viewport: tuple[_Pixels, _Pixels] = DEFAULT_VIEWPORT
    #: How screenshots are taken from Chromium: lossless PNG (default) or JPEG (faster on large pages).
    screenshot_format: Literal["png", "jpeg"] = "png"
    jpeg_quality: int = Field(90, ge=10, le=100)
    #: Seconds a ``goto`` may take to reach the load event before it is reported as an error.
    goto_timeout_s: float = Field(10.0, gt=0, le=120)
    #: Seconds an action waits for a navigation it started to finish loading (it never fails on this).
    settle_timeout_s: float = Field(3.0, ge=0, le=60)
    #: Extra hosts (``host`` or ``host:port``) the session may reach besides the host's own servers.
    allow: tuple[_Host, ...] = Field((), max_length=64)
    #: Allow every loopback port, not only the host's own servers.
    allow_loopback: bool = False
    #: Texts longer than this are entered with one insertText (like a paste) instead of key by key.
    max_keystroke_chars: int = Field(500, ge=1, le=100_000)
    #: Draw a numbered mark on every interactive element of the screenshot (set-of-marks); the numbers are the
    #: element ids of the ``a11y`` side channel, which is the legend.
    set_of_marks: bool = False
    #: Most elements the ``a11y`` side channel lists (the rest are counted on a last line).
    a11y_max_elements: int = Field(1000, ge=1, le=20_000)
    #: Most characters of the ``dom`` side channel's pruned HTML.
    dom_max_chars: int = Field(100_000, ge=1_000, le=2_000_000)
    #: Override MiniWoB's per-task episode time limit, in ms (None keeps each task's own limit).
    miniwob_time_limit_ms: int | None = Field(None, gt=0, le=3_600_000)
