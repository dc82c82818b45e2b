"""The blind baseline of an answer-agent training config: what a policy that never looks at the screen can score.

A blind policy still reads the instruction, and an instruction can narrow the answer (pytool's largest-area
names the colours in the image: with K named, guessing among them scores 1/K, not 1/8). For every held-out
seed of the config (``eval_seeds``, else ``seeds``; the first ``--seeds`` of them) and every option of the
answer agent (each answer of ``choices``, or each cell of ``click_grid``) this resets the task through
``mintgym.make`` (the default backend: a local env server), plays that option (``done(answer=...)``, or a
pixel click at the cell's centre) and reads the task's own reward. From that table it scores, on the held-out
seeds, every blind policy of these kinds:

- always the same option;
- the j-th option the instruction names (in the order it names them), and a uniform guess among them;
- the named option ranked first by a preference order fitted on ``--fit-seeds`` training seeds (how often
  each option is right when it is named), i.e. what a blind learner could pick up from the training seeds.

It prints each policy's mean reward and the best of them: the bound a trained policy must beat by looking.

    .venv/bin/python benchmarks/must_see_baseline.py [--config examples/must_see.yaml] [--seeds N] [--fit-seeds N]
"""

from __future__ import annotations

import argparse
import json
import re
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


def named_options(instruction: str, labels: list[str]) -> list[int]:
    """The options whose label the instruction names as a word, in the order it first names them."""
    found = []
    for k, label in enumerate(labels):
        match = re.search(rf"(?<!\w){re.escape(label)}(?!\w)", instruction, flags=re.IGNORECASE)
        if match:
            found.append((match.start(), k))
    return [k for _, k in sorted(found)]


def play_every_option(env, seeds: list[int], options) -> tuple[list[list[float]], list[str]]:
    """rewards[seed index][option] of playing each option once from a fresh reset, and each seed's instruction."""
    rewards, instructions = [], []
    for seed in seeds:
        row = []
        for _, action in options:
            obs, _ = env.reset(seed=seed)
            height, width = obs["screenshot"].shape[:2]
            _, reward, terminated, truncated, _ = env.step(action((width, height)))
            if not (terminated or truncated):
                _, reward, *_ = env.step("done(success=False)")
            row.append(float(reward))
        rewards.append(row)
        instructions.append(obs["instruction"])
    return rewards, instructions


def blind_policies(rewards, instructions, labels, fit_rewards, fit_instructions) -> dict[str, float]:
    """Mean held-out reward of each blind policy (see the module docstring)."""
    n = len(rewards)
    scores = {f"always {label}": sum(r[k] for r in rewards) / n for k, label in enumerate(labels)}
    named = [named_options(text, labels) for text in instructions]
    most = max((len(x) for x in named), default=0)
    for j in range(most):
        scores[f"named option #{j + 1}"] = sum(r[x[j]] for r, x in zip(rewards, named, strict=True) if len(x) > j) / n
    if most:
        scores["uniform among the named"] = sum(sum(r[k] for k in x) / len(x)
                                                for r, x in zip(rewards, named, strict=True) if x) / n
    if fit_rewards:
        right, seen = [0.0] * len(labels), [0] * len(labels)
        for r, text in zip(fit_rewards, fit_instructions, strict=True):
            for k in named_options(text, labels):
                right[k] += r[k]
                seen[k] += 1
        rank = sorted(range(len(labels)), key=lambda k: -(right[k] / seen[k] if seen[k] else 0.0))
        position = {k: i for i, k in enumerate(rank)}
        scores["named option preferred on training seeds"] = sum(
            r[min(x, key=position.__getitem__)] for r, x in zip(rewards, named, strict=True) if x) / n
    return scores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="examples/must_see.yaml")
    parser.add_argument("--seeds", type=int, default=None, help="only the first N held-out seeds")
    parser.add_argument("--fit-seeds", type=int, default=128,
                        help="training seeds the preference policy is fitted on (0: none)")
    args = parser.parse_args()
    cfg = yaml.safe_load(Path(args.config).read_text())
    for task in cfg["tasks"]:
        domain = task.get("env_domain") or task["id"].split("/")[0]
        seeds = task.get("eval_seeds") or task["seeds"]
        seeds = seeds[:args.seeds] if args.seeds else seeds
        fit_seeds = [s for s in task["seeds"] if s not in set(seeds)][:args.fit_seeds]
        options = _options(cfg, domain)
        labels = [label for label, _ in options]
        env_options = next((e.get("session_options", {}) for e in cfg.get("envs", []) if e["domain"] == domain), {})
        env = mintgym.make(task["id"], env_options=env_options)
        try:
            rewards, instructions = play_every_option(env, seeds, options)
            fit_rewards, fit_instructions = play_every_option(env, fit_seeds, options)
        finally:
            env.close()
        scores = blind_policies(rewards, instructions, labels, fit_rewards, fit_instructions)
        solved = sum(1 for r in rewards if any(r))
        best = max(scores, key=scores.get)
        print(f"{task['id']}: {len(seeds)} held-out seeds, {len(options)} options, preference fitted on "
              f"{len(fit_seeds)} training seeds")
        print("  blind policy                                  mean reward")
        for name, score in scores.items():
            print(f"  {name:44s}  {score:.3f}")
        print(f"  best blind policy: {scores[best]:.3f} ({best}); seeds some option solves: {solved}/{len(seeds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
