"""The trajectory buffer: the lag bound at consumption, admission that stragglers do not hold back, the
counts (every admitted group and every pushed group accounted for exactly once) and checkpoint resume."""

import asyncio
import itertools
import random
import time

import pytest

from mintgym.buffer.mixer import DomainMixer
from mintgym.buffer.store import TrajectoryBuffer
from mintgym.buffer.types import Group, Sample, Turn


def group(domain: str, version: int = 0, reservation=None) -> Group:
    turn = Turn([1, 2], [3], [-0.5], version)
    return Group(f"{domain}-{random.random()}", f"{domain}/t", domain, 0,
                 [Sample(f"{domain}/t", domain, 0, r, [turn]) for r in (0.0, 1.0)], reservation=reservation)


def check_accounting(buf: TrajectoryBuffer, pushed_without_reservation: int = 0) -> tuple[int, int]:
    """Each admitted group is pushed, lost or still reserved, each pushed one consumed, dropped or queued,
    except what was reserved or queued at a checkpoint this buffer resumed from (``lost_on_resume``).
    Returns those two parts: (reserved, queued) at the checkpoint."""
    stats = buf.stats()
    c, queued, reserved = stats["counts"], sum(stats["queued"].values()), stats["reserved"]
    reserved_at_resume = c["admitted"] - (c["pushed"] - pushed_without_reservation) - c["lost"] - reserved
    queued_at_resume = c["pushed"] - c["consumed"] - c["dropped_stale"] - queued
    assert reserved_at_resume >= 0 and queued_at_resume >= 0
    assert reserved_at_resume + queued_at_resume == c["lost_on_resume"]
    assert c["dropped_stale"] == sum(t.dropped_stale for t in buf.mixer.totals.values())
    assert sum(stats["consumed_lags"].values()) == c["consumed"]
    return reserved_at_resume, queued_at_resume


async def play(buf: TrajectoryBuffer, *, steps: int, slots: int, seed: int, domains=("a", "b"),
               stream: bool = False) -> list[int]:
    """Drive ``buf`` the way a run does, in ticks: ``slots`` rollout slots each admit (with the newest published
    weights), play a group for a random 1-12 ticks (now and then a straggler of 40) and push it (or release it, 1 in
    20), cycling through the domains (a denied slot asks again for the same domain); the trainer takes a batch when
    every quota can be filled (a short one after waiting 30 ticks, as ``batch_timeout`` does), trains 3 ticks and
    publishes. With ``stream`` the trainer ``take``s each tick what its batch lacks, as a run does, and closes the
    batch when it is full (or after 30 ticks). Returns the lag of every consumed group."""
    rng = random.Random(seed)
    n = buf.groups_per_step
    version, training_until = buf.trainer_version, None
    in_flight: list[tuple[int, int, int, str]] = []  # (done tick, reservation, version, domain)
    lags: list[int] = []
    tick, trained, waiting_since = 0, 0, 0
    cycle = itertools.cycle(domains)
    waiting = next(cycle)  # the domain of the group the next free slot asks admission for
    while trained < steps:
        tick += 1
        if tick > 100_000:
            raise AssertionError("the loop made no progress")
        for done, reservation, v, d in [f for f in in_flight if f[0] <= tick]:
            in_flight.remove((done, reservation, v, d))
            if rng.random() < 0.05:
                buf.release(reservation)
            else:
                assert buf.push(group(d, v, reservation))
        while len(in_flight) < slots:
            reservation = await buf.admit(0, version, waiting)
            if reservation is None:
                break
            duration = 40 if rng.random() < 0.1 else rng.randint(1, 12)
            in_flight.append((tick + duration, reservation, version, waiting))
            waiting = next(cycle)
        if training_until is not None and tick >= training_until:
            training_until, trained, version, waiting_since = None, trained + 1, version + 1, tick
            buf.set_trainer_version(version)
        if training_until is None and stream:
            taken, lacking = await buf.take(n, version, wait=0)
            lags += [g.lag(version) for g in taken]
            if lacking == 0 or tick - waiting_since > 30:
                stats = buf.close_batch(n, version)
                assert sum(s.taken for s in stats.values()) == n - lacking
                training_until = tick + 3
        elif training_until is None and (buf.mixer.ready(n, version) or tick - waiting_since > 30):
            batch = await buf.get_batch(n, version, timeout=0)
            lags += [g.lag(version) for g in batch.groups]
            training_until = tick + 3
    return lags


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("max_lag", [0, 1, 2, 4])
async def test_no_group_is_consumed_beyond_max_lag_and_every_group_is_counted(max_lag, stream):
    buf = TrajectoryBuffer(["a", "b"], groups_per_step=4, max_lag=max_lag, admission_hold=0)
    lags = await play(buf, steps=40, slots=8, seed=max_lag, stream=stream)
    assert len(lags) >= 120 and max(lags) <= max_lag
    assert buf.stats()["consumed_lags"] == {lag: lags.count(lag) for lag in sorted(set(lags))}
    assert check_accounting(buf) == (0, 0)
    if max_lag <= 1:
        assert buf.stats()["counts"]["dropped_stale"] > 0  # stragglers were played, then dropped at consumption


