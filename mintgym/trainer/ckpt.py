"""Layer 6: checkpoints: ``<out>/checkpoints/step-<N>/`` is a Hugging Face model folder (the model's
``save_pretrained`` files, its processor and chat template) beside the trainer's own state (the optimizer, the
random number generators and the run state), so ``--engine hf --model``, ``--engine vllm --model``,
``mintgym serve-model`` and ``vllm serve`` load it as they load any checkpoint, and a run resumes from it.

The weights are the trainer's master weights (float32 under ``train.precision: mixed``), so a resume is exact;
a model that is not a transformers model (a test's ``torch.nn.Linear``) is saved as ``model.pt``, as every
checkpoint was before (such checkpoints still resume). :func:`policy_folder` finds the model folder of a run.

``state.json`` holds the step, the trainer version and the buffer's accounting, so a resumed run
continues the same step count and counters. ``rng.pt`` holds the trainer process's random number generators
(Python's, NumPy's global one, torch's CPU one and each CUDA device's), so a resumed learner draws what an
uninterrupted one would have drawn (dropout masks included) and, given the same batches, trains to the same
weights bit for bit. The optimizer's state (Adam's moments and step counts) comes from the checkpoint, its
hyperparameters (the learning rate) from the config it was built with: a resume may change the learning rate,
and says so. A checkpoint is written to a temporary folder and renamed, so a run killed while saving leaves the
previous one intact.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mintgym.errors import MintGymError, error_line

#: The random number generators' file in a checkpoint folder (checkpoints written before it existed lack it).
RNG_FILE = "rng.pt"


def checkpoint_dir(out: str | os.PathLike) -> Path:
    return Path(out) / "checkpoints"


def seed_all(seed: int) -> None:
    """Seed every random number generator a checkpoint keeps (Python's, NumPy's global one, torch's CPU and CUDA
    ones), as a run does when its process starts."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # every CUDA device's too


def rng_state() -> dict[str, Any]:
    """The process's random number generators, as plain lists, numbers and tensors (what
    ``torch.load(weights_only=True)`` reads back): Python's, NumPy's global one, torch's CPU one and, where this process uses
    CUDA, every CUDA device's.

    Example:
        >>> state = rng_state()
        >>> first = (random.random(), float(np.random.rand()), float(torch.rand(1)))
        >>> set_rng_state(state)
        >>> (random.random(), float(np.random.rand()), float(torch.rand(1))) == first
        True
    """
    version, internal, gauss_next = random.getstate()
    numpy = np.random.get_state(legacy=False)
    return {
        "python": {"version": version, "internal": list(internal), "gauss_next": gauss_next},
        "numpy": {"bit_generator": numpy["bit_generator"],
                  "key": torch.from_numpy(numpy["state"]["key"].astype(np.int64)), "pos": int(numpy["state"]["pos"]),
                  "has_gauss": int(numpy["has_gauss"]), "gauss": float(numpy["gauss"])},
        "torch": torch.get_rng_state(),
        # A process that never used CUDA is not made to start it (its generators are still as seeded).
        "cuda": list(torch.cuda.get_rng_state_all()) if torch.cuda.is_available() and torch.cuda.is_initialized()
        else [],
    }


def set_rng_state(state: dict[str, Any], log: Callable[[str], None] = print) -> None:
    """Set the process's random number generators to ``state`` (from :func:`rng_state`). CUDA devices are set
    pairwise; when the saved and the present device counts differ, a line says which went on unrestored."""
    py = state["python"]
    random.setstate((int(py["version"]), tuple(int(x) for x in py["internal"]), py["gauss_next"]))
    numpy = state["numpy"]
    np.random.set_state((numpy["bit_generator"], numpy["key"].numpy().astype(np.uint32), int(numpy["pos"]),
                         int(numpy["has_gauss"]), float(numpy["gauss"])))
    torch.set_rng_state(state["torch"])
    saved = list(state.get("cuda") or [])
    here = torch.cuda.device_count() if torch.cuda.is_available() else 0
    for device in range(min(len(saved), here)):
        torch.cuda.set_rng_state(saved[device], device)
    if saved and len(saved) != here:
        log(f"the checkpoint holds the CUDA random state of {len(saved)} device(s), this process has {here}: "
            f"restored {min(len(saved), here)}, the others go on from the run's seed")


