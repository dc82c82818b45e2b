"""A fleet on one machine: web, pytool and desktop sessions opened, stepped with random actions and closed.

Many concurrent sessions over env servers of the local backend, driven for a fixed time. ``--mix`` says which
domains and in what share (``web=250,pytool=200,desktop=50`` with ``--sessions 500`` gives those counts).
Every session is opened (created and reset) before the measured period starts; each then plays random-action
episodes back to back (closed loop, no think time), so the step latency is the queueing delay of a saturated
machine; at the end every session is closed. Per domain it prints sessions held, open time (create + first
reset, p50/p95), step latency p50/p95/p99, the round trip of a ``/v1/health`` asked once a second (what a
server's event loop keeps a trivial request waiting) and memory per session: the PSS of every process of the
domain's servers -- their process trees (a desktop session's Xvfb, window manager and apps descend from its
server through the session's PID namespace) and the members of the control groups they made (Chromium's crash
handlers daemonize out of the tree) -- and, beside it, what the kernel charges to those groups. Then the
totals, failed steps and the episode ledger (started = completed + failed). ``--fault-every S`` kills a random
env server every S seconds: the run must still finish with every episode accounted for (completed, or failed
with its reason); sessions of a killed server reopen on its replacement, with back-off. See
docs/benchmarks.md#a-mixed-fleet-on-one-machine.

    python benchmarks/fleet.py --sessions 200 --seconds 60 [--fault-every 10]
    python benchmarks/fleet.py --sessions 500 --mix web=250,pytool=200,desktop=50 \\
        --servers-per-domain web=4,pytool=2,desktop=2 --warmup 600 --seconds 60
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
from pathlib import Path

import psutil

from mintgym.action_spaces import ACTION_TYPES, action_set_for
from mintgym.agents.scripted import random_action
from mintgym.client.aio import AsyncEnvClient
from mintgym.env import registration
from mintgym.errors import MintGymError
from mintgym.runtime.fleet import ServerGroup
from mintgym.runtime.local import LocalProvider

MAX_EPISODE_STEPS = 8
#: Domains the fleet knows how to drive with random actions.
FLEET_DOMAINS = ("web", "pytool", "desktop")
DEFAULT_SERVERS = 2
CGROUP_ROOT = Path("/sys/fs/cgroup")


# -- the command line -------------------------------------------------------------------------------------------
def parse_mix(text: str) -> dict[str, float]:
    """``web,pytool`` or ``web=250,pytool=200,desktop=50``: domain -> weight (1 where none is given)."""
    mix: dict[str, float] = {}
    for entry in text.split(","):
        name, sep, value = entry.strip().partition("=")
        if not name:
            raise argparse.ArgumentTypeError(f"empty entry in {text!r}; write domain[=weight],...")
        if name not in FLEET_DOMAINS:
            raise argparse.ArgumentTypeError(f"unknown domain {name!r}; the fleet drives {', '.join(FLEET_DOMAINS)}")
        if name in mix:
            raise argparse.ArgumentTypeError(f"domain {name!r} is named twice")
        try:
            weight = float(value) if sep else 1.0
        except ValueError:
            raise argparse.ArgumentTypeError(f"weight of {name!r} is {value!r}, not a number") from None
        if not weight > 0:
            raise argparse.ArgumentTypeError(f"weight of {name!r} must be above 0, got {value}")
        mix[name] = weight
    return mix


def parse_servers(text: str) -> dict[str, int]:
    """``3`` (every domain) or ``web=4,desktop=1`` (others get the default): domain -> servers ("" = all)."""
    counts: dict[str, int] = {}
    for entry in text.split(","):
        name, sep, value = entry.strip().rpartition("=")
        name = name if sep else ""
        if sep and name not in FLEET_DOMAINS:
            raise argparse.ArgumentTypeError(f"unknown domain {name!r}; the fleet drives {', '.join(FLEET_DOMAINS)}")
        if name in counts:
            raise argparse.ArgumentTypeError(f"{name or 'the count for every domain'!r} is given twice")
        if not value.strip().isdigit() or int(value) < 1:
            raise argparse.ArgumentTypeError(f"server count {value!r} is not a whole number of at least 1")
        counts[name] = int(value)
    return counts


def share(total: int, mix: dict[str, float]) -> dict[str, int]:
    """``total`` sessions split in proportion to the weights (largest remainder), each domain at least one."""
    weight = sum(mix.values())
    exact = {d: total * w / weight for d, w in mix.items()}
    counts = {d: max(1, int(x)) for d, x in exact.items()}
    by_remainder = sorted(mix, key=lambda d: (exact[d] - int(exact[d]), mix[d]), reverse=True)
    for d in by_remainder[:max(0, total - sum(counts.values()))]:
        counts[d] += 1
    return counts


def interleave(counts: dict[str, int]) -> list[str]:
    """One domain per session slot, spread evenly (so every domain opens from the start of the warm-up)."""
    keyed = [((i + 0.5) / n, d) for d, n in counts.items() for i in range(n)]
    return [d for _, d in sorted(keyed)]


# -- measurements ------------------------------------------------------------------------------------------------
def tree_pids(pid: int) -> list[int]:
    try:
        root = psutil.Process(pid)
        return [root.pid, *(p.pid for p in root.children(recursive=True))]
    except psutil.NoSuchProcess:
        return []


def pss(pids: set[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


def session_cgroups(pid: int, family: str) -> list[Path]:
    """The memory-controller folders of the control groups server ``pid`` made for its ``family`` sessions
    (``mintgym-<family>-<pid>-<n>``, below the server's own group; see environments/isolation/cgroups.py)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return []
    own = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            own[name] = path.lstrip("/")
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        base = CGROUP_ROOT / own.get("", "")
    elif "memory" in own:
        base = CGROUP_ROOT / "memory" / own["memory"]
    else:
        return []
    return sorted(base.glob(f"mintgym-{family}-{pid}-*"))


def cgroup_usage(pid: int, family: str) -> tuple[int, set[int]]:
    """(bytes charged to server ``pid``'s ``family`` groups, the pids in them)."""
    charged, members = 0, set()
    for group in session_cgroups(pid, family):
        for name in ("memory.current", "memory.usage_in_bytes"):
            try:
                charged += int((group / name).read_text())
                break
            except (OSError, ValueError):
                continue
        try:
            members.update(int(p) for p in (group / "cgroup.procs").read_text().split())
        except (OSError, ValueError):
            pass
    return charged, members


def memory_of(group: ServerGroup) -> dict:
    """PSS of every process of the group's servers: each server's process tree (a desktop session's Xvfb, window
    manager and apps descend from it through the session's PID namespace) and the members of the control groups
    it made (a process that left the tree, e.g. Chromium's crash handler, which daemonizes); what the kernel
    charges to those groups; how many of their members are outside the trees."""
    total = charged = contained = unseen = 0
    for handle in group.handles:
        pid = int(handle.ident)
        tree = set(tree_pids(pid))
        used, members = cgroup_usage(pid, group.domain)
        total += pss(tree | members)
        charged += used
        contained += len(members)
        unseen += len(members - tree)
    return {"pss": total, "cgroup": charged, "contained": contained, "unseen": unseen}


def q(values: list[float], p: float) -> float:
    """The ``p`` quantile of ``values`` in milliseconds (0 when there are none)."""
    ordered = sorted(values) or [0.0]
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1e3


class Stats:
    def __init__(self) -> None:
        self.latencies: collections.defaultdict[str, list[float]] = collections.defaultdict(list)
        #: Step latencies per (domain, action type), for --verbose.
        self.kind_latencies: collections.defaultdict[tuple[str, str], list[float]] = collections.defaultdict(list)
        self.open_seconds: collections.defaultdict[str, list[float]] = collections.defaultdict(list)
        #: Round trips of ``/v1/health`` per domain, once a second per server: how long a server's event loop
        #: (and the driver's) keeps a trivial request waiting.
        self.health_seconds: collections.defaultdict[str, list[float]] = collections.defaultdict(list)
        self.steps: collections.Counter[str] = collections.Counter()
        self.failed_steps = 0
        self.failure_reasons: collections.Counter[str] = collections.Counter()
        self.failure_examples: dict[str, str] = {}
        self.episodes_started = 0
        self.episodes_completed = 0
        self.episodes_failed = 0
        self.sessions_replaced = 0
        self.sessions_created = 0
        self.sessions_closed = 0
        self.close_failures = 0
        self.reopen_seconds: list[float] = []

    def fail(self, reason: str, err: Exception) -> None:
        self.failure_reasons[reason] += 1
        self.failure_examples.setdefault(reason, str(err)[:300])


class Clock:
    """The run's end, set once every session is open (or the warm-up budget is spent)."""

    deadline = float("inf")
    client_timeout = 180.0  # run() sets it from --request-timeout


# -- one session slot ----------------------------------------------------------------------------------------------
async def open_session(domain: str, client: AsyncEnvClient, tasks: list[str], rng: random.Random, stats: Stats,
                       create_gate: asyncio.Semaphore):
    """A new session, reset onto a random task (creation and first reset under the gate: the open time)."""
    async with create_gate:
        t0 = time.perf_counter()
        session = await client.session()
        stats.sessions_created += 1
        try:
            await session.reset(rng.choice(tasks), rng.randrange(1 << 30))
        except MintGymError:
            await close_session(session, stats, count=False)
            raise
        stats.open_seconds[domain].append(time.perf_counter() - t0)
    return session


async def close_session(session, stats: Stats, count: bool = True) -> None:
    try:
        resp = await session.client.request("DELETE", f"/v1/sessions/{session.session_id}")
        ok = resp.status_code < 300
    except MintGymError:
        ok = False
    session.closed = True
    if count:
        stats.sessions_closed += ok
        stats.close_failures += not ok


async def drive(slot: int, domain: str, group: ServerGroup, server_index: int, tasks: list[str], clock: Clock,
                stats: Stats, rng: random.Random, clients: dict, create_gate: asyncio.Semaphore, held: set,
                go: asyncio.Event) -> None:
    """Open one session during the warm-up, wait for ``go``, play random episodes until the deadline, close it."""
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
                session, fresh = await open_session(domain, client, tasks, rng, stats, create_gate), True
                held.add(slot)
                if lost_at is not None:
                    stats.reopen_seconds.append(time.monotonic() - lost_at)
                    lost_at = None
            if not go.is_set():
                await go.wait()  # every session is opened before any steps: creation is not measured as steps
                if time.monotonic() >= clock.deadline:
                    break
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
                kind = rng.choice(kinds)
                action = random_action(ACTION_TYPES[kind], session.screen_size, rng)
                t0 = time.perf_counter()
                result = await session.step(action)
                stats.latencies[domain].append(time.perf_counter() - t0)
                stats.kind_latencies[domain, kind].append(stats.latencies[domain][-1])
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
    if session is not None:
        await close_session(session, stats)


# -- servers: supervision and faults ------------------------------------------------------------------------------
async def supervise(groups: list[ServerGroup], stop: asyncio.Event) -> None:
    while not stop.is_set():
        # a slow restart blocks no other group
        await asyncio.gather(*(asyncio.to_thread(group.check) for group in groups))
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except TimeoutError:
            pass


async def probe_health(groups: list[ServerGroup], stats: Stats, stop: asyncio.Event) -> None:
    """Ask every server for ``/v1/health`` once a second and record the round trip (a dead server: skipped)."""
    probes: dict[str, AsyncEnvClient] = {}

    async def one(group: ServerGroup, url: str) -> None:
        client = probes.setdefault(url, AsyncEnvClient(url, timeout=60.0))
        t0 = time.perf_counter()
        try:
            await client.request("GET", "/v1/health")
        except MintGymError:
            return
        stats.health_seconds[group.domain].append(time.perf_counter() - t0)

    try:
        while not stop.is_set():
            await asyncio.gather(*(one(g, url) for g in groups for url in g.urls))
            try:
                await asyncio.wait_for(stop.wait(), 1.0)
            except TimeoutError:
                pass
    finally:
        for client in probes.values():
            await client.aclose()


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


# -- the run ------------------------------------------------------------------------------------------------------
def runnable_tasks(domains: list[str], prefixes: dict[str, str]) -> dict[str, list[str]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tasks = {d: [t.id for t in registration.tasks(domain=d) if t.unavailable() is None] for d in domains}
    for d, prefix in prefixes.items():
        if prefix and d in tasks:
            tasks[d] = [t for t in tasks[d] if t.startswith(prefix)]
    for d, ids in tasks.items():
        if not ids:
            raise SystemExit(f"no runnable tasks for domain {d!r} (id prefix {prefixes.get(d)!r})")
    return tasks


async def run(args) -> None:
    rng = random.Random(args.seed)
    provider = LocalProvider(request_timeout=args.request_timeout)
    counts = share(args.sessions, args.mix)
    domains = list(counts)
    servers = {d: min(counts[d], args.servers_per_domain.get(d, args.servers_per_domain.get("", DEFAULT_SERVERS)))
               for d in domains}
    tasks = runnable_tasks(domains, {"web": args.web_prefix, "desktop": args.desktop_prefix})
    t0 = time.monotonic()
    groups = {d: ServerGroup(provider, d, servers[d]) for d in domains}
    try:
        for group in groups.values():
            group.start()
        print(f"started {sum(servers.values())} env servers in {time.monotonic() - t0:.1f}s "
              f"({', '.join(f'{d} {n}' for d, n in servers.items())})", flush=True)
        await measure(args, rng, counts, tasks, groups, t0)
    finally:
        for group in groups.values():
            group.stop()


async def measure(args, rng: random.Random, counts: dict[str, int], tasks: dict[str, list[str]],
                  groups: dict[str, ServerGroup], t0: float) -> None:
    domains = list(counts)
    stats = Stats()
    clients: dict = {}
    held: set = set()
    gates = {d: asyncio.Semaphore(args.create_concurrency) for d in domains}  # a slow domain delays no other
    warm_deadline = time.monotonic() + args.warmup
    clock = Clock()
    clock.client_timeout = args.request_timeout + 60.0
    go = asyncio.Event()
    slots = interleave(counts)
    placed: collections.Counter[str] = collections.Counter()
    drivers = []
    for slot, domain in enumerate(slots):
        group = groups[domain]
        drivers.append(asyncio.create_task(drive(
            slot, domain, group, placed[domain] % group.count, tasks[domain], clock, stats,
            random.Random(rng.random()), clients, gates[domain], held, go)))
        placed[domain] += 1
    stop = asyncio.Event()
    supervisor = asyncio.create_task(supervise(list(groups.values()), stop))
    prober = asyncio.create_task(probe_health(list(groups.values()), stats, stop))
    while time.monotonic() < warm_deadline and len(held) < len(slots):
        await asyncio.sleep(0.5)
    warmup_seconds = time.monotonic() - t0
    memory = {d: memory_of(g) for d, g in groups.items()}
    client_memory = psutil.Process().memory_full_info().pss  # this process only: the servers are its children
    held_by_domain = collections.Counter(slots[slot] for slot in held)
    sessions_at_memory = len(held)
    print(f"{sessions_at_memory} sessions held after {warmup_seconds:.1f}s; measuring for {args.seconds}s", flush=True)
    measured_from = time.monotonic()
    clock.deadline = measured_from + args.seconds
    go.set()
    killed: list[str] = []
    faults = (asyncio.create_task(inject_faults(list(groups.values()), args.fault_every, clock.deadline, rng, killed))
              if args.fault_every else None)
    await asyncio.gather(*drivers)
    elapsed = time.monotonic() - measured_from
    stop.set()
    await supervisor
    await prober
    if faults:
        faults.cancel()
    for client in clients.values():
        await client.aclose()
    restarts = sum(g.restarts for g in groups.values())
    report(args, stats, counts, tasks, groups, memory, client_memory, held_by_domain, sessions_at_memory,
           len(held), warmup_seconds, elapsed, killed, restarts)


def report(args, stats: Stats, counts, tasks, groups, memory, client_memory, held_by_domain, sessions_at_memory,
           held_at_end, warmup_seconds, elapsed, killed, restarts) -> None:
    domains = list(counts)
    every = [x for v in stats.latencies.values() for x in v]
    opens = [x for v in stats.open_seconds.values() for x in v]
    total_pss = sum(m["pss"] for m in memory.values()) + client_memory
    accounted = stats.episodes_completed + stats.episodes_failed
    mib = 2**20
    print("\n=== fleet ===")
    print(f"mix                     {', '.join(f'{d} {counts[d]} ({len(tasks[d])} tasks)' for d in domains)}")
    print(f"servers                 {sum(g.count for g in groups.values())} "
          f"({', '.join(f'{d} {g.count}' for d, g in groups.items())})")
    print(f"sessions requested      {sum(counts.values())}")
    print(f"sessions held           {sessions_at_memory} after warm-up ({warmup_seconds:.0f}s), "
          f"{held_at_end} at the end")
    print(f"steps/s                 {sum(stats.steps.values()) / elapsed:.1f}")
    print(f"open time ms            p50 {q(opens, 0.5):.0f}  p95 {q(opens, 0.95):.0f}  ({len(opens)} opens)")
    print(f"step latency ms         p50 {q(every, 0.5):.1f}  p95 {q(every, 0.95):.1f}  p99 {q(every, 0.99):.1f}")
    print()
    print("| domain | sessions held | open p50 / p95 ms | steps/s | step p50 / p95 / p99 ms "
          "| health p50 / max ms | PSS MiB/session | cgroup MiB/session |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for d in domains:
        n, m, lat = max(1, held_by_domain[d]), memory[d], stats.latencies[d]
        charged = f"{m['cgroup'] / n / mib:.1f}" if m["cgroup"] else "-"
        print(f"| {d} | {held_by_domain[d]} | {q(stats.open_seconds[d], 0.5):.0f} / "
              f"{q(stats.open_seconds[d], 0.95):.0f} | {stats.steps[d] / elapsed:.1f} | {q(lat, 0.5):.1f} / "
              f"{q(lat, 0.95):.1f} / {q(lat, 0.99):.1f} | {q(stats.health_seconds[d], 0.5):.0f} / "
              f"{q(stats.health_seconds[d], 1.0):.0f} | {m['pss'] / n / mib:.1f} | {charged} |")
    print(f"| all | {sessions_at_memory} | {q(opens, 0.5):.0f} / {q(opens, 0.95):.0f} | "
          f"{sum(stats.steps.values()) / elapsed:.1f} | {q(every, 0.5):.1f} / {q(every, 0.95):.1f} / "
          f"{q(every, 0.99):.1f} | | {total_pss / max(1, sessions_at_memory) / mib:.1f} | |")
    print()
    unseen = sum(m["unseen"] for m in memory.values())
    contained = sum(m["contained"] for m in memory.values())
    print(f"memory                  {total_pss / 2**30:.2f} GiB PSS total (driver {client_memory / mib:.0f} MiB), "
          f"{total_pss / max(1, sessions_at_memory) / mib:.1f} MiB per session; "
          f"{sum(m['cgroup'] for m in memory.values()) / 2**30:.2f} GiB charged to session control groups; "
          f"{unseen} of their {contained} processes outside the server trees (counted)")
    print(f"failed steps            {stats.failed_steps}")
    print(f"episodes                {stats.episodes_started} started, {stats.episodes_completed} completed, "
          f"{stats.episodes_failed} failed, {stats.episodes_started - accounted} unaccounted")
    print(f"sessions                {stats.sessions_created} created, {stats.sessions_closed} closed at the end, "
          f"{stats.close_failures} failed to close")
    print(f"servers killed          {len(killed)}; servers restarted {restarts}")
    if args.verbose:
        print("kills: " + ", ".join(killed))
        for (d, kind), values in sorted(stats.kind_latencies.items()):
            print(f"  {d:8s} {kind:7s} {len(values):5d} steps  p50 {q(values, 0.5):8.1f}  p95 {q(values, 0.95):8.1f}  "
                  f"max {q(values, 1.0):8.1f} ms")
    reopen = sorted(stats.reopen_seconds) or [float("nan")]
    print(f"sessions lost           {stats.sessions_replaced} mid-episode with their server; "
          f"{len(stats.reopen_seconds)} sessions reopened on a replacement before the end, "
          f"median {reopen[len(reopen) // 2]:.1f}s, max {reopen[-1]:.1f}s after the loss")
    if stats.failure_reasons:
        print("failure reasons         " + "; ".join(f"{k} x{v}" for k, v in stats.failure_reasons.most_common()))
        for reason, example in stats.failure_examples.items():
            print(f"  e.g. {reason}: {example}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=240, help="at most this long to open every session")
    parser.add_argument("--mix", "--domains", dest="mix", type=parse_mix, default="pytool,web",
                        help="domain[=weight],...: the domains, sessions split in proportion to the weights "
                             "(1 where none is given); e.g. web=250,pytool=200,desktop=50 (--domains: alias)")
    parser.add_argument("--servers-per-domain", type=parse_servers, default=str(DEFAULT_SERVERS),
                        help=f"N for every domain, or domain=N,... (others get {DEFAULT_SERVERS}); "
                             "never more than the domain's sessions")
    parser.add_argument("--web-prefix", default="miniwob/click-", help="web tasks to sample (id prefix)")
    parser.add_argument("--desktop-prefix", default="desktop/",
                        help="desktop tasks to sample (id prefix); the default is the native pack: an openbox "
                             "desktop alone (terminal-file) or with mousepad open (editor-save), no OSWorld app")
    parser.add_argument("--create-concurrency", type=int, default=8, help="sessions opening at once, per domain")
    parser.add_argument("--request-timeout", type=float, default=120.0,
                        help="the servers' per-call timeout; a step slower than this replaces the session")
    parser.add_argument("--fault-every", type=float, default=0.0, help="kill a random server every S seconds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.sessions < len(args.mix):
        parser.error(f"--sessions {args.sessions} is fewer than the {len(args.mix)} domains of --mix")
    if extra := sorted(set(args.servers_per_domain) - {""} - set(args.mix)):
        parser.error(f"--servers-per-domain names {', '.join(extra)}, not in --mix {', '.join(args.mix)}")
    if args.create_concurrency < 1:
        parser.error(f"--create-concurrency must be at least 1, got {args.create_concurrency}")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
