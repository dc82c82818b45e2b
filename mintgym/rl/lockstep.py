"""Layer 7: ``mintgym train`` under torchrun: rank 0 runs the run, the other ranks hold their shards of the
learner and follow rank 0's learner calls in lockstep.

    torchrun --nproc-per-node 4 -m mintgym.cli train --config RUN.yaml --out OUT

Rank 0 runs the whole run as one process does (Ray, env servers, rollout workers, buffer, logging, checkpoints,
weight publishing, final eval). Its learner is a :class:`LockstepLearner`: each call that runs the sharded model
(a step's ``begin``, ``add`` and ``finish``, ``state_dict``, ``restored``, a checkpoint's save and load, the warm
start's supervised steps) is first sent to every other rank, which runs it on its shard (:func:`follow`), so the
collectives inside FSDP line up. Rank 0 fetches a batch's images before sending it (the other ranks have no Ray)
and reads a checkpoint's files before sending the load. The calls travel over a gloo group of their own with a
long timeout (:data:`FOLLOW_TIMEOUT`: the other ranks wait there while rank 0 plays, evaluates or starts env
servers); FSDP's collectives use the default group (nccl on GPUs).

A rank that fails ends the run: torchrun stops the others (rank 0 then stops its workers and env servers as at
Ctrl-C). A launch that cannot work is one line before anything starts (:func:`join`): ranks over several nodes,
ranks given different configs or run folders, ``train.mismatch_snapshots``, a ``model.device`` naming one GPU,
more ranks than GPUs. Without torchrun a :class:`LockstepLearner` has no ranks and calls its learner directly.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from mintgym.buffer.types import Batch, Group
from mintgym.config import RunConfig
from mintgym.errors import MintGymError
from mintgym.rl.warm_start import supervised_warm_start, warm_start
from mintgym.trainer.ckpt import load_latest, load_sharded, read_latest, save_checkpoint, seed_all
from mintgym.trainer.learner import ImageLost, Learner
from mintgym.trainer.sharding import Shards

#: How long a rank waits for rank 0's next call (rank 0 may be starting env servers, playing a sync batch or
#: running the final eval meanwhile). A rank 0 that dies does not leave the others waiting: torchrun stops them.
FOLLOW_TIMEOUT = timedelta(days=7)

#: What torchrun tells each rank. Once the ranks have joined they are taken out of the environment, so that what
#: rank 0 starts (Ray, env servers, a vLLM engine, itself a torch.distributed user) does not take itself for a rank.
TORCHRUN_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
                      "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT",
                      "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
                      "TORCHELASTIC_USE_AGENT_STORE")


def launched() -> bool:
    """This process is one of the ranks torchrun started."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


@dataclass
class Ranks:
    """The ranks of one run, as this process sees them: its shard of the learner and the group rank 0's calls
    travel over."""

    shards: Shards
    calls: Any

    @property
    def leader(self) -> bool:
        return self.shards.rank == 0

    def send(self, name: str, args: tuple[Any, ...]) -> None:
        dist.broadcast_object_list([(name, args)], src=0, group=self.calls)

    def receive(self) -> tuple[str, tuple[Any, ...]]:
        box: list[Any] = [None]
        dist.broadcast_object_list(box, src=0, group=self.calls)
        return box[0]

    def stop(self) -> None:
        """Rank 0, once the run ended well: the other ranks leave :func:`follow`; every rank leaves the group."""
        self.send("stop", ())
        dist.destroy_process_group()


