"""Layer 7: rollout workers paired with their ``provider: ray`` env servers on one node, by Ray placement groups.

A rollout worker reaches its env servers on its node's loopback, so each worker must run on the node of every
server it plays on. A *pod* is a set of workers and the ray servers they use (server i of a domain serves worker
i mod ``rollout.workers``, :func:`server_indices`); workers that share a server share a pod (:func:`pods`). Each
pod is reserved as one Ray placement group of a single bundle holding what all its members reserve
(:func:`bundle`), so Ray puts the whole pod on one node; every worker and server is created in its pod's group,
and a replacement (a worker Ray restarts, an env server the run restarts) lands in the same group, on the same
node. Pods whose members reserve nothing at all cannot be reserved (Ray refuses an empty bundle): Ray then
places workers and servers anywhere, which pairs them only on a one-node cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mintgym.config import RunConfig
from mintgym.errors import MintGymError

#: Seconds to wait for the cluster to hold every pod.
RESERVE_TIMEOUT = 300.0


def server_indices(worker: int, workers: int, servers: int) -> list[int]:
    """The servers (of one domain's ``servers``) that worker ``worker`` of ``workers`` plays on: every index
    that is ``worker`` modulo ``workers``; with fewer servers than workers, server ``worker % servers``."""
    if not 0 <= worker < workers:
        raise ValueError(f"worker {worker} is not one of {workers} workers")
    return list(range(worker, servers, workers)) or [worker % servers]


@dataclass(frozen=True)
class Pod:
    """Workers and the env servers they play on (per domain, by index), placed on one node together."""

    workers: tuple[int, ...]
    servers: Mapping[str, tuple[int, ...]]


def pods(workers: int, servers: Mapping[str, int]) -> list[Pod]:
    """Group ``workers`` workers and the ``servers`` servers of each domain into pods: one per worker, merged
    where workers share a server; ordered by their first worker."""
    pod_of = list(range(workers))  # each worker's pod, named by a member worker

    def root(w: int) -> int:
        while pod_of[w] != w:
            w = pod_of[w]
        return w

    for count in servers.values():
        users: dict[int, list[int]] = {}
        for w in range(workers):
            for j in server_indices(w, workers, count):
                users.setdefault(j, []).append(w)
        for sharing in users.values():
            for w in sharing[1:]:
                pod_of[root(w)] = root(sharing[0])
    members: dict[int, list[int]] = {}
    for w in range(workers):
        members.setdefault(root(w), []).append(w)
    return [Pod(tuple(ws), {domain: tuple(sorted({j for w in ws for j in server_indices(w, workers, count)}))
                            for domain, count in servers.items()})
            for ws in sorted(members.values())]


def ray_domains(cfg: RunConfig) -> dict[str, int]:
    """The domains whose servers the run starts as Ray actors, and how many of each."""
    return {domain: env.servers for domain in cfg.domains
            if (env := cfg.env_for(domain)).provider == "ray" and not env.urls}


def bundle(pod: Pod, cfg: RunConfig) -> dict[str, float]:
    """What ``pod``'s workers and servers reserve together, as a Ray bundle (zero amounts left out)."""
    total: dict[str, float] = {}

    def add(resources: Mapping[str, float | None]) -> None:
        for name, amount in resources.items():
            if amount:
                total[name] = total.get(name, 0.0) + float(amount)

    ro = cfg.rollout
    for _ in pod.workers:
        add({"CPU": ro.worker_num_cpus, "GPU": ro.worker_num_gpus, **ro.worker_resources})
    for domain, indices in pod.servers.items():
        env = cfg.env_for(domain)
        for _ in indices:
            add({"CPU": env.num_cpus, "memory": env.provider_options.get("memory"), **env.resources})
    return total


class Placement:
    """The run's pods, reserved as Ray placement groups; ``release()`` frees them."""

    def __init__(self, pods: list[Pod], groups: list[Any]):
        self.pods, self.groups = pods, groups

    @classmethod
    def reserve(cls, cfg: RunConfig, log: Callable[[str], None],
                timeout: float = RESERVE_TIMEOUT) -> Placement | None:
        """Reserve a placement group per pod and wait until Ray has placed them all; None when the run starts no
        ray env servers, or when its workers and servers reserve nothing to place them by."""
        import ray
        from ray.exceptions import GetTimeoutError
        from ray.util.placement_group import placement_group

        domains = ray_domains(cfg)
        if not domains:
            return None
        run_pods = pods(cfg.rollout.workers, domains)
        bundles = [bundle(pod, cfg) for pod in run_pods]
        if not any(bundles):
            return None
        placement = cls(run_pods, [])
        try:
            for pod_bundle in bundles:
                placement.groups.append(placement_group([pod_bundle], strategy="STRICT_PACK"))
            ray.get([group.ready() for group in placement.groups], timeout=timeout)
        except GetTimeoutError:
            placement.release()
            raise MintGymError(f"Ray could not place the run's {len(bundles)} pod(s) (a rollout worker with its env "
                               f"servers, on one node each: {bundles[0]}) within {timeout:.0f}s; free now: "
                               f"{ray.available_resources()}") from None
        except BaseException:
            placement.release()
            raise
        log(f"placed {len(run_pods)} pod(s) of rollout workers with their env servers: " + "; ".join(
            f"worker(s) {', '.join(map(str, pod.workers))} on node {node[:8]}"
            for pod, node in zip(run_pods, placement.nodes(), strict=True)))
        return placement

    def nodes(self) -> list[str]:
        """The node id of each pod."""
        from ray.util.placement_group import placement_group_table

        return [placement_group_table(group)["bundles_to_node_id"][0] for group in self.groups]

    def worker_options(self, worker: int) -> dict[str, Any]:
        """Ray actor options that put ``worker`` in its pod's group."""
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        group = next(g for pod, g in zip(self.pods, self.groups, strict=True) if worker in pod.workers)
        return {"scheduling_strategy": PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=0)}

    def server_options(self, domain: str) -> list[dict[str, Any]] | None:
        """Per server of ``domain``, the ray provider's start options that put it in its pod's group (None: the
        domain's servers are not placed here)."""
        found: dict[int, Any] = {}
        for pod, group in zip(self.pods, self.groups, strict=True):
            for j in pod.servers.get(domain, ()):
                found[j] = group
        return [{"placement_group": found[j]} for j in range(len(found))] if found else None

    def release(self) -> None:
        """Remove the placement groups (and any actor still in them); safe to call twice."""
        from ray.util.placement_group import remove_placement_group

        for group in self.groups:
            try:
                remove_placement_group(group)
            except Exception:  # Ray is gone or the group is already removed: nothing is left to free
                pass
        self.groups = []
