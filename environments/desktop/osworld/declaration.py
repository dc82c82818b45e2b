"""What the osworld pack tells the core (:mod:`mintgym.env.declarations`): the flags ``--osworld-root`` (OSWorld's
own task folder) and, for ``mintgym eval``, what ``--allow-internet`` means to it (task file downloads)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from mintgym.env.declarations import CommandOption, Declaration


def _use_root(path: Path | None) -> None:
    from mintgym.environments.desktop.osworld.loader import root_option

    root_option(path)


def _allow_downloads(allowed: bool) -> Callable[[], None] | None:
    """Let the env servers this command starts fetch OSWorld's remote task files, until the command ends."""
    from mintgym.environments.desktop.osworld.files import DOWNLOADS_VARIABLE

    if not allowed:
        return None
    previous = os.environ.get(DOWNLOADS_VARIABLE)
    os.environ[DOWNLOADS_VARIABLE] = "1"

    def restore() -> None:
        if previous is None:
            os.environ.pop(DOWNLOADS_VARIABLE, None)
        else:
            os.environ[DOWNLOADS_VARIABLE] = previous

    return restore


DECLARATION = Declaration(options=(
    CommandOption(flag="--osworld-root", kind="path", commands=("tasks", "rollout", "eval"), apply=_use_root,
                  help="OSWorld's evaluation_examples folder as OSWorld ships it (examples/<app>/<id>.json, "
                       "test_*.json; its test_*.json lists become suites osworld-test_*); default: "
                       "$MINTGYM_OSWORLD_ROOT, else the shared data"),
    CommandOption(flag="--allow-internet", kind="switch", commands=("eval",), apply=_allow_downloads,
                  help="let the server download task files"),
))