async def test_groups_at_their_last_chance_fill_the_open_batch_and_fresh_ones_the_next():
    """At lag 1 the version-0 groups still in flight when version 1 trains are that batch's (the next drops
    them): admission counts them ahead of fresh groups, which go to version 2. Leaving them out admitted
    fresh groups for their places that then arrived after them and were dropped: work played for nothing
    on a box whose cores were full."""
    buf = TrajectoryBuffer(["a"], groups_per_step=2, max_lag=1, admission_hold=0)
    stragglers = [await buf.admit(0, 0) for _ in range(4)]
    assert None not in stragglers
    for _ in range(2):
        buf.push(group("a", 0, stragglers.pop()))
    await buf.get_batch(2, trainer_version=0)
    buf.set_trainer_version(1)
    fresh = [await buf.admit(0, 1) for _ in range(3)]
    assert None not in fresh[:2] and fresh[2] is None  # batch 1 is the stragglers', batch 2 the fresh ones'
    assert buf.estimated_version(1) == 3
    buf.release(stragglers.pop())  # one straggler given up: a fresh group may take its place
    assert await buf.admit(0, 1) is not None
    buf.set_trainer_version(2)  # the other straggler is past its bound now: no longer counted
    assert buf.room(2)["a"] == 3 * 2 - 3  # versions 1-3 (batch 1 not built yet) less the three fresh groups


async def test_the_open_batch_keeps_room_for_groups_in_flight_at_their_last_chance():
    """A fresher group that arrives first does not take the place of a group the next version would drop:
    it waits for the next batch, where it is still within the bound; a group at its last chance goes first."""
    buf = TrajectoryBuffer(["a"], groups_per_step=2, max_lag=1, admission_hold=0)
    old = [await buf.admit(0, 0) for _ in range(2)]
    buf.set_trainer_version(1)
    fresh = [await buf.admit(0, 1) for _ in range(2)]
    buf.push(group("a", 1, fresh[0]))
    assert await buf.take(2, 1, wait=0) == ([], 2)  # both places kept for the version-0 groups in flight
    buf.push(group("a", 1, fresh[1]))
    buf.push(group("a", 0, old[0]))
    taken, lacking = await buf.take(2, 1, wait=0)
    assert [g.policy_version for g in taken] == [0] and lacking == 1
    buf.release(old[1])  # the other is given up: its place goes to the oldest fresh group
    taken, lacking = await buf.take(2, 1, wait=0)
    assert [g.reservation for g in taken] == [fresh[0]] and lacking == 0
    buf.close_batch(2, 1)
    assert buf.counts["dropped_stale"] == 0 and len(buf.mixer) == 1


