"""A fleet on one machine: many concurrent sessions over pytool and web env servers (local backend),
driven by random actions for a fixed time.

Prints sessions held, steps/s, p50/p95/p99 step latency, memory per session (PSS of every server
process tree and this process, divided by sessions), failed steps, and servers/sessions that died and
were replaced. Every session is opened (created and reset) before the measured period starts. Each
session then plays random-action episodes back to back (closed loop, no think time), so the step
latency is the queueing delay of a saturated machine. ``--fault-every S`` kills a random env server
process every S seconds: the run must still finish, and every episode is accounted for (completed, or
failed with its reason); sessions of a killed server reopen on its replacement, with back-off.

    python benchmarks/fleet.py --sessions 200 --seconds 60 [--fault-every 10]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import random
import signal
import time
import warnings

import psutil

from mintgym.action_spaces import ACTION_TYPES, action_set_for
from mintgym.agents.scripted import random_action
from mintgym.client.aio import AsyncEnvClient
from mintgym.env import registration
from mintgym.errors import MintGymError
from mintgym.runtime.fleet import ServerGroup
from mintgym.runtime.local import LocalProvider

MAX_EPISODE_STEPS = 8


def tree_pss(pid: int) -> int:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


class Stats:
    def __init__(self) -> None:
        self.latencies: collections.defaultdict[str, list[float]] = collections.defaultdict(list)
        self.steps: collections.Counter[str] = collections.Counter()
        self.failed_steps = 0
        self.failure_reasons: collections.Counter[str] = collections.Counter()
        self.failure_examples: dict[str, str] = {}
        self.episodes_started = 0
        self.episodes_completed = 0
        self.episodes_failed = 0
        self.sessions_replaced = 0
        self.sessions_created = 0
        self.reopen_seconds: list[float] = []

    def fail(self, reason: str, err: Exception) -> None:
        self.failure_reasons[reason] += 1
        self.failure_examples.setdefault(reason, str(err)[:300])


class Clock:
    """The run's end, set once every session is open (or the warm-up budget is spent)."""

    deadline = float("inf")
    client_timeout = 180.0  # run() sets it from --request-timeout


async def open_session(client: AsyncEnvClient, tasks: list[str], rng: random.Random, stats: Stats,
                       create_gate: asyncio.Semaphore):
    """A new session, reset onto a random task (creation and first reset under the gate)."""
    async with create_gate:
        session = await client.session()
        stats.sessions_created += 1
        await session.reset(rng.choice(tasks), rng.randrange(1 << 30))
    return session


async def drive(slot: int, domain: str, group: ServerGroup, server_index: int, tasks: list[str], clock: Clock,
                stats: Stats, rng: random.Random, clients: dict, create_gate: asyncio.Semaphore, held: set,
                go: asyncio.Event) -> None:
    """Open one session during the warm-up, wait for ``go``, then play random episodes until the deadline."""
    action_set = action_set_for(domain)
    kinds = [k for k in action_set.type_names if k not in ("done", "goto", "wait")]
    session, fresh, retry_in, lost_at = None, False, 0.25, None
    while not go.is_set() or time.monotonic() < clock.deadline:
        handle = group.handles[server_index]
        if handle.base_url not in clients:
            clients[handle.base_url] = AsyncEnvClient(handle.base_url, encoding="raw", timeout=clock.client_timeout)
        client = clients[handle.base_url]
        try:
            if session is None:
                session, fresh = await open_session(client, tasks, rng, stats, create_gate), True
                held.add(slot)
                if lost_at is not None:
                    stats.reopen_seconds.append(time.monotonic() - lost_at)
                    lost_at = None
            if not go.is_set():
                await go.wait()  # every session is opened before any steps: creation is not measured as steps
            if not fresh:
                await session.reset(rng.choice(tasks), rng.randrange(1 << 30))
            fresh = False
        except MintGymError as err:
            held.discard(slot)
            session = None
            if lost_at is None and go.is_set():
                lost_at = time.monotonic()  # lost between episodes: the reset found the server gone
            stats.fail(f"reopen attempt: {type(err).__name__}", err)
            retry_in = min(4.0, retry_in * 2)  # the server is being replaced: back off, then try its successor
            await asyncio.sleep(retry_in)
            continue
        retry_in = 0.25
        stats.episodes_started += 1
        try:
            for _ in range(MAX_EPISODE_STEPS):
                action = random_action(ACTION_TYPES[rng.choice(kinds)], session.screen_size, rng)
                t0 = time.perf_counter()
                result = await session.step(action)
                stats.latencies[domain].append(time.perf_counter() - t0)
                stats.steps[domain] += 1
                if result.terminated or result.truncated or time.monotonic() > clock.deadline:
                    break
            stats.episodes_completed += 1
        except MintGymError as err:
            stats.failed_steps += 1
            stats.episodes_failed += 1
            stats.fail(f"step: {type(err).__name__}", err)
            stats.sessions_replaced += 1
            held.discard(slot)
            session, lost_at = None, time.monotonic()


