"""What the web side channels cost per click step: none, grounded ``a11y``, and ``a11y`` with set-of-marks.

Two views of the same thing, side by side:

* **client**: ``mintgym.make`` with the default backend (a local env server, raw frames over loopback); one
  session per configuration on the same server, stepped in turns so they share the machine's state. A step
  is ``env.step(click)`` as a gymnasium user sees it: the click, the settle, the screenshot and the channels.
* **in-process**: an ``Episode`` on a ``WebHost`` (no HTTP), plus the grounding snapshot alone (one
  ``Runtime.evaluate`` round trip), with the pruned DOM, and the set-of-marks drawing alone.

Each click lands on the task's instruction text, which changes nothing and ends nothing; MiniWoB's own episode
timer is lifted so no reset falls inside the timing.

    .venv/bin/python benchmarks/web_side_channels.py [--steps 40] [--tasks miniwob/click-button miniwob/social-media]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import mintgym
from mintgym.action_spaces import Click
from mintgym.client.sync import EnvClient
from mintgym.env import registration
from mintgym.env.episode import Episode
from mintgym.environments.web import grounding
from mintgym.environments.web.host import WebHost

OPTIONS = {"miniwob_time_limit_ms": 3_600_000}
#: name -> (side channels, extra session options)
CONFIGS: dict[str, tuple[tuple[str, ...], dict]] = {
    "none": ((), {}),
    "a11y": (("a11y",), {}),
    "a11y+set-of-marks": (("a11y",), {"set_of_marks": True}),
}


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{statistics.median(values) * 1000:7.1f} {p95 * 1000:7.1f}"


def click(i: int) -> Click:
    return Click(x=4 + i % 20, y=6)


# ---- through the env server ---------------------------------------------------------------------------------
def client_run(task_id: str, steps: int) -> dict[str, list[float]]:
    first = mintgym.make(task_id, env_options=OPTIONS)
    clients: dict[str, EnvClient] = {"none": first.unwrapped}
    try:
        base = first.unwrapped
        for name, (channels, extra) in CONFIGS.items():
            if name != "none":
                clients[name] = EnvClient(base.base_url, domain="web", task_id=task_id, encoding=base.encoding,
                                          side_channels=channels, env_options={**OPTIONS, **extra})
        for env in clients.values():
            env.reset(seed=0)
        times: dict[str, list[float]] = {name: [] for name in clients}
        for i in range(steps + 3):
            for name, env in clients.items():
                start = time.perf_counter()
                _obs, _reward, terminated, truncated, _info = env.step(click(i))
                if i >= 3:  # the first steps warm caches up
                    times[name].append(time.perf_counter() - start)
                if terminated or truncated:
                    env.reset(seed=i)
        return times
    finally:
        for name, env in clients.items():
            if name != "none":
                env.close()
        first.close()


# ---- in-process ---------------------------------------------------------------------------------------------
async def inprocess_run(task_id: str, steps: int) -> tuple[dict[str, list[float]], dict[str, list[float]], int]:
    host = WebHost()
    await host.start()
    task = registration.task(task_id)
    try:
        episodes = {}
        for name, (channels, extra) in CONFIGS.items():
            env = await host.create({**OPTIONS, **extra})
            episodes[name] = Episode(env, frozenset(channels))
            await episodes[name].reset(task, 0)
        times: dict[str, list[float]] = {name: [] for name in episodes}
        for i in range(steps + 3):
            for name, ep in episodes.items():
                start = time.perf_counter()
                out = await ep.step(click(i))
                if i >= 3:
                    times[name].append(time.perf_counter() - start)
                if out.terminated or out.truncated:
                    await ep.reset(task, i)
        env = episodes["none"].env
        parts: dict[str, list[float]] = {"snapshot": [], "snapshot+dom": [], "draw marks": [], "render text": []}
        shot = await env.screenshot()
        for _ in range(steps):
            start = time.perf_counter()
            snap = await env.grounding()
            parts["snapshot"].append(time.perf_counter() - start)
            start = time.perf_counter()
            await env.grounding(html=True)
            parts["snapshot+dom"].append(time.perf_counter() - start)
            start = time.perf_counter()
            grounding.draw_marks(shot, snap)
            parts["draw marks"].append(time.perf_counter() - start)
            start = time.perf_counter()
            grounding.render(snap)
            parts["render text"].append(time.perf_counter() - start)
        for ep in episodes.values():
            await ep.env.close()
        return times, parts, len(snap.elements)
    finally:
        await host.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--tasks", nargs="+", default=["miniwob/click-button", "miniwob/social-media"])
    args = parser.parse_args()
    for task_id in args.tasks:
        through_server = client_run(task_id, args.steps)
        inproc, parts, count = asyncio.run(inprocess_run(task_id, args.steps))
        print(f"\n{task_id}: click step latency, ms (median p95), {args.steps} steps each; {count} elements listed")
        print(f"{'configuration':20s} {'client (env server)':>19s} {'in-process':>17s}")
        for name in CONFIGS:
            print(f"{name:20s}   {ms(through_server[name])}   {ms(inproc[name])}")
        print("parts, in-process:  " + ", ".join(f"{k} {statistics.median(v) * 1000:.2f}" for k, v in parts.items()))


if __name__ == "__main__":
    main()
