"""Per-session options of a desktop environment (the ``env_options`` of a session), typed and bounded.

The env server validates a session's options with :class:`DesktopOptions` before ``DesktopHost.create``
sees them; ``template`` (a host path) is not a client option.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DesktopOptions(BaseModel):
    """Options a client may pass when it creates a desktop session; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    #: Screen width and height of the session's X display, in pixels.
    width: int = Field(1280, ge=64, le=7680)
    height: int = Field(720, ge=64, le=4320)
    #: Seconds an X call (input, screenshot) may take before the display counts as dead.
    x_timeout: float = Field(10.0, gt=0, le=120)
    #: Give the session a way out to the internet (slirp4netns), never to the host's loopback; for tasks
    #: that open live websites. Off: the session's network is its own loopback alone.
    egress: bool = False
    #: Run the session's own AT-SPI bus so apps expose their accessibility tree (the ``a11y`` side
    #: channel and tasks that read the tree turn it on by themselves).
    accessibility: bool = False
