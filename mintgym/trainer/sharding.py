"""Layer 6: the learner sharded over the GPUs of a node with PyTorch FSDP2 (``fully_shard``), one process per
GPU, launched by torchrun::

    torchrun --nproc-per-node 8 --master-addr 127.0.0.1 my_trainer.py   # calls Shards.from_env()

FSDP2 rather than DeepSpeed ZeRO: it ships with PyTorch (no extra dependency, no launcher or JSON config of its
own) and shards the model the learner already holds in place: parameters become DTensors, and the learner's own
Adam, ``clip_grad_norm_``, autocast and activation checkpointing work on them unchanged, where ZeRO would take
over the optimizer and the backward through its engine. It runs on gloo and CPU too, so the 2-process test
(``tests/trainer/test_sharding.py``) runs without GPUs.

Each decoder layer and vision block (the model's ``_no_split_modules``) is one FSDP unit and the
:class:`~mintgym.inference.logprobs.ResponseScorer` around the model is the root, so its forward gathers the
embeddings and the head. Every rank receives the whole batch and trains its share of the turns
(:func:`passes`); gradients are summed over ranks (divide factor 1) and divided by the step's token count,
so a sharded step moves the weights as one process fed the whole batch.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Shards:
    """This process's place among the ranks that shard the learner."""

    rank: int
    world: int
    mesh: Any

    @classmethod
    def from_env(cls, backend: str | None = None) -> Shards:
        """Join the process group torchrun describes (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``);
        ``backend`` None: nccl with CUDA (this rank's GPU is ``LOCAL_RANK``), gloo without."""
        from torch.distributed.device_mesh import init_device_mesh

        missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
        if missing:
            raise RuntimeError(f"sharded training is launched by torchrun: {', '.join(missing)} not set")
        cuda = torch.cuda.is_available() and backend != "gloo"
        if cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        if not dist.is_initialized():
            dist.init_process_group(backend or ("nccl" if cuda else "gloo"))
        world = dist.get_world_size()
        return cls(dist.get_rank(), world, init_device_mesh("cuda" if cuda else "cpu", (world,)))


def shard(root: torch.nn.Module, model: Any, shards: Shards) -> None:
    """Shard ``model`` in place with FSDP2: one unit per repeated block, ``root`` (which holds ``model``) last;
    gradients are summed over ranks, not averaged."""
    from torch.distributed.fsdp import FSDPModule, fully_shard

    blocks = set(getattr(model, "_no_split_modules", None) or ())
    if not blocks:
        raise ValueError(f"{type(model).__name__} names no _no_split_modules to shard by")
    for module in model.modules():
        if type(module).__name__ in blocks:
            fully_shard(module, mesh=shards.mesh)
    fully_shard(root, mesh=shards.mesh)
    for module in root.modules():
        if isinstance(module, FSDPModule):
            module.set_gradient_divide_factor(1.0)
            module.set_force_sum_reduction_for_comms(True)  # a plain SUM: gloo has no PREMUL_SUM


def passes(rows: int, micro_batch: int, shards: Shards | None) -> list[list[int | None]]:
    """This rank's forward/backward passes over a step's ``rows`` turns: row indices, ``micro_batch`` per pass.
    Sharded, rank r takes rows r, r + world, ...; every rank runs the same number of passes of the same sizes
    (FSDP gathers in lockstep), so a rank short of rows fills in None (a pass whose loss counts 0)."""
    if shards is None:
        return [list(range(s, min(s + micro_batch, rows))) for s in range(0, rows, micro_batch)]
    mine = list(range(shards.rank, rows, shards.world))
    most = math.ceil(rows / shards.world)  # rank 0's share, the largest
    padded: list[int | None] = [*mine, *[None] * (most - len(mine))]
    return [padded[s:s + micro_batch] for s in range(0, most, micro_batch)]


def all_reduce(values: Sequence[float], shards: Shards | None, op: str = "sum") -> list[float]:
    """``values`` summed (or ``op`` "max") over the ranks; as they are without shards."""
    if shards is None:
        return list(values)
    device = shards.mesh.device_type
    t = torch.tensor(list(values), dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM)
    return t.tolist()


def gather(items: list[Any], shards: Shards | None) -> list[Any]:
    """Every rank's ``items``, concatenated in rank order (picklable objects; CPU tensors travel as such)."""
    if shards is None:
        return items
    parts: list[list[Any]] = [[] for _ in range(shards.world)]
    dist.all_gather_object(parts, items)
    return [item for part in parts for item in part]


def full_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The sharded ``model``'s whole state on CPU, gathered on rank 0 (other ranks get ``{}``); every rank
    must call it."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def full_optimizer_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The sharded ``optimizer``'s whole state on CPU, gathered on rank 0 (other ranks get ``{}``), keyed as one
    process's ``optimizer.state_dict()`` is (parameter indices in the order of its groups), so a checkpoint
    written by any number of ranks resumes on any number, one process included; every rank must call it."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

    named = get_optimizer_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True,
                                                                                cpu_offload=True))
    if not named:
        return {}
    index: dict[str, int] = {}
    groups = [{**group, "params": [index.setdefault(name, len(index)) for name in group["params"]]}
              for group in named["param_groups"]]
    return {"state": {index[name]: state for name, state in named["state"].items()}, "param_groups": groups}


def load_full_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer, weights: dict[str, torch.Tensor] | None,
                    optimizer_state: dict[str, Any] | None, shards: Shards) -> None:
    """Every rank: rank 0 gives the whole ``weights`` and ``optimizer_state`` (keyed as
    :func:`full_optimizer_state` writes it), the other ranks None; each rank keeps its shard of both."""
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_model_state_dict,
        set_optimizer_state_dict,
    )

    options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
    named: dict[str, Any] = {}
    if shards.rank == 0:
        if weights is None or optimizer_state is None:
            raise ValueError("rank 0 loads the whole weights and optimizer state: got None")
        names = {id(p): name for name, p in model.named_parameters()}
        order = [names[id(p)] for group in optimizer.param_groups for p in group["params"]]
        named = {"state": {order[int(i)]: dict(state) for i, state in optimizer_state["state"].items()},
                 "param_groups": [{**group, "params": [order[int(i)] for i in group["params"]]}
                                  for group in optimizer_state["param_groups"]]}
    # Both calls replace the values of the dicts they are given: hand them copies.
    set_model_state_dict(model, dict(weights) if shards.rank == 0 else {}, options=options)
    set_optimizer_state_dict(model, optimizer, named, options=options)
