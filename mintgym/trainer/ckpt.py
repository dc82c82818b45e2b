"""Layer 6: checkpoints: ``<out>/checkpoints/step-<N>/`` with the model, optimizer and run state.

``state.json`` holds the step, the trainer version and the buffer's accounting, so a resumed run
continues the same step count and counters. A checkpoint is written to a temporary folder and renamed,
so a run killed while saving leaves the previous one intact.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch


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