def join(cfg: RunConfig, out: Path) -> Ranks:
    """Join the ranks torchrun started and check that every rank runs the same config into the same folder.
    A launch that cannot work is a MintGymError (one line, said by rank 0; the other ranks exit quietly with
    status 0, so that torchrun waits for rank 0 to say it)."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    if local_world != world:
        _refuse(rank, f"mintgym train shards the learner over the GPUs of one node: torchrun started {world} ranks, "
                      f"{local_world} on this node; launch it with --nnodes 1 (rollouts scale out over Ray)")
    if cfg.train.mismatch_snapshots:
        _refuse(rank, "train.mismatch_snapshots needs a whole model to score lagged turns with: set it to 0 under "
                      "torchrun (the learner is sharded)")
    device = cfg.model.device
    if device.startswith("cuda:"):
        _refuse(rank, f"model.device {device} under torchrun: each rank trains on its own GPU (LOCAL_RANK); set "
                      "model.device: cuda")
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if device == "cuda" and local_rank >= torch.cuda.device_count():
        raise MintGymError(f"rank {rank} would train on GPU {local_rank}, and {torch.cuda.device_count()} are "
                           "visible: --nproc-per-node at most the node's GPUs")
    shards = Shards.from_env(backend="gloo" if device == "cpu" else None)
    ranks = Ranks(shards, dist.new_group(backend="gloo", timeout=FOLLOW_TIMEOUT))
    for name in TORCHRUN_VARIABLES:
        os.environ.pop(name, None)
    runs: list[Any] = [None] * world
    dist.all_gather_object(runs, {"--out": str(Path(out).resolve()), **_dotted(cfg.to_dict())}, group=ranks.calls)
    for other, run in enumerate(runs):
        differ = sorted(k for k in run.keys() | runs[0].keys() if run.get(k) != runs[0].get(k))
        if differ:
            dist.destroy_process_group()  # a process leaving with its gloo threads alive aborts
            _refuse(rank, f"rank {other} was given another run than rank 0 (it differs in {', '.join(differ[:4])}): "
                          "launch every rank with the same --config, overrides and --out")
    return ranks


def _refuse(rank: int, message: str) -> None:
    if rank == 0:
        raise MintGymError(message)
    raise SystemExit(0)  # rank 0 says it, once; status 0, so torchrun waits for rank 0 rather than stopping it


def _dotted(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            flat.update(_dotted(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def build_learner(cfg: RunConfig, model_path: str, shards: Shards | None) -> Learner:
    """The run's learner on ``model_path`` (sharded with ``shards``)."""
    from mintgym.models.loading import load_model, load_processor

    dtype = getattr(torch, cfg.model.dtype) if cfg.model.dtype else None
    return Learner(load_model(model_path, dtype=dtype, device=cfg.model.device), load_processor(model_path),
                   cfg.train, shards=shards)


# -- the calls every rank runs: (learner, log, *what rank 0 sent), rank 0 with its own extras ------------------

def _save(learner: Learner, log: Callable[[str], None], out: Path, step: int, state: dict[str, Any] | None = None,
          processor: Any = None) -> Path | None:
    return save_checkpoint(out, step, learner.model, learner.optimizer, state or {}, processor=processor,
                           shards=learner.shards)


def _load(learner: Learner, log: Callable[[str], None], path: Path, saved: Any = None) -> None:
    load_sharded(path, saved, learner.model, learner.optimizer, learner.shards, log)


def _supervised(learner: Learner, log: Callable[[str], None], cfg: RunConfig, path: Path) -> dict[str, Any]:
    return supervised_warm_start(cfg, learner.model, learner.processor, path, log, root=learner.scorer,
                                 shards=learner.shards)


CALLS: dict[str, Callable[..., Any]] = {
    "begin": lambda learner, log: learner.begin(),
    "add": lambda learner, log, groups: learner.add(groups),
    "finish": lambda learner, log, batch, lr=None: learner.finish(batch, lr),
    "state_dict": lambda learner, log: learner.state_dict(),
    "restored": lambda learner, log, version: learner.restored(version),
    "save": _save,
    "load": _load,
    "supervised": _supervised,
}


