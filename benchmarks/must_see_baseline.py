"""The blind baseline of a click-grid training config: what a policy that never looks at the screen can score.

For every seed of the config's evaluation (``eval_seeds``, else ``seeds``) and every cell of the answer agent's
click grid, it resets the task through ``mintgym.make`` (the default backend: a local env server, real
Chromium), clicks the cell's centre with a pixel click, and reads the task's own reward. A blind policy picks
cells by a distribution that cannot depend on the seed, so its best expected score is the best single cell's
mean reward over the seeds; that is the bound printed (with the hit table per cell, and how many seeds no cell
solves).

    .venv/bin/python benchmarks/must_see_baseline.py [--config examples/must_see.yaml] [--split eval|train]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

import mintgym
from mintgym.agents.answer import grid_point


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="examples/must_see.yaml")
    parser.add_argument("--split", choices=("eval", "train"), default="eval")
    args = parser.parse_args()
    cfg = yaml.safe_load(Path(args.config).read_text())
    grids = cfg["agent"]["options"]["click_grid"]
    for task in cfg["tasks"]:
        domain = task.get("env_domain") or task["id"].split("/")[0]
        seeds = task.get("eval_seeds") if args.split == "eval" else None
        seeds = seeds or task["seeds"]
        cols, rows = grids[domain]
        options = next((e.get("session_options", {}) for e in cfg.get("envs", []) if e["domain"] == domain), {})
        env = mintgym.make(task["id"], env_options=options)
        hits = [[0.0] * len(seeds) for _ in range(cols * rows)]
        try:
            for i, seed in enumerate(seeds):
                for cell in range(cols * rows):
                    obs, _ = env.reset(seed=seed)
                    height, width = obs["screenshot"].shape[:2]
                    x, y = grid_point(cell, (cols, rows), (width, height))
                    _, reward, terminated, truncated, _ = env.step(f"click(x={x}, y={y})")
                    if not (terminated or truncated):
                        _, reward, *_ = env.step("done(success=False)")
                    hits[cell][i] = float(reward)
        finally:
            env.close()
        means = [sum(h) / len(seeds) for h in hits]
        solved = sum(1 for i in range(len(seeds)) if any(h[i] for h in hits))
        print(f"{task['id']}: {len(seeds)} {args.split} seeds, {cols}x{rows} grid")
        print("  cell  mean reward of always clicking it")
        for cell, mean in enumerate(means):
            print(f"  {cell:4d}  {mean:.3f}")
        print(f"  best blind policy: {max(means):.3f} (cell {means.index(max(means))}); "
              f"seeds some cell solves: {solved}/{len(seeds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
