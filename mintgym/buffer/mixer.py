"""Layer 5: balanced cross-domain batches with a hard staleness bound.

Each domain has its own queue of groups, in arrival order. A batch of ``n`` groups gives every domain a quota
(equal shares by default, or proportional to ``weights``; remainders go to the largest fractional
parts, ties in domain order). Taking groups for a batch first drops every queued group older than
``max_lag`` versions, then takes up to each domain's quota (or what the batch still lacks of it: a batch
may be taken in parts, ``take``, and accounted once, ``close``) from its own queue, groups on the oldest
weights first. A domain short of its
quota leaves the gap empty and it is counted as ``shortfall``: another domain's groups never fill it.

    >>> mixer = DomainMixer(["web", "pytool"])
    >>> mixer.quotas(5)
    {'web': 3, 'pytool': 2}
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

from mintgym.buffer.types import Batch, DomainStats, Group


class DomainMixer:
    """Per-domain queues, quotas, stale drops and the cumulative per-domain accounting."""

    def __init__(self, domains: Sequence[str], weights: Mapping[str, float] | None = None,
                 max_lag: int | None = None):
        if not domains:
            raise ValueError("the mixer needs at least one domain")
        if len(set(domains)) != len(domains):
            raise ValueError(f"duplicate domains in {list(domains)}")
        weights = dict(weights) if weights else {d: 1.0 for d in domains}
        unknown = set(weights) - set(domains)
        if unknown:
            raise ValueError(f"weights name domains {sorted(unknown)} not in {list(domains)}")
        if any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
            raise ValueError(f"domain weights must be >= 0 with a positive sum, got {weights}")
        if max_lag is not None and max_lag < 0:
            raise ValueError(f"max_lag must be >= 0 or None, got {max_lag}")
        self.domains = list(domains)
        self.weights = {d: float(weights.get(d, 0.0)) for d in self.domains}
        self.max_lag = max_lag
        self.queues: dict[str, deque[Group]] = {d: deque() for d in self.domains}
        #: Groups dropped stale since the last batch was built (by ``ready`` or ``build``), per domain.
        self._dropped: dict[str, int] = {d: 0 for d in self.domains}
        #: Cumulative accounting per domain since the start of the run (checkpointed).
        self.totals: dict[str, DomainStats] = {d: DomainStats() for d in self.domains}

    def add(self, group: Group) -> None:
        if group.domain not in self.queues:
            raise ValueError(f"group of unknown domain {group.domain!r}; the run mixes {self.domains}")
        self.queues[group.domain].append(group)

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def quotas(self, n: int) -> dict[str, int]:
        """How many of ``n`` groups each domain gets."""
        if n < 1:
            raise ValueError(f"a batch needs at least one group, got {n}")
        total = sum(self.weights.values())
        exact = {d: n * w / total for d, w in self.weights.items()}
        quota = {d: int(x) for d, x in exact.items()}
        left = n - sum(quota.values())
        order = sorted(self.domains, key=lambda d: (-(exact[d] - quota[d]), self.domains.index(d)))
        for d in order[:left]:
            quota[d] += 1
        return quota

    def drop_stale(self, trainer_version: int) -> dict[str, int]:
        """Remove (and count) queued groups more than ``max_lag`` versions behind ``trainer_version``."""
        dropped = {d: 0 for d in self.domains}
        if self.max_lag is None:
            return dropped
        for d, queue in self.queues.items():
            kept = deque(g for g in queue if g.lag(trainer_version) <= self.max_lag)
            dropped[d] = len(queue) - len(kept)
            self.queues[d] = kept
            self.totals[d].dropped_stale += dropped[d]
            self._dropped[d] += dropped[d]
        return dropped

    def ready(self, n: int, trainer_version: int) -> bool:
        """Whether every domain's quota could be filled now (after the stale drop)."""
        self.drop_stale(trainer_version)
        return all(len(self.queues[d]) >= q for d, q in self.quotas(n).items())

    def take(self, wanted: Mapping[str, int], trainer_version: int) -> list[Group]:
        """Pop up to ``wanted[d]`` of each domain's groups within ``max_lag`` (stale ones dropped first), those
        sampled on the oldest weights first (the next version may drop them), in arrival order among equals."""
        self.drop_stale(trainer_version)
        groups: list[Group] = []
        for d, k in wanted.items():
            queue = list(self.queues[d])
            order = sorted(range(len(queue)), key=lambda i: (queue[i].policy_version, i))
            chosen = set(order[:max(k, 0)])
            groups += [queue[i] for i in sorted(chosen)]
            self.queues[d] = deque(g for i, g in enumerate(queue) if i not in chosen)
        return groups

    def close(self, n: int, taken: Mapping[str, int]) -> dict[str, DomainStats]:
        """Account a finished batch of ``n`` groups that took ``taken[d]`` of each domain: its per-domain stats
        (``dropped_stale`` counts every group dropped since the previous batch, by ``ready`` or ``take`` too)."""
        dropped, self._dropped = self._dropped, {d: 0 for d in self.domains}
        stats: dict[str, DomainStats] = {}
        for d, quota in self.quotas(n).items():
            got = taken.get(d, 0)
            if got > quota:
                raise ValueError(f"batch took {got} groups of {d!r}, over its quota of {quota}")
            stats[d] = DomainStats(quota=quota, taken=got, dropped_stale=dropped[d], shortfall=quota - got)
            total = self.totals[d]
            total.quota += quota
            total.taken += got
            total.shortfall += quota - got
        return stats

    def build(self, n: int, trainer_version: int) -> Batch:
        """Take a batch of up to ``n`` groups by quota at once; the unfilled part is counted, not refilled."""
        groups = self.take(self.quotas(n), trainer_version)
        taken = {d: sum(1 for g in groups if g.domain == d) for d in self.domains}
        return Batch(groups=groups, trainer_version=trainer_version, domains=self.close(n, taken))
