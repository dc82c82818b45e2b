"""``mintgym eval``: run a benchmark suite (or a list of tasks) with an agent; write results.json and report.html.

The harness is :mod:`mintgym.evals.harness`; this module only reads the options and builds the agent.

    mintgym eval --suite pytool-all --agent vlm --model-url http://127.0.0.1:8001/v1 --out runs/v
    mintgym eval --tasks pytool/count-shapes-0,pytool/table-sum-0 --agent scripted --out runs/s
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import typer

#: Suites over a local dataset (``--data``), run by their benchmark's own harness instead of env servers.
DATA_HARNESSES = {
    **dict.fromkeys(("screenspot", "screenspot-v2", "screenspot-pro"), "mintgym.evals.screenspot.harness:run_suite"),
    **dict.fromkeys(("mind2web-test-task", "mind2web-test-website", "mind2web-test-domain"),
                    "mintgym.evals.mind2web.harness:run_suite"),
    "online-mind2web": "mintgym.evals.online_mind2web.live:run_suite",
}


def register(app: typer.Typer) -> None:
    app.command("eval")(evaluate)


def evaluate(
    suite: str | None = typer.Option(None, help="a named suite (see evals/suites.yaml), e.g. pytool-all"),
    tasks: str | None = typer.Option(None, help="comma-separated task ids, instead of --suite"),
    agent: str = typer.Option("vlm", help="scripted | random | vlm"),
    engine: str | None = typer.Option(None, help="vlm: hf | openai | vllm (default: openai with --model-url, else hf)"),
    model: str | None = typer.Option(None, help="vlm: checkpoint path (hf, vllm) or model name (openai)"),
    model_url: str | None = typer.Option(None, "--model-url", "--base-url",
                                            help="vlm: an OpenAI-compatible model server, e.g. http://127.0.0.1:8001/v1"),
    api_key: str | None = typer.Option(None, envvar="MINTGYM_MODEL_API_KEY", help="vlm: the model server's key"),
    frame: str = typer.Option("absolute", help="vlm: coordinate frame the model answers in "
                                               "(absolute, normalized_1000, relative, resized_absolute:WxH)"),
    history: int = typer.Option(1, min=1, help="vlm: screenshots shown (the current one and K-1 before it)"),
    max_pixels: int | None = typer.Option(None, help="vlm: resize screenshots to at most this many pixels"),
    max_new_tokens: int = typer.Option(256, min=1, help="vlm: most tokens per answer"),
    temperature: float = typer.Option(0.0, min=0.0, help="vlm: sampling temperature (0: greedy)"),
    retries: int = typer.Option(0, min=0, help="vlm: re-asks after an unparseable answer"),
    model_timeout: float = typer.Option(600.0, min=0.1, help="vlm/openai: seconds to wait for one model answer"),
    model_retries: int = typer.Option(2, min=0, help="vlm/openai: retries of a failed model request"),
    max_steps: int | None = typer.Option(None, min=1, help="end each episode after this many steps "
                                                               "(default: the suite's limit, else each task's)"),
    episodes: int | None = typer.Option(None, min=1, help="episodes per task (default: the suite's seeds)"),
    seed: int = typer.Option(0, help="seed of the first episode; episode i uses seed+i"),
    concurrency: int = typer.Option(1, min=1, help="episodes at once per domain"),
    out: Path = typer.Option(Path("runs/eval"), help="output directory (re-running resumes it)"),
    backend: str = typer.Option("local", help="runtime that starts env servers: local | docker | ray"),
    env_url: list[str] = typer.Option([], "--env-url", help="a running env server: URL, or DOMAIN=URL (repeatable)"),
    token: str | None = typer.Option(None, envvar="MINTGYM_TOKEN", help="the env server's bearer token"),
    max_seconds: float | None = typer.Option(None, help="wall-clock budget of one episode"),
    retry_errors: bool = typer.Option(False, help="re-run episodes that ended in error instead of keeping them"),
    progress: bool = typer.Option(True, help="show a progress bar"),
    data: Path | None = typer.Option(None, help="the local dataset of a data suite (screenspot*, mind2web-*, "
                                                "online-mind2web: its task list)"),
    allow_internet: bool = typer.Option(False, "--allow-internet", help="online-mind2web: let the browser reach "
                                                                          "each task's live website; osworld: let "
                                                                          "the server download task files"),
    osworld_root: Path | None = typer.Option(None, "--osworld-root", help="OSWorld's evaluation_examples folder as "
                                                                            "OSWorld ships it (its test_*.json lists "
                                                                            "become suites osworld-test_*)"),
) -> None:
    """Evaluate an agent on a suite or on given tasks, in parallel and resumably."""
    from mintgym.agents import make_agent
    from mintgym.errors import MintGymError
    from mintgym.evals.harness import EvalConfig, run_eval
    from mintgym.evals.suites import benchmark_for_tasks, resolve_suite

    from mintgym.cli.core import _use_osworld_root

    _use_osworld_root(osworld_root)
    if allow_internet:  # OSWorld's download steps and reference files (see mintgym.environments.desktop.osworld.files)
        from mintgym.environments.desktop.osworld.files import DOWNLOADS_VARIABLE

        os.environ[DOWNLOADS_VARIABLE] = "1"
    if (suite is None) == (tasks is None):
        raise typer.BadParameter("give exactly one of --suite and --tasks")
    data_harness = DATA_HARNESSES.get(suite or "")
    if (data is None) != (data_harness is None):
        raise typer.BadParameter(f"--data is for the data suites ({', '.join(DATA_HARNESSES)}), and they need it")
    try:
        benchmark = None if data_harness else resolve_suite(suite) if suite else benchmark_for_tasks(tasks.split(","))
    except (ValueError, MintGymError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    if benchmark is not None and max_steps is not None:
        benchmark = dataclasses.replace(benchmark, max_steps=max_steps)
    urls = _env_urls(env_url)
    describe: dict[str, Any] = {"agent": agent}
    options: dict[str, Any] = {}
    built_engine = None
    if agent == "vlm":
        name = engine or ("openai" if model_url else "hf")
        engine_config = _engine_config(name, model, model_url, api_key)
        if name == "openai":
            engine_config.update(timeout_s=model_timeout, max_retries=model_retries)
        from mintgym.inference import make_engine

        try:
            built_engine = make_engine(name, **engine_config)
        except (ValueError, OSError, MintGymError) as err:
            typer.echo(f"error: cannot start the {name} engine: {err}", err=True)
            raise typer.Exit(2)
        if name == "hf" and concurrency > 1:  # one in-process model: batch the concurrent agents' requests
            from mintgym.agents.batched import BatchedEngine

            built_engine = BatchedEngine(built_engine, max_batch_size=min(concurrency, 16))
        options = dict(engine=built_engine, frame=frame, history=history, max_pixels=max_pixels,
                       max_new_tokens=max_new_tokens, temperature=temperature, retries=retries, seed=seed)
        describe.update(engine=name, model=model, model_url=model_url, frame=frame, history=history,
                        max_pixels=max_pixels, max_new_tokens=max_new_tokens, temperature=temperature,
                        retries=retries)
    elif any(v is not None for v in (engine, model, model_url)):
        raise typer.BadParameter(f"--engine/--model/--model-url are options of the vlm agent, not {agent!r}")
    try:
        make_agent(agent, **options)  # a bad agent name or option fails before any server starts
    except (ValueError, TypeError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    if data_harness is not None:
        _run_data_suite(data_harness, suite, data=data, make_agent=lambda: make_agent(agent, **options), out=out,
                        describe=describe, concurrency=concurrency, allow_internet=allow_internet,
                        max_steps=max_steps, max_seconds=max_seconds, engine=built_engine)
        return
    config = EvalConfig(out=out, episodes=episodes, seed=seed, concurrency=concurrency, backend=backend,
                        env_url=urls, token=token, max_seconds=max_seconds, retry_errors=retry_errors,
                        progress=progress, describe=describe)
    try:
        results = run_eval(benchmark, lambda: make_agent(agent, **options), config)
    except (ValueError, MintGymError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    finally:
        if built_engine is not None:
            built_engine.close()
    overall = results["overall"]
    if results["skipped"]:
        typer.echo(f"skipped {len(results['skipped'])} tasks that cannot run here (see results.json)", err=True)
    if overall["episodes"]:
        lo, hi = overall["success_ci95"]
        typer.echo(f"{overall['successes']}/{overall['episodes']} succeeded ({100 * overall['success_rate']:.1f}%, "
                   f"95% CI {100 * lo:.1f}-{100 * hi:.1f}%), mean reward {overall['mean_reward']:.3f}, "
                   f"{overall['errors']['count']} errors")
    typer.echo(f"results: {out / 'results.json'}; report: {out / 'report.html'}")


def _run_data_suite(target: str, suite: str, *, engine: Any, **options: Any) -> None:
    import importlib

    from mintgym.errors import MintGymError

    module, _, name = target.partition(":")
    try:
        typer.echo(getattr(importlib.import_module(module), name)(suite, **options))
    except (ValueError, OSError, MintGymError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    finally:
        if engine is not None:
            engine.close()
    typer.echo(f"results under {options['out']}")


def _env_urls(values: list[str]) -> str | dict[str, str] | None:
    if not values:
        return None
    if len(values) == 1 and "=" not in values[0]:
        return values[0]
    urls = {}
    for value in values:
        domain, sep, url = value.partition("=")
        if not sep or not url:
            raise typer.BadParameter(f"--env-url wants URL or DOMAIN=URL, got {value!r}")
        urls[domain] = url
    return urls


def _engine_config(name: str, model: str | None, model_url: str | None, api_key: str | None) -> dict[str, Any]:
    if name == "openai":
        if not model_url:
            raise typer.BadParameter("the openai engine needs --model-url (an OpenAI-compatible server)")
        return {"base_url": model_url, "model": model, "api_key": api_key}
    if model_url:
        raise typer.BadParameter(f"--model-url is for the openai engine, not {name!r}")
    if not model:
        raise typer.BadParameter(f"the {name} engine needs --model PATH (a checkpoint directory)")
    return {"model_path": model}

