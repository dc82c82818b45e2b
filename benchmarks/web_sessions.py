"""How many web sessions fit in one host, and how fast they step.

Starts 10, 50 and 100 concurrent sessions in ONE WebHost (one Chromium, one browser context each), resets
each on a MiniWoB++ task, and times steps (a click + the screenshot that follows, through Episode).
In the same run it measures one-browser-per-session at 10 sessions for comparison. Memory is PSS summed
over this Python process and every process below it (Chromium's browser, renderers, GPU/utility processes
and Playwright's driver), so shared pages are counted once.

    .venv/bin/python benchmarks/web_sessions.py [--levels 10 50 100] [--steps 5] [--task miniwob/click-button]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import psutil

from mintgym.action_spaces import Click
from mintgym.env import registration
from mintgym.env.episode import Episode
from mintgym.environments.web.host import WebHost

GIB = 1024**3
#: MiniWoB's own 10 s episode timer would end episodes while 100 sessions queue for 2 CPUs.
OPTIONS = {"miniwob_time_limit_ms": 600_000}


def tree_pss() -> int:
    """PSS in bytes of this process and all its descendants."""
    me = psutil.Process()
    total = 0
    for proc in [me, *me.children(recursive=True)]:
        try:
            total += proc.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def drive(episodes: list[Episode], task, steps: int) -> dict:
    t0 = time.perf_counter()
    reset_times: list[float] = []

    async def reset(ep: Episode, seed: int) -> None:
        start = time.perf_counter()
        await ep.reset(task, seed)
        reset_times.append(time.perf_counter() - start)

    await asyncio.gather(*(reset(ep, i) for i, ep in enumerate(episodes)))
    reset_wall = time.perf_counter() - t0
    step_times: list[float] = []

    async def play(ep: Episode) -> None:
        for i in range(steps):
            if ep.ended:
                await ep.reset(task, i)
            start = time.perf_counter()
            await ep.step(Click(x=5 + i, y=5))  # on the query text: changes nothing, ends nothing
            step_times.append(time.perf_counter() - start)

    t1 = time.perf_counter()
    await asyncio.gather(*(play(ep) for ep in episodes))
    wall = time.perf_counter() - t1
    return {"reset_median": statistics.median(reset_times), "reset_p95": pct(reset_times, 0.95),
            "reset_wall": reset_wall, "step_median": statistics.median(step_times),
            "step_p95": pct(step_times, 0.95), "steps_per_s": len(step_times) / wall}


async def shared_browser(n: int, task, steps: int, baseline: int) -> dict:
    host = WebHost()
    await host.start()
    try:
        t0 = time.perf_counter()
        envs = await asyncio.gather(*(host.create(OPTIONS) for _ in range(n)))
        create_wall = time.perf_counter() - t0
        episodes = [Episode(e) for e in envs]
        result = await drive(episodes, task, steps)
        total = tree_pss()
        result.update(mode=f"shared x{n}", sessions=n, create_wall=create_wall, total_gib=total / GIB,
                      per_session_mib=total / n / 2**20, marginal_mib=(total - baseline) / n / 2**20)
        for e in envs:
            await e.close()
        return result
    finally:
        await host.stop()


async def browser_per_session(n: int, task, steps: int, baseline: int) -> dict:
    hosts = [WebHost() for _ in range(n)]
    try:
        t0 = time.perf_counter()
        for h in hosts:
            await h.start()
        envs = await asyncio.gather(*(h.create(OPTIONS) for h in hosts))
        create_wall = time.perf_counter() - t0
        result = await drive([Episode(e) for e in envs], task, steps)
        total = tree_pss()
        result.update(mode=f"browser-per-session x{n}", sessions=n, create_wall=create_wall,
                      total_gib=total / GIB, per_session_mib=total / n / 2**20,
                      marginal_mib=(total - baseline) / n / 2**20)
        return result
    finally:
        for h in hosts:
            await h.stop()


def show(rows: list[dict]) -> None:
    head = (f"{'mode':<26}{'total GiB':>10}{'MiB/sess':>10}{'marg MiB':>10}{'create s':>10}"
            f"{'reset med':>10}{'reset p95':>10}{'step med':>10}{'step p95':>10}{'steps/s':>9}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['mode']:<26}{r['total_gib']:>10.2f}{r['per_session_mib']:>10.1f}{r['marginal_mib']:>10.1f}"
              f"{r['create_wall']:>10.2f}{r['reset_median']:>10.3f}{r['reset_p95']:>10.3f}"
              f"{r['step_median']:>10.3f}{r['step_p95']:>10.3f}{r['steps_per_s']:>9.1f}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--steps", type=int, default=5, help="steps per session at each level")
    parser.add_argument("--task", default="miniwob/click-button")
    parser.add_argument("--compare", type=int, default=10, help="sessions for one-browser-per-session")
    args = parser.parse_args()
    task = registration.task(args.task)
    baseline = tree_pss()
    print(f"task {task.id}, viewport {task.viewport}, {args.steps} steps/session, "
          f"baseline PSS of this process {baseline / 2**20:.0f} MiB, {psutil.cpu_count()} CPUs")
    rows = [await shared_browser(n, task, args.steps, baseline) for n in args.levels]
    rows.append(await browser_per_session(args.compare, task, args.steps, baseline))
    show(rows)
    shared = next((r for r in rows if r["sessions"] == args.compare and r["mode"].startswith("shared")), None)
    if shared is not None:
        ratio = rows[-1]["per_session_mib"] / shared["per_session_mib"]
        print(f"\nper-session memory, browser-per-session / shared at {args.compare} sessions: {ratio:.1f}x")
    biggest = max((r for r in rows if r["mode"].startswith("shared")), key=lambda r: r["sessions"])
    print(f"{biggest['sessions']} sessions in one host: {biggest['total_gib']:.2f} GiB total "
          f"({'under' if biggest['total_gib'] < 8 else 'OVER'} the 8 GiB target)")


if __name__ == "__main__":
    asyncio.run(main())
