"""Layer 6: checkpoints: ``<out>/checkpoints/step-<N>/`` with the model, optimizer and run state.

``state.json`` holds the step, the trainer version and the buffer's accounting, so a resumed run
continues the same step count and counters. A checkpoint is written to a temporary folder and renamed,
so a run killed while saving leaves the previous one intact.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from mintgym.errors import MintGymError, error_line


def checkpoint_dir(out: str | os.PathLike) -> Path:
    return Path(out) / "checkpoints"


def save_checkpoint(out: str | os.PathLike, step: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    state: dict[str, Any], keep: int = 2) -> Path:
    root = checkpoint_dir(out)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:06d}"
    tmp = root / f".step-{step:06d}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    torch.save(model.state_dict(), tmp / "model.pt")
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    (tmp / "state.json").write_text(json.dumps({"step": step, **state}, indent=2, default=str))
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    for old in sorted(root.glob("step-*"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest_checkpoint(out: str | os.PathLike) -> Path | None:
    found = sorted(checkpoint_dir(out).glob("step-*"))
    return found[-1] if found else None


def checkpoint_step(path: str | os.PathLike) -> int | None:
    """The step a checkpoint folder holds (from its ``state.json``; None if unreadable)."""
    try:
        return int(json.loads((Path(path) / "state.json").read_text())["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def load_checkpoint(path: str | os.PathLike, model: torch.nn.Module,
                    optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """Load model and optimizer in place; return ``state.json``."""
    path = Path(path)
    model.load_state_dict(torch.load(path / "model.pt", map_location="cpu", weights_only=True))
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", map_location="cpu", weights_only=True))
    return json.loads((path / "state.json").read_text())


class CheckpointUnreadable(MintGymError):
    """Every checkpoint of a run failed to load."""


def load_latest(out: str | os.PathLike, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                log: Callable[[str], None] = print) -> tuple[Path, dict[str, Any]] | None:
    """Load the newest checkpoint of ``out`` that loads (None: there is none). When newer ones fail (a
    truncated file, a bad ``state.json``), each is renamed ``broken-step-<N>`` (kept, out of the way of later
    saves), with a line saying why. When none loads, nothing is renamed, the model and optimizer are as they
    were, and :class:`CheckpointUnreadable` names every failure's first line."""
    failures: list[tuple[Path, str]] = []
    for path in sorted(checkpoint_dir(out).glob("step-*"), reverse=True):
        before = ({k: v.clone() for k, v in model.state_dict().items()}, optimizer.state_dict())
        try:
            state = load_checkpoint(path, model, optimizer)
            int(state["step"]), int(state["version"])  # what a resume reads: present, and numbers
        except Exception as err:  # noqa: BLE001 -- any unreadable checkpoint: try the one before
            model.load_state_dict(before[0])
            optimizer.load_state_dict(before[1])
            failures.append((path, error_line(err)))
            continue
        for bad, reason in failures:
            broken = bad.with_name(f"broken-{bad.name}")
            shutil.rmtree(broken, ignore_errors=True)
            os.replace(bad, broken)
            log(f"checkpoint {bad} does not load ({reason}); kept as {broken.name}, resuming from {path.name}")
        return path, state
    if failures:
        raise CheckpointUnreadable("no checkpoint of the run loads: "
                                   + "; ".join(f"{path} ({reason})" for path, reason in failures))
    return None