#: The file a checkpoint of a model that is not a transformers model keeps its weights in.
STATE_DICT_FILE = "model.pt"


def save_checkpoint(out: str | os.PathLike, step: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    state: dict[str, Any], keep: int = 2, processor: Any = None) -> Path:
    """Write ``<out>/checkpoints/step-<step>/``: the model folder (``save_pretrained``, and ``processor``'s files
    when given) and the trainer's state; keep the newest ``keep`` checkpoints."""
    root = checkpoint_dir(out)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:06d}"
    tmp = root / f".step-{step:06d}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    from mintgym.models.loading import quiet_progress, save_processor

    if hasattr(model, "save_pretrained"):
        with quiet_progress():
            model.save_pretrained(tmp)
    else:
        torch.save(model.state_dict(), tmp / STATE_DICT_FILE)
    if processor is not None:
        save_processor(processor, tmp)
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    torch.save(rng_state(), tmp / RNG_FILE)
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


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return torch.equal(torch.as_tensor(a), torch.as_tensor(b))
    return a == b


def load_optimizer_state(optimizer: torch.optim.Optimizer, saved: dict[str, Any]) -> list[str]:
    """Load ``saved`` (an optimizer's ``state_dict``) into ``optimizer``: its state (moments, step counts) from
    ``saved``, its hyperparameters (``lr``, betas, ...) as ``optimizer`` was built, from today's config. Returns a
    line per hyperparameter whose saved value differs (``optimizer.load_state_dict`` alone would bring the saved
    one back and silently train on it).

    Example:
        >>> w = torch.nn.Parameter(torch.ones(1))
        >>> saved = torch.optim.Adam([w], lr=1e-5).state_dict()
        >>> resumed = torch.optim.Adam([w], lr=1e-6)
        >>> print(*load_optimizer_state(resumed, saved))
        optimizer lr changed on resume from 1e-05 to 1e-06 (the config's; moments and step counts are the checkpoint's)
        >>> resumed.param_groups[0]["lr"]
        1e-06
    """
    built = [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups]
    optimizer.load_state_dict(saved)
    changed: dict[str, tuple[Any, Any]] = {}  # key -> (saved, config), the first group's that differs
    for group, wanted in zip(optimizer.param_groups, built):
        for key, value in wanted.items():
            if key in group and not _same(group[key], value):
                changed.setdefault(key, (group[key], value))
            group[key] = value
    return [f"optimizer {key} changed on resume from {_number(saved)} to {_number(value)} (the config's; moments "
            "and step counts are the checkpoint's)" for key, (saved, value) in changed.items()]


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def load_checkpoint(path: str | os.PathLike, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    log: Callable[[str], None] = print) -> dict[str, Any]:
    """Load model, optimizer (hyperparameters kept: see :func:`load_optimizer_state`) and the random number
    generators in place; return ``state.json``. Every file is read before anything is changed; what changed
    against the config, and a checkpoint without random state (one written before it was saved), is said
    through ``log``."""
    path = Path(path)
    weights = _saved_weights(path, model)
    saved_optimizer = torch.load(path / "optimizer.pt", map_location="cpu", weights_only=True)
    rng = torch.load(path / RNG_FILE, weights_only=True) if (path / RNG_FILE).exists() else None
    state = json.loads((path / "state.json").read_text())
    model.load_state_dict(weights)
    for line in load_optimizer_state(optimizer, saved_optimizer):
        log(line)
    if rng is None:
        log(f"checkpoint {path.name} holds no random state (written before it was saved): the random number "
            "generators go on from the run's seed")
    else:
        set_rng_state(rng, log)
    return state


