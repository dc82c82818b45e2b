"""Layer 5: balanced cross-domain batches with a hard staleness bound.

Each domain has its own queue of groups, in arrival order. Every batch of ``n`` groups gives each domain a quota;
taking groups for a batch first drops every queued group older than ``max_lag`` versions, then takes up to each
domain's quota (or what the batch still lacks of it: a batch may be taken in parts, ``take``, and accounted once,
``close``) from its own queue, groups on the oldest weights first. A domain short of its quota leaves the gap
empty and it is counted as ``shortfall``: another domain's groups never fill it.

Quotas: one schedule of group slots carried across batches. Domain ``d`` has the share ``p_d = w_d / sum(w)``
(equal shares by default). The batches' slots form one sequence, and slot ``k`` (0-based, counted over every
batch since the schedule started) goes to the domain that is due soonest (earliest deadline first) among those
not ahead of their share: ``d`` is eligible while ``A_d < (k + 1) * p_d`` (``A_d``: slots it holds so far) and its
next slot is due by slot ``ceil((A_d + 1) / p_d) - 1``; ties go to the domain listed first. A batch's quota for
``d`` is how many of its ``n`` slots ``d`` got. So after any ``K`` slots each domain holds ``floor(K * p_d)`` or
``ceil(K * p_d)`` of them: its share of the quotas is within one group of its weight at every batch, whatever
``n`` is, and a domain with a positive weight gets a group at least once every ``ceil(1 / p_d)`` slots, even when
``n * p_d`` is below 1 (three equal domains at 8 groups a batch get 3/3/2, then 3/2/3, then 2/3/3; at 2 groups a
batch each gets 2 groups every 3 batches). Rounding each batch alone instead gives the leftover groups to the
same domains every batch, and a domain with ``n * p_d < 1`` none ever. A weight of 0 gets no slot. The schedule's
state (slots held per domain, with the weights they were scheduled by) is checkpointed with the buffer; resumed
with other weights, the schedule starts again from the resumed batch.

``schedule(n, k)`` gives the quotas of the next ``k`` batches (the open one first), so admission can tell in
which batch a group would land, and admit no group in a batch where its domain's quota is 0.

    >>> mixer = DomainMixer(["web", "pytool"])
    >>> mixer.quotas(5)
    {'web': 3, 'pytool': 2}
    >>> mixer = DomainMixer(["a", "b", "c"])
    >>> [list(q.values()) for q in mixer.schedule(2, 3)]
    [[1, 1, 0], [1, 0, 1], [0, 1, 1]]
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from mintgym.buffer.types import Batch, DomainStats, Group


class DomainMixer:
    """Per-domain queues, the quota schedule, stale drops and the cumulative per-domain accounting."""

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
        if any(not math.isfinite(w) or w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
            raise ValueError(f"domain weights must be finite and >= 0 with a positive sum, got {weights}")
        if max_lag is not None and max_lag < 0:
            raise ValueError(f"max_lag must be >= 0 or None, got {max_lag}")
        self.domains = list(domains)
        self.weights = {d: float(weights.get(d, 0.0)) for d in self.domains}
        exact = {d: Fraction(w) for d, w in self.weights.items()}
        common = math.lcm(*(x.denominator for x in exact.values()))
        #: The weights as integers in their exact ratios (the schedule's ties never hang on rounding).
        self._units = {d: int(x * common) for d, x in exact.items()}
        self._unit_sum = sum(self._units.values())
        #: Each domain's exact share of the slots.
        self.shares = {d: Fraction(u, self._unit_sum) for d, u in self._units.items()}
        self.max_lag = max_lag
        self.queues: dict[str, deque[Group]] = {d: deque() for d in self.domains}
        #: Groups dropped stale since the last batch was built (by ``ready`` or ``build``), per domain.
        self._dropped: dict[str, int] = {d: 0 for d in self.domains}
        #: Cumulative accounting per domain since the start of the run (checkpointed).
        self.totals: dict[str, DomainStats] = {d: DomainStats() for d in self.domains}
        #: Batches closed since the start of the run (checkpointed).
        self.batches = 0
        #: The schedule's state: slots each domain got in the batches closed since the schedule started.
        self.slots: dict[str, int] = {d: 0 for d in self.domains}
        #: Quotas of the batches after the closed ones, as far as planned, for batches of ``_plan_n`` groups,
        #: and the slots held at the end of that plan.
        self._plan: list[dict[str, int]] = []
        self._plan_n = 0
        self._plan_end: dict[str, int] = dict(self.slots)

    def add(self, group: Group) -> None:
        if group.domain not in self.queues:
            raise ValueError(f"group of unknown domain {group.domain!r}; the run mixes {self.domains}")
        self.queues[group.domain].append(group)

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues.values())

    # -- the quota schedule -----------------------------------------------------------------------------

    def quotas(self, n: int) -> dict[str, int]:
        """How many of the next batch's ``n`` groups each domain gets (see the module docstring)."""
        return self.schedule(n, 1)[0]

    def schedule(self, n: int, batches: int) -> list[dict[str, int]]:
        """The quotas of the next ``batches`` batches of ``n`` groups each (the next one to close first)."""
        if n < 1:
            raise ValueError(f"a batch needs at least one group, got {n}")
        if n != self._plan_n:
            self._plan, self._plan_n, self._plan_end = [], n, dict(self.slots)
        while len(self._plan) < batches:
            quota = {d: 0 for d in self.domains}
            for _ in range(n):
                d = self._next_slot(self._plan_end)
                self._plan_end[d] += 1
                quota[d] += 1
            self._plan.append(quota)
        return [dict(q) for q in self._plan[:batches]]

    def _next_slot(self, held: Mapping[str, int]) -> str:
        """The domain of the next slot, given the slots ``held`` so far: of those not ahead of their share,
        the one whose next slot is due first (ties: the one listed first)."""
        k, total = sum(held.values()), self._unit_sum  # p_d = u / total
        due = {d: -(-(held[d] + 1) * total // u) - 1 for d, u in self._units.items() if held[d] * total < (k + 1) * u}
        return min(due, key=lambda d: (due[d], self.domains.index(d)))  # some share: the shares sum to 1

    def landing(self, domain: str, ahead: int, n: int, limit: int | None = None) -> int | None:
        """In which of the next batches of ``n`` groups (0: the next one to close) the group of ``domain`` with
        ``ahead`` of its groups before it lands; None if not in the first ``limit`` (None: any) batches, or
        never (a weight of 0)."""
        if self.shares[domain] == 0:
            return None
        batch, before = 0, 0
        while limit is None or batch < limit:
            before += self.schedule(n, batch + 1)[batch][domain]
            if before > ahead:
                return batch
            batch += 1
        return None

    # -- batches ----------------------------------------------------------------------------------------

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
        (``dropped_stale`` counts every group dropped since the previous batch, by ``ready`` or ``take`` too).
        The schedule moves on to the next batch."""
        quotas = self.quotas(n)
        for d, quota in quotas.items():
            if taken.get(d, 0) > quota:
                raise ValueError(f"batch took {taken[d]} groups of {d!r}, over its quota of {quota}")
        dropped, self._dropped = self._dropped, {d: 0 for d in self.domains}
        stats: dict[str, DomainStats] = {}
        for d, quota in quotas.items():
            got = taken.get(d, 0)
            stats[d] = DomainStats(quota=quota, taken=got, dropped_stale=dropped[d], shortfall=quota - got)
            total = self.totals[d]
            total.quota += quota
            total.taken += got
            total.shortfall += quota - got
            self.slots[d] += quota
        self.batches += 1
        self._plan.pop(0)
        return stats

    def build(self, n: int, trainer_version: int) -> Batch:
        """Take a batch of up to ``n`` groups by quota at once; the unfilled part is counted, not refilled."""
        groups = self.take(self.quotas(n), trainer_version)
        taken = {d: sum(1 for g in groups if g.domain == d) for d in self.domains}
        return Batch(groups=groups, trainer_version=trainer_version, domains=self.close(n, taken))

    # -- checkpoint -------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The schedule's state (JSON-ready): batches closed, slots held per domain and the weights behind them."""
        return {"batches": self.batches, "slots": dict(self.slots), "weights": dict(self.weights)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume the schedule; with other domains or weights than it was scheduled by, it starts again here."""
        self.batches = int(state["batches"])
        weights = {d: float(w) for d, w in state["weights"].items()}
        slots = {d: int(s) for d, s in state["slots"].items()}
        same = weights == self.weights and set(slots) == set(self.domains)
        self.slots = slots if same else {d: 0 for d in self.domains}
        self._plan, self._plan_n, self._plan_end = [], 0, dict(self.slots)
