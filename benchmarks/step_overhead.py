"""What the env server and client add to a step.

For the null environment (a 1280x720 frame, no world) and for pytool (a sandboxed `print`), time a step
called in process (Episode.step on the Environment) and through a local env server + the gymnasium
client over loopback, for each screenshot encoding. Prints median and p95 step time, the added
milliseconds per step, and bytes per frame. Target: at most 3 ms added at the median for raw frames.
The server tunes glibc's allocator at start (:mod:`mintgym.allocator`) and so does this process, unless
``--default-malloc`` (then the in-process baseline and the client page-fault each frame back in).

    python benchmarks/step_overhead.py [--steps 300]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import mintgym
from mintgym.allocator import keep_default_malloc, tune_malloc
from mintgym.env import registration
from mintgym.env.episode import Episode
from mintgym.runtime.make import provider
from mintgym.wire import FrameOptions, encode_image

CASES = {
    "null": ("null/echo", {"type": "click", "x": 640, "y": 360}),
    "pytool": (None, {"type": "python", "code": "print(1 + 1)"}),
}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def inprocess_times(domain: str, task_id: str, action: dict, steps: int) -> tuple[list[float], object]:
    host = registration.host_class(domain)()
    await host.start()
    env = await host.create({})
    episode = Episode(env)
    task = registration.task(task_id)
    times = []
    try:
        await episode.reset(task, 0)
        for _ in range(steps):
            if episode.ended or episode.step_count >= task.max_steps - 1:
                await episode.reset(task, 0)
            t0 = time.perf_counter()
            out = await episode.step(action)
            times.append(time.perf_counter() - t0)
        shot = out.observation.screenshot
    finally:
        await env.close()
        await host.stop()
    return times, shot


def http_times(base_url: str, task_id: str, action: dict, steps: int, encoding: str) -> list[float]:
    env = mintgym.make(task_id, base_url=base_url, encoding=encoding)
    max_steps = registration.task(task_id).max_steps
    times = []
    try:
        env.reset(seed=0)
        count = 0
        for _ in range(steps):
            if count >= max_steps - 1:
                env.reset(seed=0)
                count = 0
            t0 = time.perf_counter()
            env.step(action)
            times.append(time.perf_counter() - t0)
            count += 1
    finally:
        env.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--default-malloc", action="store_true",
                        help="leave this process's allocator at glibc's defaults (the server always tunes its own)")
    args = parser.parse_args()
    if args.default_malloc:
        keep_default_malloc()  # else mintgym.make would tune this process anyway
    tuning = tune_malloc()  # both sides of the comparison, in-process and client, run in this process
    print(f"malloc tuning in this process: {tuning.applied or tuning.reason}")
    rows = []
    for domain, (task_id, action) in CASES.items():
        if task_id is None:
            found = registration.tasks(domain=domain)
            if not found:
                print(f"skipping {domain}: no tasks registered")
                continue
            task_id = found[0].id
        steps = args.steps if domain == "null" else max(30, args.steps // 5)
        base, shot = asyncio.run(inprocess_times(domain, task_id, action, steps))
        base_median = statistics.median(base)
        rows.append((domain, "in-process", base_median, pct(base, 0.95), 0.0, shot.nbytes))
        prov = provider("local")
        handle = prov.start(domain)
        try:
            prov.wait_ready(handle, 120)
            for encoding in ("raw", "png", "jpeg"):
                times = http_times(handle.base_url, task_id, action, steps, encoding)
                size = len(encode_image(shot, FrameOptions(encoding=encoding)))
                median = statistics.median(times)
                rows.append((domain, f"http+{encoding}", median, pct(times, 0.95), median - base_median, size))
        finally:
            prov.stop(handle)
    print(f"\n{'env':8s} {'path':12s} {'median ms':>10s} {'p95 ms':>9s} {'added ms':>9s} {'bytes/frame':>12s}")
    for env, path, median, p95, added, size in rows:
        print(f"{env:8s} {path:12s} {median * 1e3:10.2f} {p95 * 1e3:9.2f} {added * 1e3:9.2f} {size:12d}")
    raw_added = [added for env, path, _, _, added, _ in rows if path == "http+raw"]
    if raw_added:
        verdict = "meets" if max(raw_added) <= 0.003 else "MISSES"
        print(f"\nraw frames over loopback add {max(raw_added) * 1e3:.2f} ms at the median (target <= 3 ms): {verdict}")


if __name__ == "__main__":
    main()