class LockstepLearner:
    """Rank 0's learner (the only one without torchrun): each call that runs the model is sent to the other
    ranks first, which run it on their shards."""

    def __init__(self, learner: Learner, ranks: Ranks | None = None):
        self.learner, self.ranks = learner, ranks
        #: Groups of the open step left out on rank 0 because an image was lost before they could be sent.
        self._images_lost = 0

    @classmethod
    def build(cls, cfg: RunConfig, model_path: str, ranks: Ranks | None) -> LockstepLearner:
        if ranks is not None:
            ranks.send("build", (model_path,))
        return cls(build_learner(cfg, model_path, ranks.shards if ranks else None), ranks)

    @property
    def version(self) -> int:
        return self.learner.version

    @property
    def model(self) -> Any:
        return self.learner.model

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.learner.optimizer

    @property
    def processor(self) -> Any:
        return self.learner.processor

    def _call(self, name: str, *args: Any, log: Callable[[str], None] = print, **extras: Any) -> Any:
        if self.ranks is not None:
            self.ranks.send(name, args)
        return CALLS[name](self.learner, log, *args, **extras)

    def begin(self) -> None:
        self._images_lost = 0
        self._call("begin")

    def add(self, groups: list[Group]) -> list[Group]:
        """:meth:`Learner.add`; sharded, the groups go out with their images fetched (a group whose image is lost
        stays here and is counted in the step's ``groups/images_lost``)."""
        if self.ranks is not None:
            groups = self._fetched(groups)
        return self._call("add", groups)

    def _fetched(self, groups: list[Group]) -> list[Group]:
        kept = []
        for group in groups:
            try:
                for sample in group.samples:
                    for turn in sample.turns:
                        turn.images = [self.learner.resolve_image(image) for image in turn.images]
            except ImageLost:
                self._images_lost += 1
                continue
            kept.append(group)
        return kept

    def finish(self, batch: Batch, lr: float | None = None) -> dict[str, float]:
        # finish() reads the batch's accounting only: its groups are the ones add() was given
        metrics = self._call("finish", Batch([], batch.trainer_version, batch.domains), lr)
        metrics["groups/images_lost"] = metrics.get("groups/images_lost", 0.0) + self._images_lost
        return metrics

    def state_dict(self) -> dict[str, torch.Tensor]:
        return self._call("state_dict")

    def restored(self, version: int) -> None:
        self._call("restored", version)

    def checkpoint(self, out: Path, step: int, state: dict[str, Any]) -> Path:
        """Write ``out``'s checkpoint of ``step`` (:func:`~mintgym.trainer.ckpt.save_checkpoint`)."""
        return self._call("save", out, step, state=state, processor=self.processor)

    def load_latest(self, out: Path, log: Callable[[str], None]) -> tuple[Path, dict[str, Any]] | None:
        """Resume from ``out``'s newest checkpoint that loads (:func:`~mintgym.trainer.ckpt.load_latest`); sharded,
        rank 0 reads its files first, then every rank takes its shard."""
        if self.ranks is None:
            return load_latest(out, self.model, self.optimizer, log)
        saved = read_latest(out, self.model, log)
        if saved is None:
            return None
        self._call("load", saved.path, saved=saved, log=log)
        return saved.path, saved.state

    def warm_start(self, cfg: RunConfig, env_urls: dict[str, list[str]], out: Path,
                   log: Callable[[str], None]) -> dict[str, Any] | None:
        """The run's warm start (:func:`~mintgym.rl.warm_start.warm_start`): the oracle's episodes and the dataset
        on rank 0, the supervised steps on every rank."""
        train = None if self.ranks is None else (lambda path: self._call("supervised", cfg, path, log=log))
        return warm_start(cfg, self.model, self.processor, env_urls, out, log, train=train)


def follow(cfg: RunConfig, ranks: Ranks) -> None:
    """Ranks 1 to N-1: build the learner's shard when rank 0 does, then run each call rank 0 sends, until it
    says stop. Rank 0 says what every rank does: the lines these calls would log are its lines too."""
    seed_all(cfg.train.seed)  # as rank 0's run does
    torch.set_num_threads(cfg.rollout.torch_threads)
    learner: Learner | None = None
    while True:
        name, args = ranks.receive()
        if name == "stop":
            break
        if name == "build":
            learner = build_learner(cfg, *args, ranks.shards)
            continue
        CALLS[name](learner, lambda line: None, *args)
    dist.destroy_process_group()
