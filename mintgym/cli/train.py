"""``mintgym train``: the RL loop from a YAML config (see examples/quickstart.yaml)."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("train")
    def train_command(
        config: Path = typer.Option(..., "--config", help="run config YAML (examples/quickstart.yaml)"),
        out: Path = typer.Option(..., "--out", help="run folder: logs, TensorBoard, checkpoints, reward curve"),
        steps: int = typer.Option(None, help="override train.steps"),
        mode: str = typer.Option(None, help="override train.mode: async | sync"),
        seed: int = typer.Option(None, help="override train.seed"),
        max_lag: int = typer.Option(None, "--max-lag", help="override train.max_lag"),
        correction: str = typer.Option(None, help="override train.correction"),
        eval_groups: int = typer.Option(None, "--eval-groups", help="override train.eval_groups"),
    ) -> None:
        """Train a policy with async (or sync) RL; resumes from OUT's last checkpoint if there is one."""
        from mintgym.trainer.config import RunConfig
        from mintgym.trainer.train import train

        overrides = {"steps": steps, "mode": mode, "seed": seed, "max_lag": max_lag, "correction": correction,
                     "eval_groups": eval_groups}
        raw = RunConfig.from_yaml(config).to_dict()  # overrides are validated like the file's own values
        raw["train"].update({k: v for k, v in overrides.items() if v is not None})
        cfg = RunConfig.from_dict(raw)
        result = train(cfg, out)
        since = f" (resumed at step {result.resumed_from})" if result.resumed_from else ""
        typer.echo(f"done: {result.steps} steps in {result.seconds:.0f}s{since}; reward first steps "
                   f"{result.mean_reward(first=True):.3f} -> last steps {result.mean_reward(first=False):.3f}; "
                   f"reward curve {out / 'reward_curve.png'}, TensorBoard {out / 'tb'}")
