"""Layer 7: the run folder's record of its config (``<out>/config.json``): checked before anything starts, written
when a run starts, compared when it resumes.

A folder that is neither empty nor a run's (a model checkpoint given as ``--out`` by mistake) is refused
before anything is written in it. A run that has a checkpoint resumes only with the settings that define
what it trains (:data:`FIXED`: the model, the tasks, the agent, the warm start, the group size); other
settings may change on resume (more steps, another learning rate, more workers or env servers), each change
said in the log, and the record they replace kept as ``config.before-step-<N>.json``. The diff helpers are
:mod:`mintgym.run_record`'s, which keys eval and rollout folders the same way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mintgym.config import ConfigError, RunConfig
from mintgym.errors import MintGymError
from mintgym.run_record import changes, short
from mintgym.trainer.ckpt import checkpoint_step, latest_checkpoint

#: Dotted config keys (and the keys under them) a run keeps from its first start to its end.
FIXED = ("model.path", "model.build_tiny", "model.tiny_seed", "model.tiny_options", "model.dtype", "tasks",
         "agent", "warm_start", "rollout.group_size")


def is_fixed(key: str) -> bool:
    return any(key == fixed or key.startswith(f"{fixed}.") for fixed in FIXED)


def _inert(key: str, before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether ``key`` cannot change what the run trains: a warm start's settings when neither config warm-starts
    (a record of 0 warm-start steps written when ``warm_start.lr`` defaulted to 1e-3 resumes as it did)."""
    return (key.startswith("warm_start.") and not before["warm_start"].get("steps")
            and not after["warm_start"].get("steps"))


def saved_config(out: Path) -> dict[str, Any] | None:
    """The config ``out`` was run with (as its defaults fill it in today), or None when ``out`` holds no
    run's record."""
    record = out / "config.json"
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not {"model", "tasks", "train"} <= set(data):
        return None  # some other config.json (a model's)
    try:
        return RunConfig.from_dict(data).to_dict()
    except ConfigError as err:
        raise MintGymError(f"{record} no longer loads as a run config ({err}); give a new --out") from None


def open_run_folder(cfg: RunConfig, out: Path, log: Callable[[str], None] = print) -> None:
    """Check ``out`` against ``cfg`` (see the module docstring), then write ``cfg`` as its record. Raises
    :class:`MintGymError` (one line) with nothing written when ``out`` cannot take this run."""
    if out.exists() and not out.is_dir():
        raise MintGymError(f"--out {out} is a file; give a folder for the run")
    record = out / "config.json"
    saved = saved_config(out) if out.is_dir() else None
    if saved is None and out.is_dir() and any(out.iterdir()):
        raise MintGymError(f"--out {out} is not empty and holds no run's config.json; give a new or empty folder "
                           "(nothing was written there)")
    new = cfg.to_dict()
    last = latest_checkpoint(out)
    step = checkpoint_step(last) if last is not None else None
    if saved is not None and last is not None:
        diff = changes(saved, new)
        fixed = {k: v for k, v in diff.items() if is_fixed(k) and not _inert(k, saved, new)}
        if fixed:
            said = "; ".join(f"{k}: {short(a)} -> {short(b)}" for k, (a, b) in list(fixed.items())[:4])
            sections = ", ".join(sorted({k.split(".")[0] for k in fixed}))
            raise MintGymError(f"{out} was trained with other settings of {sections} ({said}): resume it with "
                               f"its config ({record}) or give a new --out")
        if diff:
            kept = out / f"config.before-step-{step if step is not None else 0:06d}.json"
            os.replace(record, kept)
            log(f"resuming with changed settings (the earlier ones kept in {kept.name}): "
                + "; ".join(f"{k}: {short(a)} -> {short(b)}" for k, (a, b) in diff.items()))
    out.mkdir(parents=True, exist_ok=True)
    tmp = record.with_name(".config.json.tmp")
    tmp.write_text(json.dumps(new, indent=2))
    os.replace(tmp, record)