async def supervise(groups: list[ServerGroup], stop: asyncio.Event) -> None:
    while not stop.is_set():
        # a slow restart blocks no other group
        await asyncio.gather(*(asyncio.to_thread(group.check) for group in groups))
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except TimeoutError:
            pass


async def inject_faults(groups: list[ServerGroup], every: float, deadline: float, rng: random.Random,
                        killed: list[str]) -> None:
    while time.monotonic() + every < deadline:
        await asyncio.sleep(every)
        group = rng.choice(groups)
        handle = rng.choice(group.handles)
        try:
            os.kill(int(handle.ident), signal.SIGKILL)
            killed.append(f"{group.domain}:{handle.ident}@{time.monotonic():.1f}")
        except ProcessLookupError:
            pass


async def run(args) -> None:
    rng = random.Random(args.seed)
    provider = LocalProvider(request_timeout=args.request_timeout)
    domains = [d for d in args.domains.split(",") if d]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tasks = {d: [t.id for t in registration.tasks(domain=d) if t.unavailable() is None] for d in domains}
    if args.web_prefix and "web" in tasks:
        tasks["web"] = [t for t in tasks["web"] if t.startswith(args.web_prefix)] or tasks["web"]
    for d, ids in tasks.items():
        if not ids:
            raise SystemExit(f"no runnable tasks for domain {d!r}")
    t0 = time.monotonic()
    groups = [ServerGroup(provider, d, args.servers_per_domain).start() for d in domains]
    print(f"started {sum(len(g.handles) for g in groups)} env servers in {time.monotonic() - t0:.1f}s")
    stats = Stats()
    clients: dict = {}
    held: set = set()
    create_gate = asyncio.Semaphore(args.create_concurrency)
    warm_deadline = time.monotonic() + args.warmup
    clock = Clock()
    clock.client_timeout = args.request_timeout + 60.0
    go = asyncio.Event()
    drivers = []
    for slot in range(args.sessions):
        domain = domains[slot % len(domains)]
        group = groups[slot % len(domains)]
        drivers.append(asyncio.create_task(drive(
            slot, domain, group, (slot // len(domains)) % group.count, tasks[domain], clock, stats,
            random.Random(rng.random()), clients, create_gate, held, go)))
    stop = asyncio.Event()
    supervisor = asyncio.create_task(supervise(groups, stop))
    while time.monotonic() < warm_deadline and len(held) < args.sessions:
        await asyncio.sleep(0.5)
    warmup_seconds = time.monotonic() - t0
    memory = {g.domain: sum(tree_pss(int(h.ident)) for h in g.handles) for g in groups}
    client_memory = psutil.Process().memory_full_info().pss  # this process only: the servers are its children
    held_by_domain = collections.Counter(domains[slot % len(domains)] for slot in held)
    sessions_at_memory = len(held)
    print(f"{sessions_at_memory} sessions held after {warmup_seconds:.1f}s; measuring for {args.seconds}s", flush=True)
    measured_from = time.monotonic()
    clock.deadline = measured_from + args.seconds
    go.set()
    killed: list[str] = []
    faults = (asyncio.create_task(inject_faults(groups, args.fault_every, clock.deadline, rng, killed))
              if args.fault_every else None)
    await asyncio.gather(*drivers)
    elapsed = time.monotonic() - measured_from
    stop.set()
    await supervisor
    if faults:
        faults.cancel()
    for client in clients.values():
        await client.aclose()
    restarts = sum(g.restarts for g in groups)
    for g in groups:
        g.stop()

    def q(values, p):
        ordered = sorted(values) or [0.0]
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1e3

    every = [x for v in stats.latencies.values() for x in v]
    total_memory = sum(memory.values()) + client_memory
    accounted = stats.episodes_completed + stats.episodes_failed
    print("\n=== fleet ===")
    print(f"domains                 {', '.join(f'{d} ({len(tasks[d])} tasks)' for d in domains)}")
    print(f"servers                 {sum(g.count for g in groups)} ({args.servers_per_domain} per domain)")
    print(f"sessions requested      {args.sessions}")
    print(f"sessions held           {sessions_at_memory} after warm-up ({warmup_seconds:.0f}s), {len(held)} at the end")
    print(f"steps/s                 {sum(stats.steps.values()) / elapsed:.1f}")
    print(f"step latency ms         p50 {q(every, 0.5):.1f}  p95 {q(every, 0.95):.1f}  p99 {q(every, 0.99):.1f}")
    for d in domains:
        n = max(1, held_by_domain[d])
        print(f"  {d:8s} {held_by_domain[d]:4d} sessions  {stats.steps[d] / elapsed:6.1f} steps/s  "
              f"p50 {q(stats.latencies[d], 0.5):7.1f}  p95 {q(stats.latencies[d], 0.95):7.1f}  "
              f"p99 {q(stats.latencies[d], 0.99):7.1f} ms  {memory.get(d, 0) / n / 2**20:6.1f} MiB PSS/session")
    print(f"memory                  {total_memory / 2**30:.2f} GiB PSS total (driver {client_memory / 2**20:.0f} MiB), "
          f"{total_memory / max(1, sessions_at_memory) / 2**20:.1f} MiB per session")
    print(f"failed steps            {stats.failed_steps}")
    print(f"episodes                {stats.episodes_started} started, {stats.episodes_completed} completed, "
          f"{stats.episodes_failed} failed, {stats.episodes_started - accounted} unaccounted")
    print(f"servers killed          {len(killed)}; servers restarted {restarts}")
    if args.verbose:
        print("kills: " + ", ".join(killed))
    reopen = sorted(stats.reopen_seconds) or [float("nan")]
    print(f"sessions lost           {stats.sessions_replaced} mid-episode with their server; "
          f"{len(stats.reopen_seconds)} sessions reopened on a replacement before the end, "
          f"median {reopen[len(reopen) // 2]:.1f}s, max {reopen[-1]:.1f}s after the loss")
    if stats.failure_reasons:
        print("failure reasons         " + "; ".join(f"{k} x{v}" for k, v in stats.failure_reasons.most_common()))
        for reason, example in stats.failure_examples.items():
            print(f"  e.g. {reason}: {example}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=240, help="at most this long to open every session")
    parser.add_argument("--domains", default="pytool,web")
    parser.add_argument("--servers-per-domain", type=int, default=2)
    parser.add_argument("--web-prefix", default="miniwob/click-", help="web tasks to sample (id prefix)")
    parser.add_argument("--create-concurrency", type=int, default=8)
    parser.add_argument("--request-timeout", type=float, default=120.0,
                        help="the servers' per-call timeout; a step slower than this replaces the session")
    parser.add_argument("--fault-every", type=float, default=0.0, help="kill a random server every S seconds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
