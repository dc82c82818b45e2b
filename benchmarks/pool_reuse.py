"""What a cold web session costs, and what the EnvPool's order of handing out idle sessions saves.

A fresh browser context loads and compiles a MiniWoB page from nothing on its first episode; later
episodes in the same context are several times cheaper. An ``EnvPool`` hands out the most recently
returned idle session first, so rounds of K concurrent episodes over a pool of N > K sessions reuse the
same K warm sessions. This script plays ``--rounds`` rounds of ``--concurrent`` MiniWoB click-test
episodes (reset, one missed click, ``done``) over ``--pool`` sessions on a local web env server, twice,
each time on a fresh server: with the sessions handed out in turn (every round on sessions never used
before, as a first-in-first-out pool does until it has cycled through all N) and through ``EnvPool``.
It prints the seconds per round and the sessions each touched, side by side.

    .venv/bin/python benchmarks/pool_reuse.py [--pool 64] [--concurrent 16] [--rounds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from mintgym.action_spaces import Click, Done
from mintgym.client.aio import AsyncEnvClient, AsyncSession
from mintgym.runtime.fleet import start_env_servers
from mintgym.runtime.local import LocalProvider
from mintgym.runtime.pool import EnvPool

TASK, SEED = "miniwob/click-test", 4
OPTIONS = {"miniwob_time_limit_ms": 60_000}


async def _episode(session: AsyncSession, started: bool = False) -> None:
    if not started:
        await session.reset(TASK, SEED)
    await session.step(Click(x=5, y=5))  # a corner: the button is never there
    await session.step(Done(success=False))


async def in_turn(url: str, args) -> tuple[list[float], int]:
    """Round r plays on sessions r*K .. r*K+K-1 (wrapping): a pool cycling through all of its sessions."""
    async with AsyncEnvClient(url, encoding="raw") as client:
        sessions = await asyncio.gather(*(client.session((), OPTIONS) for _ in range(args.pool)))
        seconds, used = [], set()
        for r in range(args.rounds):
            batch = [sessions[(r * args.concurrent + i) % args.pool] for i in range(args.concurrent)]
            used |= {s.session_id for s in batch}
            t0 = time.perf_counter()
            await asyncio.gather(*(_episode(s) for s in batch))
            seconds.append(time.perf_counter() - t0)
        for s in sessions:
            await s.close()
    return seconds, len(used)


async def pooled(url: str, args) -> tuple[list[float], int]:
    """The same rounds through ``EnvPool.checkout``/``finish``."""
    async with AsyncEnvClient(url, encoding="raw") as client:
        pool = await EnvPool(client, args.pool, env_options=OPTIONS).start()
        seconds, used = [], set()

        async def one() -> None:
            prepared = await pool.checkout(TASK, SEED)
            used.add(prepared.session.session_id)
            await _episode(prepared.session, started=True)
            await pool.finish(prepared.session, None)

        for _ in range(args.rounds):
            t0 = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(args.concurrent)))
            seconds.append(time.perf_counter() - t0)
        await pool.close()
    return seconds, len(used)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pool", type=int, default=64)
    parser.add_argument("--concurrent", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)
    if not 0 < args.concurrent <= args.pool:
        parser.error(f"--concurrent must be between 1 and --pool ({args.pool}), got {args.concurrent}")
    rows = {}
    for name, play in (("in turn", in_turn), ("EnvPool", pooled)):
        with start_env_servers(LocalProvider(), "web") as servers:
            rows[name] = asyncio.run(play(servers.urls[0], args))
    print(f"{args.rounds} rounds of {args.concurrent} concurrent {TASK} episodes over {args.pool} sessions "
          "(seconds per round)")
    print(f"{'order':10s} " + " ".join(f"{'round ' + str(r + 1):>8s}" for r in range(args.rounds))
          + f" {'total':>7s} {'sessions used':>14s}")
    for name, (seconds, used) in rows.items():
        print(f"{name:10s} " + " ".join(f"{s:8.2f}" for s in seconds) + f" {sum(seconds):7.2f} {used:14d}")


if __name__ == "__main__":
    main()