async def test_admission_counts_each_domain_against_its_own_quota():
    """Batches take 2 groups of each domain: a fast domain's groups may fill its own two versions, never
    the slow domain's room (counted together, 8 fast groups denied every slow one the first batch needs)."""
    buf = TrajectoryBuffer(["fast", "slow"], groups_per_step=4, max_lag=1, admission_hold=0)
    fast = [await buf.admit(0, 0, "fast") for _ in range(6)]
    assert fast.count(None) == 2 and fast[4] is None  # versions 0 and 1 hold two each
    for reservation in fast[:4]:
        buf.push(group("fast", 0, reservation))
    slow = [await buf.admit(0, 0, "slow") for _ in range(5)]
    assert None not in slow[:4] and slow[4] is None
    assert buf.estimated_version(0, "slow") == 2 and buf.estimated_version(0, "fast") == 2
    with pytest.raises(ValueError, match="needs the group's domain"):
        await buf.admit(0, 0)
    with pytest.raises(ValueError, match="unknown domain 'web'"):
        await buf.admit(0, 0, "web")


@pytest.mark.parametrize("seed", range(6))
async def test_room_is_how_many_groups_admission_takes_one_after_another(seed):
    """Workers pick their next group's domain by ``room``: it must count exactly the admissions that follow,
    whatever the open batch, the queues and the groups in flight on older and newer weights."""
    buf = TrajectoryBuffer(["a", "b", "c"], groups_per_step=5, max_lag=seed % 3, admission_hold=0)
    await play(buf, steps=4 + seed, slots=6, seed=seed, domains=("a", "b", "c"), stream=seed % 2 == 1)
    if seed % 2:
        await buf.take(5, buf.trainer_version)  # a batch open with what is queued
    for version in range(max(0, buf.trainer_version - 3), buf.trainer_version + 2):
        room = buf.room(version)
        for domain, free in room.items():
            admitted = 0
            while admitted <= 50 and await buf.admit(1, version, domain) is not None:
                admitted += 1
            assert admitted == free, (version, domain, room)
    assert TrajectoryBuffer(["a"], groups_per_step=1).room(0) == {"a": None}  # no bound: any number


async def test_a_group_already_beyond_the_bound_is_denied_and_a_late_one_dropped_at_consumption():
    buf = TrajectoryBuffer(["a", "b"], groups_per_step=2, max_lag=1)
    late = await buf.admit(0, 0, "a")
    buf.set_trainer_version(3)
    assert await buf.admit(0, 1, "a") is None  # would lag 2 at the trainer's version already
    assert buf.push(group("a", 0, late))  # played to the end on version 0 weights: lag 3 now
    buf.push(group("a", 3))
    buf.push(group("b", 2))
    batch = await buf.get_batch(2, trainer_version=3, timeout=0)
    assert [g.policy_version for g in batch.groups] == [3, 2]
    assert batch.domains["a"].dropped_stale == 1
    assert buf.counts["dropped_stale"] == 1 and buf.consumed_lags == {0: 1, 1: 1}
    assert check_accounting(buf, pushed_without_reservation=2) == (0, 0)


async def test_a_streamed_batch_hands_over_groups_as_they_arrive_within_its_quotas():
    """``take`` gives the trainer each group its batch lacks as soon as it is pushed (the rest of a domain's
    arrivals wait for the next batch), drops stale ones, and ``close_batch`` counts what never came."""
    buf = TrajectoryBuffer(["a", "b"], groups_per_step=4, max_lag=1, admission_hold=0)
    buf.push(group("a", 0))
    assert [g.domain for g in (await buf.take(4, 0))[0]] == ["a"]
    assert await buf.take(4, 0, wait=0.05) == ([], 3)  # nothing new: waited, then answered
    reservation = await buf.admit(0, 0, "b")
    assert await buf.admit(0, 0, "a") is not None
    # the taken "a" group and the one in flight fill version 0's quota of 2: a third one would train at 1
    assert buf.estimated_version(0, "a") == 1

    async def later():
        await asyncio.sleep(0.05)
        buf.push(group("b", 0, reservation))

    task = asyncio.ensure_future(later())
    taken, lacking = await buf.take(4, 0, wait=5)  # woken by the push
    await task
    assert [g.domain for g in taken] == ["b"] and lacking == 2
    for _ in range(3):
        buf.push(group("a", 0))
    taken, lacking = await buf.take(4, 0)
    assert [g.domain for g in taken] == ["a"] and lacking == 1  # a's quota is full: two a groups stay queued
    with pytest.raises(ValueError, match="close_batch it first"):
        await buf.get_batch(4, 0)
    with pytest.raises(ValueError, match="a batch of 4 groups at version 0 is open"):
        await buf.take(4, 1)
    stats = buf.close_batch(4, 0)
    assert (stats["a"].taken, stats["b"].taken, stats["b"].shortfall) == (2, 1, 1)
    buf.push(group("b", 2))
    taken, lacking = await buf.take(4, 2)  # the two queued version-0 a groups lag 2: dropped, not handed over
    assert [g.policy_version for g in taken] == [2] and lacking == 3
    assert buf.close_batch(4, 2)["a"].dropped_stale == 2
    assert buf.consumed_lags == {0: 4}
    assert buf.stats()["reserved"] == 1  # the admitted "a" group is still in flight
    assert check_accounting(buf, pushed_without_reservation=5) == (0, 0)


