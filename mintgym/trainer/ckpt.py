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

A sharded learner (:mod:`mintgym.trainer.sharding`, one process per GPU under torchrun) writes the same folder:
rank 0 gathers the whole weights and the whole optimizer state, keyed as one process keys it, and writes them;
every rank's random number generators are kept (``rng.pt`` is rank 0's, ``rng.rank<N>.pt`` rank N's) and
``state.json`` says how many ``ranks`` there were. Whole rather than sharded files: the checkpoint is a model
folder anyway, the optimizer state is read back on any number of ranks (one process included), and no second
format exists to convert; the cost is rank 0 holding the whole state in CPU memory while it writes. Loading it
sharded, rank 0 reads the files and each rank takes its shard (:func:`read_latest`, :func:`load_sharded`).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mintgym.errors import MintGymError, error_line
from mintgym.trainer.sharding import Shards, full_optimizer_state, full_state_dict, gather, load_full_state

#: The random number generators' file in a checkpoint folder (checkpoints written before it existed lack it).
RNG_FILE = "rng.pt"


def rng_file(rank: int) -> str:
    """The file of rank ``rank``'s random number generators in a checkpoint folder (rank 0's: ``rng.pt``)."""
    return RNG_FILE if rank == 0 else f"rng.rank{rank}.pt"


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
    ``torch.load(weights_only=True)`` reads back): Python's, NumPy's global one, torch's CPU one and, where this
    process uses CUDA, every CUDA device's.

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
                    state: dict[str, Any], keep: int = 2, processor: Any = None,
                    shards: Shards | None = None) -> Path | None:
    """Write ``<out>/checkpoints/step-<step>/``: the model folder (``save_pretrained``, and ``processor``'s files
    when given) and the trainer's state; keep the newest ``keep`` checkpoints. With ``shards`` every rank calls
    it: the whole state is gathered to rank 0, which writes and returns the folder; the other ranks return None."""
    weights, rngs = None, [rng_state()]
    if shards is not None:
        weights, saved_optimizer = full_state_dict(model), full_optimizer_state(model, optimizer)
        rngs = gather(rngs, shards)
        if shards.rank != 0:
            return None
        state = {**state, "ranks": shards.world}
    else:
        saved_optimizer = optimizer.state_dict()
    root = checkpoint_dir(out)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:06d}"
    tmp = root / f".step-{step:06d}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    from mintgym.models.loading import quiet_progress, save_processor

    if hasattr(model, "save_pretrained"):
        with quiet_progress():
            model.save_pretrained(tmp, **({} if weights is None else {"state_dict": weights}))
    else:
        torch.save(model.state_dict() if weights is None else weights, tmp / STATE_DICT_FILE)
    if processor is not None:
        save_processor(processor, tmp)
    torch.save(saved_optimizer, tmp / "optimizer.pt")
    for rank, rng in enumerate(rngs):
        torch.save(rng, tmp / rng_file(rank))
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
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):  # betas: a tuple, a list once broadcast
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
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
    built = _hyperparameters(optimizer)
    optimizer.load_state_dict(saved)
    return _keep_hyperparameters(optimizer, built)


def _hyperparameters(optimizer: torch.optim.Optimizer) -> list[dict[str, Any]]:
    return [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups]


def _keep_hyperparameters(optimizer: torch.optim.Optimizer, built: list[dict[str, Any]]) -> list[str]:
    """Set ``optimizer``'s hyperparameters back to ``built`` after a load; a line per one the load had changed."""
    changed: dict[str, tuple[Any, Any]] = {}  # key -> (saved, config), the first group's that differs
    for group, wanted in zip(optimizer.param_groups, built, strict=True):
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
    saved = read_checkpoint(path, model)
    model.load_state_dict(saved.weights)
    for line in load_optimizer_state(optimizer, saved.optimizer):
        log(line)
    _restore_rng(saved.path, 0, log)
    return saved.state


@dataclass
class SavedCheckpoint:
    """A checkpoint folder's files, read and checked, nothing loaded yet."""

    path: Path
    weights: dict[str, torch.Tensor]
    optimizer: dict[str, Any]
    #: ``state.json``: the step, the trainer version, the buffer's accounting.
    state: dict[str, Any]


