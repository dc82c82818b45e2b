"""Steps per second of MintGym's vector env (one batch request per step) against gymnasium's SyncVectorEnv over
``mintgym.make`` (one request per env per step), on one MiniWoB task, same server, same seeds and actions.

Both vector envs run N sessions on one local web env server with raw frames and NEXT_STEP autoreset; each is
reset with the same seed and stepped with the same action samples (pointer actions on the task's 160x210
screen), after a few warm-up steps. Prints one line per N, the two rates side by side.

    python benchmarks/vector_env.py [--task miniwob/click-test] [--sizes 8 32] [--steps 30]
"""

from __future__ import annotations

import argparse
import time

from gymnasium.vector import SyncVectorEnv

import mintgym
from mintgym.env import registration
from mintgym.runtime.make import provider
from mintgym.runtime.vector import MintVectorEnv

WARMUP = 3


def steps_per_second(venv, num_envs: int, steps: int, seed: int) -> float:
    """Env steps per second (num_envs per vector step) over ``steps`` vector steps after the warm-up."""
    venv.reset(seed=seed)
    venv.action_space.seed(seed)
    actions = [venv.action_space.sample() for _ in range(WARMUP + steps)]
    for action in actions[:WARMUP]:
        venv.step(action)
    started = time.perf_counter()
    for action in actions[WARMUP:]:
        venv.step(action)
    return num_envs * steps / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="miniwob/click-test")
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--steps", type=int, default=30, help="timed vector steps per run")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    domain, _ = registration.resolve(args.task)
    backend = provider("local")
    handle = backend.start(domain)
    try:
        backend.wait_ready(handle, 180)
        url = handle.base_url
        print(f"{args.task} on one local {domain} env server, raw frames, {args.steps} timed steps (+{WARMUP} warm-up)")
        print(f"{'N':>4}  {'SyncVectorEnv steps/s':>22}  {'MintVectorEnv steps/s':>22}  {'speed-up':>8}")
        for n in args.sizes:
            sync = SyncVectorEnv([lambda: mintgym.make(args.task, base_url=url, encoding="raw") for _ in range(n)])
            try:
                baseline = steps_per_second(sync, n, args.steps, args.seed)
            finally:
                sync.close()
            batched = MintVectorEnv(args.task, n, base_url=url, encoding="raw")
            try:
                rate = steps_per_second(batched, n, args.steps, args.seed)
            finally:
                batched.close()
            print(f"{n:>4}  {baseline:>22.1f}  {rate:>22.1f}  {rate / baseline:>7.1f}x", flush=True)
    finally:
        backend.stop(handle)


if __name__ == "__main__":
    main()
