"""Layer 0: the observation every domain returns, and the small records that cross boundaries."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Observation:
    """What an agent sees: the pixels it acts on, plus the goal and where it is in the episode.

    ``screenshot`` is RGB uint8 of shape (H, W, 3); action coordinates are in these pixels.
    ``text``, ``a11y`` and ``dom`` (pruned HTML, web) are side channels, filled only when asked for.
    """

    screenshot: np.ndarray
    instruction: str
    domain: str
    step: int
    frame_id: str
    text: str | None = None
    a11y: str | None = None
    dom: str | None = None
    #: Set when this frame shows the screen region (x1, y1, x2, y2) enlarged after a ``zoom``;
    #: action coordinates still refer to the full screen.
    zoom: tuple[int, int, int, int] | None = None
    #: Why the environment refused the previous action (the same text as that step's info["error"]).
    last_error: str | None = None

    def __post_init__(self) -> None:
        shot = self.screenshot
        if not (isinstance(shot, np.ndarray) and shot.dtype == np.uint8 and shot.ndim == 3 and shot.shape[2] == 3):
            raise ValueError(
                "Observation.screenshot must be an RGB uint8 array of shape (H, W, 3), got "
                f"{getattr(shot, 'dtype', type(shot).__name__)} {getattr(shot, 'shape', '')}"
            )

    @property
    def screen_size(self) -> tuple[int, int]:
        """(width, height) in pixels: the frame action coordinates refer to."""
        return int(self.screenshot.shape[1]), int(self.screenshot.shape[0])


@dataclass(frozen=True)
class TaskInfo:
    """What a client learns about a task without loading it."""

    id: str
    domain: str
    instruction: str
    max_steps: int
    family: str = ""
    tags: tuple[str, ...] = field(default=())
    unavailable: str | None = None
