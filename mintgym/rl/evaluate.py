"""Layer 7: the final evaluation of a run: the last weights on every task, not trained on.

The workers stop their continuous play, load the final weights, and play ``train.eval_groups`` groups of
every task on its ``eval_seeds`` (held-out seeds where the config names them); the rewards are summed up per
domain. Written to ``<out>/final_eval.json`` by the loop.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mintgym.rl.components import Run


def final_eval(run: Run, groups_per_task: int, temperature: float | None = None) -> dict[str, Any]:
    """Play ``groups_per_task`` groups of every task with the final weights (sampled at ``temperature``, None:
    the rollout's); rewards per domain and group."""
    import ray

    run.stop_play()
    run.publish(final=True)
    run.sync.wait_all()
    n = len(run.workers)
    parts = ray.get([w.evaluate.remote(groups_per_task, (i, n), temperature) for i, w in enumerate(run.workers)])
    groups = [g for part in parts for g in part]
    domains: dict[str, dict[str, float]] = {}
    for d in run.cfg.domains:
        rewards = [r for g in groups if g["domain"] == d for r in g["rewards"]]
        domains[d] = {"mean_reward": sum(rewards) / len(rewards) if rewards else math.nan,
                      "episodes": len(rewards),
                      "failed_episodes": sum(g["errors"] for g in groups if g["domain"] == d)}
    return {"version": run.learner.version, "temperature": run.cfg.rollout.temperature if temperature is None
            else temperature, "domains": domains, "groups": groups}
