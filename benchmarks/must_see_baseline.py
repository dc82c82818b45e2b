"""The blind baseline of an answer-agent training config: what a policy that never looks at the screen can score.

For every seed of the config's evaluation (``eval_seeds``, else ``seeds``; the first ``--seeds`` of them) and
every option of the answer agent (each answer of ``choices``, or each cell of ``click_grid``), it resets the
task through ``mintgym.make`` (the default backend: a local env server), plays that option (``done(answer=...)``,
or a pixel click at the cell's centre) and reads the task's own reward. A blind policy picks options by a
distribution that cannot depend on the seed, so its best expected score is the best single option's mean reward
over the seeds; that is the bound printed, with the table per option and how many seeds no option solves.

    .venv/bin/python benchmarks/must_see_baseline.py [--config examples/must_see.yaml] [--split eval|train]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

import mintgym
from mintgym.agents.answer import grid_point


def _options(cfg: dict, domain: str) -> list[tuple[str, object]]:
    """(label, action maker) for every option the answer agent has in ``domain``."""
    agent = cfg["agent"]["options"]
    if domain in agent.get("choices", {}):
        return [(answer, lambda size, a=answer: f"done(answer={json.dumps(a)})")
                for answer in agent["choices"][domain]]
    cols, rows = agent["click_grid"][domain]
    return [(f"cell {cell}", lambda size, c=cell: "click(x={}, y={})".format(*grid_point(c, (cols, rows), size)))
            for cell in range(cols * rows)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="examples/must_see.yaml")
    parser.add_argument("--split", choices=("eval", "train"), default="eval")
    parser.add_argument("--seeds", type=int, default=None, help="only the first N seeds")
    args = parser.parse_args()
    cfg = yaml.safe_load(Path(args.config).read_text())
    for task in cfg["tasks"]:
        domain = task.get("env_domain") or task["id"].split("/")[0]
        seeds = (task.get("eval_seeds") if args.split == "eval" else None) or task["seeds"]
        seeds = seeds[:args.seeds] if args.seeds else seeds
        options = _options(cfg, domain)
        env_options = next((e.get("session_options", {}) for e in cfg.get("envs", []) if e["domain"] == domain), {})
        env = mintgym.make(task["id"], env_options=env_options)
        rewards = [[0.0] * len(seeds) for _ in options]
        try:
            for i, seed in enumerate(seeds):
                for k, (_, action) in enumerate(options):
                    obs, _ = env.reset(seed=seed)
                    height, width = obs["screenshot"].shape[:2]
                    _, reward, terminated, truncated, _ = env.step(action((width, height)))
                    if not (terminated or truncated):
                        _, reward, *_ = env.step("done(success=False)")
                    rewards[k][i] = float(reward)
        finally:
            env.close()
        means = [sum(r) / len(seeds) for r in rewards]
        solved = sum(1 for i in range(len(seeds)) if any(r[i] for r in rewards))
        best = max(range(len(means)), key=means.__getitem__)
        print(f"{task['id']}: {len(seeds)} {args.split} seeds, {len(options)} options")
        print("  option        mean reward of always playing it")
        for (label, _), mean in zip(options, means):
            print(f"  {label:12s}  {mean:.3f}")
        print(f"  best blind policy: {means[best]:.3f} ({options[best][0]}); seeds some option solves: "
              f"{solved}/{len(seeds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
