"""``mintgym export``: a run's steps as a Hugging Face ``datasets`` dataset, for supervised fine-tuning.

    mintgym export runs/oracle --out data/oracle-sft          # successful episodes' steps (the default)
    mintgym export runs/oracle --out data/all-steps --all     # every episode's valid steps

One record per step that carries a valid action: the screenshot it was chosen on (an Image feature), the
instruction, the action as JSON and the model's raw text, with the trajectory id, task, domain and step
index (DESIGN section 5). The dataset is written with ``save_to_disk``; read it back with
``datasets.load_from_disk(PATH)``.
"""

from __future__ import annotations

from pathlib import Path

import typer

from mintgym.cli.agent_options import fail


def register(app: typer.Typer) -> None:
    app.command("export")(export)


def export(run_dir: Path = typer.Argument(..., help="a run directory (eval, rollout or one trajectory)"),
           out: Path = typer.Option(..., "--out", help="folder to write the dataset to (save_to_disk)"),
           all_episodes: bool = typer.Option(False, "--all", help="steps of every episode, not only successful "
                                             "ones")) -> None:
    """Write a run's steps as a Hugging Face dataset (screenshot, instruction, action, response)."""
    import datasets

    from mintgym.trajectory.store import export_dataset

    datasets.disable_progress_bars()

    if not run_dir.is_dir():
        raise fail(f"{run_dir}: no such run folder")
    if out.exists() and any(out.iterdir()):
        raise fail(f"{out} exists and is not empty; give a new folder")
    try:
        dataset = export_dataset(run_dir, only_success=not all_episodes)
    except ValueError as err:
        raise fail(f"{err}{'' if all_episodes else ' (--all takes every episode)'}") from None
    dataset.save_to_disk(str(out))
    typer.echo(f"{len(dataset)} steps from {len({r for r in dataset['trajectory_id']})} episodes -> {out} "
               "(datasets.load_from_disk)")
