"""``mintgym export``: a run's steps as a Hugging Face ``datasets`` dataset, for supervised fine-tuning.

    mintgym export runs/oracle --out data/oracle-sft          # successful episodes' steps (the default)
    mintgym export runs/oracle --out data/all-steps --all     # every episode's valid steps
    mintgym export runs/oracle --out data/bc --agent answer --agent-options '{"choices": {"pytool": ["red", "blue"]}}'
    mintgym export runs/oracle --out data/bc2 --agent answer --skip-seed 7 --skip-seed 8   # not on held-out seeds

One record per step that carries a valid action: the screenshot it was chosen on (an Image feature), the
instruction, the action as JSON and the model's raw text, with the trajectory id, task, seed, domain and step
index (DESIGN section 5). The dataset is written with ``save_to_disk``; read it back with
``datasets.load_from_disk(PATH)``.

With ``--agent`` (``answer`` or ``vlm``, with ``--agent-options`` as in a training config's ``agent``), the
run's successful episodes are replayed through that agent instead (:mod:`mintgym.trajectory.imitation`):
one record per step it imitates, holding the prompt it would have built (``messages``, images in
``images``) and the response it would have written: behaviour-cloning data for a training config's
``warm_start.dataset``. The vlm agent and ``pick: digit`` need ``--model`` (its engine and tokenizer).
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
                                             "ones"),
           agent: str | None = typer.Option(None, "--agent", help="replay the episodes through this agent "
                                            "(answer or vlm): its prompts and responses, for warm_start.dataset"),
           agent_options: str = typer.Option("{}", "--agent-options", help="JSON options of --agent"),
           model: Path | None = typer.Option(None, "--model", help="model folder of the agent's engine (vlm, "
                                             "pick: digit)"),
           skip_seeds: list[int] = typer.Option([], "--skip-seed", help="leave out the episodes on this seed "
                                                 "(repeatable), e.g. a training config's held-out eval_seeds")) -> None:
    """Write a run's steps as a Hugging Face dataset (screenshot, instruction, action, response)."""
    import datasets

    from mintgym.trajectory.store import export_dataset

    datasets.disable_progress_bars()

    if not run_dir.is_dir():
        raise fail(f"{run_dir}: no such run folder")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise fail(f"{out} exists and is {'a file' if not out.is_dir() else 'not empty'}; give a new folder")
    try:
        if agent is None:
            dataset = export_dataset(run_dir, only_success=not all_episodes, skip_seeds=set(skip_seeds))
        else:
            dataset = _imitation(run_dir, agent, agent_options, model, only_success=not all_episodes,
                                 skip_seeds=set(skip_seeds))
    except ValueError as err:  # only where no successful step was found does --all help
        hint = " (--all takes every episode)" if not all_episodes and str(err).startswith("no successful") else ""
        raise fail(f"{err}{hint}") from None
    dataset.save_to_disk(str(out))
    typer.echo(f"{len(dataset)} steps from {len({r for r in dataset['trajectory_id']})} episodes -> {out} "
               "(datasets.load_from_disk)")


def _imitation(run_dir: Path, kind: str, options_json: str, model: Path | None, only_success: bool,
               skip_seeds: set[int]):
    import json

    from mintgym.rollout.agents import agent_factory
    from mintgym.trajectory.imitation import imitation_dataset

    try:
        options = json.loads(options_json)
    except json.JSONDecodeError as err:
        raise fail(f"--agent-options is not JSON: {err}") from None
    if not isinstance(options, dict):
        raise fail(f"--agent-options must be a JSON object, got {options_json!r}")
    from mintgym.agents import agent_factory as registered

    try:
        factory = registered(kind)
    except ValueError as err:
        raise fail(f"--agent {kind!r}: {err}") from None
    if not callable(getattr(factory, "imitate", None)):
        raise fail(f"--agent {kind!r}: imitation data is made for a training agent (one with an imitate method, "
                   "such as answer or vlm)")
    engine = None
    if model is not None:
        from mintgym.rollout.engines import open_engine

        if not (model / "config.json").exists():
            raise fail(f"--model {model}: no model there (no config.json)")
        engine, _ = open_engine("hf", model_path=str(model))
    make_agent = agent_factory(kind, options, engine)
    try:
        make_agent()
    except (TypeError, ValueError) as err:
        if engine is None and getattr(factory, "needs_engine", False):
            raise fail(f"--agent {kind} needs --model: the agent is built over that model's engine ({err})") from None
        raise fail(f"--agent {kind} with these options: {err}") from None
    return imitation_dataset(run_dir, make_agent, only_success=only_success, skip_seeds=skip_seeds)
