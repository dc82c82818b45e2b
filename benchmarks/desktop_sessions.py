"""Desktop sessions at 1, 10 and 30 at once: memory, reset, step and screenshot costs.

Each session is its own Xvfb + openbox + one xterm (the light load that 30 sessions fit on a small
machine). Per session count it reports: PSS memory per session (Xvfb + every process of the session
user), median reset time, median/p95 step time (one XTEST action plus one screenshot, all sessions
stepping concurrently), and the screenshot capture time beside the raw cost of copying a frame of the
same size in memory (numpy).

Run:  .venv/bin/python benchmarks/desktop_sessions.py [--counts 1 10 30] [--steps 40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import numpy as np
import psutil

from mintgym.action_spaces import Click, Move
from mintgym.environments.desktop.host import DesktopHost


def pss_mb(env) -> float:
    procs = list(env.sandbox.processes())
    procs.append(psutil.Process(env.xserver.proc.pid))
    total = 0
    for proc in procs:
        try:
            total += proc.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total / 2**20


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def run(count: int, steps: int, resets: int) -> dict:
    host = DesktopHost()
    await host.start()
    envs = await asyncio.gather(*(host.create({}) for _ in range(count)))
    try:
        reset_times: list[float] = []
        for _ in range(resets):
            for env in envs:  # sequential: the reset time of one session, not of the machine's queue
                await env.reset(None, 0)
                reset_times.append(env.last_reset_seconds)
        for env in envs:
            await env.launch(["mintgym-terminal"])
        await asyncio.sleep(1.5 + 0.1 * count)
        mem = [pss_mb(env) for env in envs]

        step_times: list[float] = []

        async def stepper(env) -> None:
            for i in range(steps):
                action = Click(x=100 + i, y=100) if i % 2 else Move(x=200, y=150 + i)
                t0 = time.perf_counter()
                await env.execute(action)
                await env.screenshot()
                step_times.append(time.perf_counter() - t0)

        await asyncio.gather(*(stepper(env) for env in envs))

        grab_times = []
        for _ in range(50):
            t0 = time.perf_counter()
            envs[0]._grab_sync()
            grab_times.append(time.perf_counter() - t0)
        w, h = envs[0].screen_size
        frame = np.random.randint(0, 255, (h, w, 3), dtype=np.uint8)
        copy_times = []
        for _ in range(50):
            t0 = time.perf_counter()
            frame.copy()
            copy_times.append(time.perf_counter() - t0)
        action_times = []
        for i in range(100):
            t0 = time.perf_counter()
            envs[0]._input.click(300 + i, 300)
            action_times.append(time.perf_counter() - t0)
        return {
            "sessions": count, "pss_mb": statistics.median(mem), "reset_s": statistics.median(reset_times),
            "step_ms": 1e3 * statistics.median(step_times), "step_p95_ms": 1e3 * pct(step_times, 0.95),
            "grab_ms": 1e3 * statistics.median(grab_times), "copy_ms": 1e3 * statistics.median(copy_times),
            "click_ms": 1e3 * statistics.median(action_times),
        }
    finally:
        await asyncio.gather(*(env.close() for env in envs))
        await host.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 10, 30])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--resets", type=int, default=3)
    args = parser.parse_args()
    rows = [await run(n, args.steps, args.resets) for n in args.counts]
    head = ("sessions", "PSS/session MB", "reset median s", "step median ms", "step p95 ms",
            "screenshot ms", "numpy copy ms", "XTEST click ms")
    print(" | ".join(head))
    for r in rows:
        print(" | ".join([f"{r['sessions']:>8}", f"{r['pss_mb']:>14.1f}", f"{r['reset_s']:>14.3f}",
                          f"{r['step_ms']:>14.2f}", f"{r['step_p95_ms']:>11.2f}", f"{r['grab_ms']:>13.2f}",
                          f"{r['copy_ms']:>13.2f}", f"{r['click_ms']:>14.3f}"]))


if __name__ == "__main__":
    asyncio.run(main())