async def test_drops_found_while_waiting_are_reported_in_the_batch():
    buf = TrajectoryBuffer(["a"], groups_per_step=1, max_lag=0)
    buf.push(group("a", 0))
    buf.set_trainer_version(1)

    async def later():
        await asyncio.sleep(0.05)
        buf.push(group("a", 1))

    task = asyncio.ensure_future(later())
    batch = await buf.get_batch(1, trainer_version=1, timeout=5)  # drops the version-0 group while waiting
    await task
    assert batch.domains["a"].dropped_stale == 1 and batch.groups[0].policy_version == 1


async def test_resume_keeps_the_counts_and_counts_open_work_lost():
    buf = TrajectoryBuffer(["a", "b"], groups_per_step=4, max_lag=1, admission_hold=0)
    await play(buf, steps=10, slots=8, seed=7)
    state = buf.state_dict()
    open_work = len(buf.mixer) + len(buf._reservations)
    assert state["queued"] + state["reserved"] == open_work

    fresh = TrajectoryBuffer(["a", "b"], groups_per_step=4, max_lag=1, admission_hold=0)
    fresh.load_state_dict(state)
    before, after = buf.stats()["counts"], fresh.stats()["counts"]
    for key in ("admitted", "denied", "pushed", "lost", "consumed", "dropped_stale"):
        assert after[key] == before[key], key
    assert fresh.counts["lost_on_resume"] == open_work
    assert fresh.consumed_lags == buf.consumed_lags and fresh.trainer_version == buf.trainer_version
    assert fresh.mixer.totals == buf.mixer.totals
    # the resumed run goes on with the same bound, and the old open work stays accounted for
    lags = await play(fresh, steps=10, slots=8, seed=8)
    assert max(lags) <= 1
    assert check_accounting(fresh) == (state["reserved"], state["queued"])


async def test_worker_restart_counts_its_reservations_lost_once():
    buf = TrajectoryBuffer(["a"], groups_per_step=4, max_lag=None)
    r1, r2 = await buf.admit(7, 0), await buf.admit(7, 0)
    await buf.admit(8, 0)
    assert buf.register_worker(7) == 2 and buf.worker_restarts == {7: 0}
    assert buf.register_worker(7) == 0 and buf.worker_restarts == {7: 1}
    assert buf.counts["lost"] == 2
    assert not buf.push(group("a", 0, r1))  # a late push of a lost reservation is refused, not double counted
    assert buf.counts["late_push"] == 1 and buf.counts["pushed"] == 0
    buf.release(r2)  # already lost: not counted again
    assert buf.counts["lost"] == 2


async def test_short_batch_after_timeout():
    buf = TrajectoryBuffer(["a", "b"], groups_per_step=4, max_lag=None)
    buf.push(group("a"))
    batch = await buf.get_batch(4, trainer_version=0, timeout=0.05)
    assert len(batch.groups) == 1 and batch.domains["a"].shortfall == 1 and batch.domains["b"].shortfall == 2
    assert buf.mixer.totals["b"].shortfall == 2


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(ValueError, match="groups_per_step must be >= 1"):
        TrajectoryBuffer(["a"], groups_per_step=0)
    with pytest.raises(ValueError, match="max_lag must be >= 0"):
        TrajectoryBuffer(["a"], groups_per_step=1, max_lag=-1)
    with pytest.raises(ValueError, match="admission_hold and max_held must be >= 0"):
        TrajectoryBuffer(["a"], groups_per_step=1, admission_hold=-1)


