"""The web task base: a Task with the viewport its pages are laid out for.

Imports no Playwright, so listing tasks stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mintgym.env.core import Task

DEFAULT_VIEWPORT = (800, 600)


@dataclass
class WebTask(Task):
    """A task in the web domain. ``viewport`` is (width, height) in CSS pixels (device scale factor 1)."""

    domain: ClassVar[str] = "web"
    viewport: tuple[int, int] = DEFAULT_VIEWPORT