def _saved_weights(path: Path, model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The checkpoint's weights as ``model``'s state dict: ``model.pt`` where there is one, otherwise read back by
    the model class's own ``from_pretrained`` (which undoes what ``save_pretrained`` renamed and tied), in the
    dtype the model holds."""
    if (path / STATE_DICT_FILE).exists():
        return torch.load(path / STATE_DICT_FILE, map_location="cpu", weights_only=True)
    if not hasattr(type(model), "from_pretrained"):
        raise FileNotFoundError(f"{path} holds no {STATE_DICT_FILE} and the model is not a transformers model")
    from mintgym.models.loading import quiet_progress

    with quiet_progress():
        loaded = type(model).from_pretrained(path, dtype=next(model.parameters()).dtype)
    return loaded.state_dict()


class NoPolicy(MintGymError):
    """A path that names no model folder of a run."""


def policy_folder(path: str | os.PathLike, step: int | None = None) -> Path:
    """The model folder ``path`` names: a run folder's newest checkpoint (or its ``step``), a checkpoint folder
    itself, or any other model folder as given. :class:`NoPolicy` (one line) when a run folder has no such
    checkpoint, or a checkpoint predates model folders.

    Example:
        >>> policy_folder("runs/see")  # doctest: +SKIP
        PosixPath('runs/see/checkpoints/step-000030')
    """
    path = Path(path).expanduser()
    if checkpoint_dir(path).is_dir():
        folders = sorted(checkpoint_dir(path).glob("step-*"))  # step-<N> with N zero-padded: oldest first
        if step is not None:
            found = {checkpoint_step(p): p for p in folders}
            if step not in found:
                have = ", ".join(str(s) for s in sorted(s for s in found if s is not None)) or "none"
                raise NoPolicy(f"{path} has no checkpoint of step {step} (it has: {have})")
            folder = found[step]
        elif not folders:
            raise NoPolicy(f"{path} is a run folder with no checkpoint yet")
        else:
            folder = folders[-1]
    elif step is not None:
        raise NoPolicy(f"--step is for a run folder (one holding checkpoints/), and {path} is not one")
    else:
        folder = path
    if (folder / STATE_DICT_FILE).exists() and not (folder / "config.json").exists():
        raise NoPolicy(f"{folder} was written before checkpoints were model folders ({STATE_DICT_FILE} only); "
                       "train on from it once (the next checkpoint is a model folder) or re-run")
    return folder


class CheckpointUnreadable(MintGymError):
    """Every checkpoint of a run failed to load."""


def load_latest(out: str | os.PathLike, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                log: Callable[[str], None] = print) -> tuple[Path, dict[str, Any]] | None:
    """Load the newest checkpoint of ``out`` that loads (None: there is none), as :func:`load_checkpoint` does.
    When newer ones fail (a truncated file, a bad ``state.json``), each is renamed ``broken-step-<N>`` (kept, out
    of the way of later saves), with a line saying why. When none loads, nothing is renamed, the model, optimizer
    and random number generators are as they were, and :class:`CheckpointUnreadable` names every failure's
    first line."""
    failures: list[tuple[Path, str]] = []
    for path in sorted(checkpoint_dir(out).glob("step-*"), reverse=True):
        before = ({k: v.clone() for k, v in model.state_dict().items()}, optimizer.state_dict(), rng_state())
        said: list[str] = []  # said once this checkpoint is the one resumed
        try:
            state = load_checkpoint(path, model, optimizer, said.append)
            int(state["step"]), int(state["version"])  # what a resume reads: present, and numbers
        except Exception as err:  # noqa: BLE001 -- any unreadable checkpoint: try the one before
            model.load_state_dict(before[0])
            optimizer.load_state_dict(before[1])
            set_rng_state(before[2])
            failures.append((path, error_line(err)))
            continue
        for bad, reason in failures:
            broken = bad.with_name(f"broken-{bad.name}")
            shutil.rmtree(broken, ignore_errors=True)
            os.replace(bad, broken)
            log(f"checkpoint {bad} does not load ({reason}); kept as {broken.name}, resuming from {path.name}")
        for line in said:
            log(line)
        return path, state
    if failures:
        raise CheckpointUnreadable("no checkpoint of the run loads: "
                                   + "; ".join(f"{path} ({reason})" for path, reason in failures))
    return None
