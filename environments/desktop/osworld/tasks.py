"""The ``osworld`` task pack: every task JSON in the shared data folder (read at listing time, no X)."""

from __future__ import annotations

from mintgym.environments.desktop.osworld.loader import load_examples
from mintgym.environments.desktop.osworld.task import OSWorldTask


def tasks() -> list[OSWorldTask]:
    return [OSWorldTask.from_spec(spec) for spec in load_examples()]
