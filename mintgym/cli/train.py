"""``mintgym train``: the RL loop from a YAML config (see examples/quickstart.yaml), with dotted overrides.

    mintgym train --config examples/quickstart.yaml --out runs/q train.lr=0.02 rollout.group_size=8

Any field of the config can be overridden as ``section.key=value`` (values are YAML: ``3e-4``, ``true``,
``null``, ``[1, 2]``; list items by index: ``tasks.0.seeds=[1,2]``). A bad file, key or value is one
``error:`` line naming the key and what it wanted (exit status 2).

With the learner sharded over the GPUs of one node (FSDP2), torchrun starts it, one process per GPU::

    torchrun --nproc-per-node 4 -m mintgym.cli train --config RUN.yaml --out OUT

Rank 0 runs the run; the other ranks follow its learner calls on their shards (:mod:`mintgym.rl.lockstep`).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import typer

#: The shortcut options and the config key each one sets.
SHORTCUTS = {"steps": "train.steps", "mode": "train.mode", "seed": "train.seed", "max_lag": "train.max_lag",
             "correction": "train.correction", "eval_groups": "eval.groups"}


def register(app: typer.Typer) -> None:
    @app.command("train")
    def train_command(
        overrides: list[str] = typer.Argument(None, metavar="KEY=VALUE",
                                              help="config overrides: train.lr=3e-4 rollout.group_size=8"),
        config: Path = typer.Option(..., "--config", help="run config YAML (examples/quickstart.yaml)"),
        out: Path = typer.Option(..., "--out", help="run folder: logs, TensorBoard, checkpoints, reward curve"),
        steps: int = typer.Option(None, help="train.steps (past a finished run's last step: train further)"),
        mode: str = typer.Option(None, help="train.mode: async | sync"),
        seed: int = typer.Option(None, help="train.seed"),
        max_lag: int = typer.Option(None, "--max-lag", help="train.max_lag"),
        correction: str = typer.Option(None, help="train.correction"),
        eval_groups: int = typer.Option(None, "--eval-groups", help="eval.groups"),
        verbose: bool = typer.Option(False, "--verbose", help="show Ray's own log lines (log.ray: true)"),
    ) -> None:
        """Train a policy with async (or sync) RL; resumes from OUT's last checkpoint if there is one."""
        from mintgym.config import ConfigError, RunConfig  # light: no torch, no Ray
        from mintgym.errors import MintGymError

        given = {"steps": steps, "mode": mode, "seed": seed, "max_lag": max_lag, "correction": correction,
                 "eval_groups": eval_groups}
        items = [f"{SHORTCUTS[k]}={v}" for k, v in given.items() if v is not None] + list(overrides or [])
        if verbose:
            items.append("log.ray=true")
        try:
            cfg = RunConfig.from_yaml(config, items)
        except ConfigError as err:
            if os.environ.get("RANK", "0") != "0":  # a rank torchrun started, not the first: rank 0 says it, once
                raise SystemExit(0) from None  # status 0, so torchrun waits for rank 0 rather than stopping it
            raise MintGymError(str(err)) from None  # one line, exit status 2 (mintgym.cli.one_line)
        if os.environ.get("RANK", "0") == "0":  # the config holds: say so before torch and Ray take seconds to load
            typer.echo(f"mintgym train: {config} -> {out}; loading the trainer (torch, Ray)")
        from mintgym.rl import lockstep, train
        ranks = lockstep.join(cfg, out) if lockstep.launched() else None
        if ranks is not None and not ranks.leader:
            lockstep.follow(cfg, ranks)
            return
        result = train(cfg, out, log=functools.partial(print, flush=True),  # lines show at once in a log file
                       ranks=ranks)
        if ranks is not None:
            ranks.stop()
        if result.finished:
            return  # train() said so, and how to train further
        since = f" (resumed at step {result.resumed_from})" if result.resumed_from else ""
        typer.echo(f"done: {result.steps} steps in {result.seconds:.0f}s{since}; reward first steps "
                   f"{result.mean_reward(first=True):.3f} -> last steps {result.mean_reward(first=False):.3f}; "
                   f"reward curve {out / 'reward_curve.png'}, TensorBoard {out / 'tb'}")
        if result.checkpoint is not None:
            typer.echo(f"checkpoint: {result.checkpoint}")
            typer.echo(f"evaluate it: mintgym eval --model {out} --step {result.steps} --out {out}-eval")
