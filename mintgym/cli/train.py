"""``mintgym train``: the RL loop from a YAML config (see examples/quickstart.yaml), with dotted overrides.

    mintgym train --config examples/quickstart.yaml --out runs/q train.lr=0.02 rollout.group_size=8

Any field of the config can be overridden as ``section.key=value`` (values are YAML: ``3e-4``, ``true``,
``null``, ``[1, 2]``; list items by index: ``tasks.0.seeds=[1,2]``). A bad file, key or value is one
``error:`` line naming the key and what it wanted (exit status 2).
"""

from __future__ import annotations

import functools

from pathlib import Path

import typer

#: The shortcut options and the config key each one sets.
SHORTCUTS = {"steps": "train.steps", "mode": "train.mode", "seed": "train.seed", "max_lag": "train.max_lag",
             "correction": "train.correction", "eval_groups": "train.eval_groups"}


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
        eval_groups: int = typer.Option(None, "--eval-groups", help="train.eval_groups"),
        verbose: bool = typer.Option(False, "--verbose", help="show Ray's own log lines (log.ray: true)"),
    ) -> None:
        """Train a policy with async (or sync) RL; resumes from OUT's last checkpoint if there is one."""
        from mintgym.errors import MintGymError
        from mintgym.trainer.config import ConfigError, RunConfig
        from mintgym.rl import train

        given = {"steps": steps, "mode": mode, "seed": seed, "max_lag": max_lag, "correction": correction,
                 "eval_groups": eval_groups}
        items = [f"{SHORTCUTS[k]}={v}" for k, v in given.items() if v is not None] + list(overrides or [])
        if verbose:
            items.append("log.ray=true")
        try:
            cfg = RunConfig.from_yaml(config, items)
        except ConfigError as err:
            raise MintGymError(str(err)) from None  # one line, exit status 2 (mintgym.cli.one_line)
        result = train(cfg, out, log=functools.partial(print, flush=True))  # lines show at once in a log file
        if result.finished:
            return  # train() said so, and how to train further
        since = f" (resumed at step {result.resumed_from})" if result.resumed_from else ""
        typer.echo(f"done: {result.steps} steps in {result.seconds:.0f}s{since}; reward first steps "
                   f"{result.mean_reward(first=True):.3f} -> last steps {result.mean_reward(first=False):.3f}; "
                   f"reward curve {out / 'reward_curve.png'}, TensorBoard {out / 'tb'}")