def read_checkpoint(path: str | os.PathLike, model: torch.nn.Module) -> SavedCheckpoint:
    """Read every file of the checkpoint at ``path`` that ``model`` and its optimizer load, and check that its
    weights are ``model``'s (the same names)."""
    path = Path(path)
    weights = _saved_weights(path, model)
    saved_optimizer = torch.load(path / "optimizer.pt", map_location="cpu", weights_only=True)
    state = json.loads((path / "state.json").read_text())
    if (path / RNG_FILE).exists():
        torch.load(path / RNG_FILE, weights_only=True)
    names = set(model.state_dict())
    if set(weights) != names:
        missing, unexpected = sorted(names - set(weights)), sorted(set(weights) - names)
        raise ValueError(f"its weights are not the model's: missing {missing[:3]}, unexpected {unexpected[:3]}")
    return SavedCheckpoint(path, weights, saved_optimizer, state)


def _restore_rng(path: Path, rank: int, log: Callable[[str], None]) -> None:
    """Set this process's random number generators from rank ``rank``'s file of the checkpoint at ``path``."""
    file = path / rng_file(rank)
    if file.exists():
        set_rng_state(torch.load(file, weights_only=True), log)
    elif rank == 0:
        log(f"checkpoint {path.name} holds no random state (written before it was saved): the random number "
            "generators go on from the run's seed")


def load_sharded(path: Path, saved: SavedCheckpoint | None, model: torch.nn.Module,
                 optimizer: torch.optim.Optimizer, shards: Shards, log: Callable[[str], None] = print) -> None:
    """Load the checkpoint at ``path`` into a sharded learner; every rank calls it, rank 0 with ``saved`` (its files,
    from :func:`read_latest`), the others with None. The weights and the optimizer state go from rank 0 to every
    rank's shard (hyperparameters kept, as :func:`load_optimizer_state` keeps them); each rank sets its random number
    generators from its own file, a rank the checkpoint has none for goes on from the run's seed (said by rank 0)."""
    built = _hyperparameters(optimizer)
    load_full_state(model, optimizer, saved.weights if saved else None, saved.optimizer if saved else None, shards)
    lines = _keep_hyperparameters(optimizer, built)
    _restore_rng(path, shards.rank, log)
    if shards.rank != 0:
        return
    for line in lines:
        log(line)
    kept = sum(1 for rank in range(shards.world) if (path / rng_file(rank)).exists())
    if 0 < kept < shards.world:
        log(f"checkpoint {path.name} holds the random state of {kept} rank(s), this run has {shards.world}: "
            f"ranks {kept} to {shards.world - 1} go on from the run's seed")


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
        _set_aside(failures, path, log)
        for line in said:
            log(line)
        return path, state
    _none_loads(failures)
    return None


def read_latest(out: str | os.PathLike, model: torch.nn.Module,
                log: Callable[[str], None] = print) -> SavedCheckpoint | None:
    """The newest checkpoint of ``out`` whose files read (:func:`read_checkpoint`), nothing loaded: what rank 0 of a
    sharded learner hands :func:`load_sharded`. Newer ones that fail are set aside and :class:`CheckpointUnreadable`
    raised as :func:`load_latest` does; None: there is no checkpoint."""
    failures: list[tuple[Path, str]] = []
    for path in sorted(checkpoint_dir(out).glob("step-*"), reverse=True):
        try:
            saved = read_checkpoint(path, model)
            int(saved.state["step"]), int(saved.state["version"])  # what a resume reads: present, and numbers
        except Exception as err:  # noqa: BLE001 -- any unreadable checkpoint: try the one before
            failures.append((path, error_line(err)))
            continue
        _set_aside(failures, path, log)
        return saved
    _none_loads(failures)
    return None


def _set_aside(failures: list[tuple[Path, str]], resumed: Path, log: Callable[[str], None]) -> None:
    """Rename each checkpoint that failed to load ``broken-step-<N>``, with a line saying why."""
    for bad, reason in failures:
        broken = bad.with_name(f"broken-{bad.name}")
        shutil.rmtree(broken, ignore_errors=True)
        os.replace(bad, broken)
        log(f"checkpoint {bad} does not load ({reason}); kept as {broken.name}, resuming from {resumed.name}")


def _none_loads(failures: list[tuple[Path, str]]) -> None:
    if failures:
        raise CheckpointUnreadable("no checkpoint of the run loads: "
                                   + "; ".join(f"{path} ({reason})" for path, reason in failures))