async def test_a_denied_admission_waits_for_room_or_a_new_version_instead_of_polling():
    buf = TrajectoryBuffer(["a"], groups_per_step=1, max_lag=0, admission_hold=5.0)
    first = await buf.admit(0, 0)  # version 0 holds one group

    async def after(seconds, action):
        await asyncio.sleep(seconds)
        action()

    # room appears at the same version (the group is given up): the held call gets it
    started = time.monotonic()
    waiting = asyncio.ensure_future(buf.admit(0, 0))
    await after(0.05, lambda: buf.release(first))
    assert await waiting is not None and time.monotonic() - started < 2.0
    # a new trainer version answers None at once: the worker loads the new weights before asking again
    waiting = asyncio.ensure_future(buf.admit(0, 0))
    await after(0.05, lambda: buf.set_trainer_version(1))
    assert await waiting is None and time.monotonic() - started < 2.0
    assert buf.counts["denied"] == 1 and buf.counts["admitted"] == 2
    # nothing changes: denied after admission_hold; weights older than the trainer's are denied without
    # waiting (newer ones may be out: the worker should load them rather than wait with these)
    quick = TrajectoryBuffer(["a"], groups_per_step=1, max_lag=1, admission_hold=0.1)
    await quick.admit(0, 0)
    await quick.admit(0, 0)
    started = time.monotonic()
    assert await quick.admit(0, 0) is None and 0.1 <= time.monotonic() - started < 2.0
    quick.set_trainer_version(1)
    started = time.monotonic()
    assert await quick.admit(0, 0) is None and time.monotonic() - started < 0.05
    assert quick.counts["denied"] == 2


@pytest.mark.parametrize("weights,n,max_lag", [({"a": 0.05, "b": 1}, 2, 1), ({"a": 1, "b": 1, "c": 1}, 2, 0),
                                               ({"a": 0.5, "b": 0.3, "c": 0.2}, 4, 2)])
async def test_admission_plays_no_group_in_a_batch_where_its_domains_quota_is_0(weights, n, max_lag):
    """A batch where a domain's quota is 0 takes none of its groups: admission used to let them in (a quota of
    0 was 'never waited for') and they were played, then dropped stale. Slots that ask for every domain each
    version get exactly what the batches take: nothing dropped, nothing short, and each domain trained on."""
    buf = TrajectoryBuffer(list(weights), groups_per_step=n, max_lag=max_lag, weights=weights, admission_hold=0)
    trained = dict.fromkeys(weights, 0)
    for version in range(100):
        buf.set_trainer_version(version)
        for d in weights:
            room = buf.room(version)[d]
            admitted = []
            while len(admitted) <= 50 and (reservation := await buf.admit(0, version, d)) is not None:
                admitted.append(reservation)
            assert len(admitted) == room  # the slots a worker is told are free are the ones admitted
            for reservation in admitted:
                assert buf.push(group(d, version, reservation))
        batch = await buf.get_batch(n, version, timeout=0)
        for g in batch.groups:
            trained[g.domain] += 1
    counts = buf.stats()["counts"]
    assert counts["dropped_stale"] == 0, counts
    assert counts["admitted"] == counts["consumed"] + len(buf.mixer)
    assert sum(t.shortfall for t in buf.mixer.totals.values()) == 0
    assert all(trained.values()) and sum(trained.values()) == 100 * n
    for d, w in weights.items():
        assert abs(trained[d] - 100 * n * w / sum(weights.values())) < 1, trained


def test_the_quota_schedule_survives_a_checkpoint():
    weights = {"a": 0.5, "b": 0.3, "c": 0.2}
    buf = TrajectoryBuffer(list(weights), groups_per_step=4, weights=weights)
    for version in range(3):
        buf.close_batch(4, version)
    fresh = TrajectoryBuffer(list(weights), groups_per_step=4, weights=weights)
    fresh.load_state_dict(buf.state_dict())
    assert fresh.mixer.schedule(4, 5) == buf.mixer.schedule(4, 5) != DomainMixer(list(weights), weights).schedule(4, 5)
