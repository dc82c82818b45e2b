"""``mintgym eval`` with a run's spec: ``--config RUN.yaml [KEY=VALUE ...]``, or ``--model RUN_FOLDER``.

The agent, its options, the engine and the sampling are the run config's (the same YAML and dotted overrides
``mintgym train`` takes); the policy is ``--model`` (a run folder: its newest checkpoint, or ``--step N``; a
checkpoint or any model folder), else the config's ``model.path``. Without ``--suite``/``--tasks`` (or with
``--suite held-out``) the run's tasks are played on their held-out seeds, as the run's final evaluation plays
them (:mod:`mintgym.rl.evaluate`); another suite is played by the run's agent too.

    mintgym eval --model runs/see --out runs/see-eval
    mintgym eval --config examples/must_see.yaml agent.options.blind=true --out runs/blind-eval
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import typer

from mintgym.cli.agent_options import AgentChoice, fail

#: The suite name that means "the run's tasks on their held-out seeds".
HELD_OUT = "held-out"


def wants_spec(config: Path | None, choice: AgentChoice) -> bool:
    """Whether this eval takes a run's spec: ``--config``, or ``--model`` naming a run folder."""
    return config is not None or (choice.model is not None and _run_folder(Path(choice.model)) is not None)


def _run_folder(path: Path) -> Path | None:
    path = path.expanduser()
    return path if (path / "config.json").is_file() and (path / "checkpoints").is_dir() else None


def load_spec(config: Path | None, overrides: list[str], choice: AgentChoice) -> Any:
    """The run config: ``--config`` with the overrides, else the run folder's own record with them."""
    from mintgym.config import ConfigError, RunConfig

    source = config if config is not None else _run_folder(Path(choice.model)) / "config.json"
    try:
        return RunConfig.from_yaml(source, list(overrides))
    except ConfigError as err:
        raise fail(f"{source}: {err}") from None


def check_choice(choice: AgentChoice, step: int | None) -> None:
    """One error line for a flag the spec decides (the agent, its options, the engine)."""
    if choice.agent != "vlm" or choice.agent_option:
        raise fail("the agent is the run config's with --config or a run folder: set agent.kind=... or "
                   "agent.options.KEY=... instead of --agent/--agent-option")
    if choice.model_option:
        raise fail("--model-option is not taken with --config or a run folder (a run's policy is served by "
                   "serve-model or vllm serve, which take every field MintGym sends)")
    if choice.engine is not None:
        raise fail("the engine is the run config's with --config or a run folder: set engine.name=... instead of "
                   "--engine (or give --model-url for a server that serves the policy)")
    if choice.observe != ("screenshot",):
        raise fail("what the agent observes is the run config's with --config or a run folder: set "
                   f"agent.observe=[{','.join(choice.observe)}] instead of --observe")
    if step is not None and choice.model is None:
        raise fail("--step picks a checkpoint of the run folder given as --model")


def policy_model(cfg: Any, choice: AgentChoice, step: int | None) -> str | None:
    """The model folder to evaluate (None with ``--model-url`` and no ``--model``): ``--model`` resolved, else
    the config's model (the tiny one built first where the config asks)."""
    from mintgym.errors import MintGymError
    from mintgym.trainer.ckpt import policy_folder

    if choice.model is not None:
        if choice.model_url:
            return choice.model  # the served model's name
        try:
            return str(policy_folder(choice.model, step))
        except MintGymError as err:
            raise fail(str(err)) from None
    if choice.model_url:
        return None
    from mintgym.rl.wiring import model_path

    try:
        return model_path(cfg)
    except (OSError, MintGymError) as err:
        raise fail(f"model.path: {err}") from None


def suite_of(cfg: Any, suite: str | None, tasks: str | None, max_steps: int | None) -> Any:
    """The benchmark: the run's held-out seeds, or the named suite or tasks."""
    from mintgym.errors import MintGymError
    from mintgym.evals.suites import benchmark_for_tasks, resolve_suite
    from mintgym.rl.evaluate import held_out_suite

    if suite is not None and tasks is not None:
        raise fail("give at most one of --suite and --tasks")
    try:
        if tasks is not None:
            benchmark = benchmark_for_tasks(tasks.split(","))
        elif suite not in (None, HELD_OUT):
            benchmark = resolve_suite(suite)
        else:
            benchmark = held_out_suite(cfg)
    except (ValueError, MintGymError) as err:
        raise fail(str(err)) from None
    return benchmark if max_steps is None else dataclasses.replace(benchmark, max_steps=max_steps)


def run_spec_eval(cfg: Any, benchmark: Any, model: str | None, choice: AgentChoice, config: Any) -> dict[str, Any]:
    """Play ``benchmark`` with the spec's agent on ``model``; the harness's results (one error line on failure)."""
    from mintgym.errors import MintGymError, first_line
    from mintgym.rl.evaluate import evaluate_policy

    try:
        return evaluate_policy(cfg, model, config, benchmark=benchmark, model_url=choice.model_url,
                               api_key=choice.api_key)
    except (ValueError, OSError, MintGymError) as err:
        raise fail(first_line(err)) from None


def say_model(model: str | None, choice: AgentChoice) -> None:
    if model is not None and not choice.model_url:
        typer.echo(f"policy: {model}", err=True)
