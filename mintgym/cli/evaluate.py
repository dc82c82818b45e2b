"""``mintgym eval``: run a benchmark suite (or a list of tasks) with an agent; write results.json and report.html.

The harness is :mod:`mintgym.evals.harness`; this module only reads the options and builds the agent.
An existing ``--out`` is resumed only by the run that made it (its ``run.json``: tasks, seeds, limits, agent,
engine, model); another run is refused in one line before anything starts, or ``--force`` moves the old
folder aside and starts afresh (:mod:`mintgym.run_record`).

    mintgym eval --suite pytool-all --agent vlm --model-url http://127.0.0.1:8001/v1 --out runs/v
    mintgym eval --tasks pytool/count-shapes-0,pytool/table-sum-0 --agent scripted --out runs/s
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import typer

from mintgym.cli.agent_options import AgentChoice, agent_description, build_agent, fail, use_packs, with_agent_options
from mintgym.cli.core import CLIENT_TOKEN_HELP, client_token

#: Suites over a local dataset (``--data``), run by their benchmark's own harness instead of env servers.
DATA_HARNESSES = {
    **dict.fromkeys(("screenspot", "screenspot-v2", "screenspot-pro"), "mintgym.evals.screenspot.harness:run_suite"),
    **dict.fromkeys(("mind2web-test-task", "mind2web-test-website", "mind2web-test-domain"),
                    "mintgym.evals.mind2web.harness:run_suite"),
    "online-mind2web": "mintgym.evals.online_mind2web.live:run_suite",
}


def register(app: typer.Typer) -> None:
    app.command("eval")(evaluate)


@with_agent_options(default_agent="vlm", model_url_aliases=("--base-url",))
def evaluate(
    suite: str | None = typer.Option(None, help="a named suite (see `mintgym suites`), e.g. pytool-all"),
    tasks: str | None = typer.Option(None, help="comma-separated task ids, instead of --suite"),
    max_steps: int | None = typer.Option(None, min=1, help="end each episode after this many steps "
                                                               "(default: the suite's limit, else each task's)"),
    episodes: int | None = typer.Option(None, min=1, help="episodes per task (default: the suite's seeds)"),
    seed: int = typer.Option(0, help="seed of the first episode; episode i uses seed+i"),
    concurrency: int = typer.Option(1, min=1, help="episodes at once per domain"),
    out: Path = typer.Option(Path("runs/eval"), help="output directory (re-running the same eval resumes it; "
                                                      "another eval there is refused, see --force)"),
    force: bool = typer.Option(False, "--force", help="when --out holds another run's episodes, move them aside "
                                                      "to OUT.before-<timestamp> and start afresh"),
    backend: str = typer.Option("local", help="runtime that starts env servers: local | docker | ray"),
    env_url: list[str] = typer.Option([], "--env-url", help="a running env server: URL, or DOMAIN=URL (repeatable)"),
    token_file: Path | None = typer.Option(None, "--token-file", help=CLIENT_TOKEN_HELP),
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
    agent_choice: AgentChoice = None,
) -> None:
    """Evaluate an agent on a suite or on given tasks, in parallel and resumably.

    Exits 1 when every episode errored; otherwise it says how many did."""
    from mintgym.errors import MintGymError, first_line
    from mintgym.evals.harness import EvalConfig, eval_folder, run_eval
    from mintgym.evals.suites import benchmark_for_tasks, resolve_suite

    from mintgym.cli.core import _use_osworld_root, domain_unavailable
    from mintgym.environments.desktop.osworld.files import DOWNLOADS_VARIABLE

    _use_osworld_root(osworld_root)
    previous_downloads = os.environ.get(DOWNLOADS_VARIABLE)
    if allow_internet:  # OSWorld's download steps and reference files, for the env servers started below
        os.environ[DOWNLOADS_VARIABLE] = "1"
    try:
        if (suite is None) == (tasks is None):
            raise fail("give exactly one of --suite and --tasks")
        data_harness = DATA_HARNESSES.get(suite or "")
        if (data is None) != (data_harness is None):
            raise fail(f"--data is for the data suites ({', '.join(DATA_HARNESSES)}), and they need it")
        use_packs(agent_choice.packs)
        try:
            benchmark = None if data_harness else resolve_suite(suite) if suite else benchmark_for_tasks(tasks.split(","))
        except (ValueError, MintGymError) as err:
            raise fail(str(err)) from None
        if benchmark is not None and max_steps is not None:
            benchmark = dataclasses.replace(benchmark, max_steps=max_steps)
        urls = _env_urls(env_url)
        if benchmark is not None:
            benchmark = _skip_what_cannot_run(benchmark, urls, domain_unavailable)
        config = EvalConfig(out=out, episodes=episodes, seed=seed, concurrency=concurrency, backend=backend,
                            env_url=urls, token=client_token(token_file), max_seconds=max_seconds, retry_errors=retry_errors,
                            progress=progress, describe=agent_description(agent_choice, seed), force=force)
        if benchmark is not None:  # the folder is checked before an engine or a server starts
            try:
                folder = eval_folder(benchmark, config)
            except (ValueError, MintGymError) as err:
                raise fail(first_line(err)) from None
        built = build_agent(agent_choice, concurrency=concurrency, seed=seed)  # fails before any server starts
        if data_harness is not None:
            _run_data_suite(data_harness, suite, data=data, make_agent=built.make, out=out,
                            describe=built.describe, concurrency=concurrency, allow_internet=allow_internet,
                            max_steps=max_steps, max_seconds=max_seconds, force=force, engine=built.engine)
            return
        try:
            _say_folder(folder, folder.apply(), out)
            results = run_eval(benchmark, built.make, config)
        except (ValueError, OSError, MintGymError) as err:
            raise fail(first_line(err)) from None
        finally:
            built.close()
        overall = results["overall"]
        if results["skipped"]:
            typer.echo(f"skipped {len(results['skipped'])} tasks that cannot run here (see results.json)", err=True)
        if results.get("no_oracle"):
            typer.echo(f"skipped {len(results['no_oracle'])} tasks with no oracle (the {agent_choice.agent} agent plays "
                       "task oracles; listed as no_oracle in results.json, not as errors)", err=True)
        if results.get("not_counted"):
            typer.echo(f"{len(results['not_counted'])} episodes recorded in {out} are not counted (their tasks are "
                       "skipped now; listed as not_counted in results.json)", err=True)
        errored = overall["errors"]["count"]
        if overall["episodes"]:
            lo, hi = overall["success_ci95"]
            typer.echo(f"{overall['successes']}/{overall['episodes']} succeeded ({100 * overall['success_rate']:.1f}%, "
                       f"95% CI {100 * lo:.1f}-{100 * hi:.1f}%), mean reward {overall['mean_reward']:.3f}, "
                       f"{errored} of {overall['episodes']} episodes errored")
        if results.get("resumed_episodes"):
            kept = results["resumed_episodes"]
            typer.echo(f"{kept} of {len(results['episodes'])} episodes were already recorded in {out} and kept; "
                       f"{len(results['episodes']) - kept} ran now")
        typer.echo(f"results: {out / 'results.json'}; report: {out / 'report.html'}")
        if overall["episodes"] and errored == overall["episodes"]:
            reasons = overall["errors"].get("reasons") or {}
            top = max(reasons, key=reasons.get) if reasons else "see results.json"
            raise fail(f"every episode errored ({errored}); the most common reason: {top}", code=1)
    finally:  # the permission lasts as long as this command (it may run in a longer-lived process)
        if previous_downloads is None:
            os.environ.pop(DOWNLOADS_VARIABLE, None)
        else:
            os.environ[DOWNLOADS_VARIABLE] = previous_downloads


def _say_folder(folder: Any, moved: Path | None, out: Path) -> None:
    """One line when the run resumes its folder or moved an old one aside."""
    if moved is not None:
        typer.echo(f"--force: the old episodes were moved to {moved}; starting afresh in {out}", err=True)
    elif folder.action == "resume":
        typer.echo(f"resuming {out}: the same run made it (run.json), so its finished episodes are kept", err=True)


def _skip_what_cannot_run(benchmark: Any, urls: Any, domain_unavailable: Any) -> Any:
    """The benchmark with the tasks of a domain that cannot be served from here (no device) skipped, with
    why; one error line when a task's pack cannot reach the env servers."""
    from mintgym.env import registration

    skipped = dict(benchmark.skipped)
    blocked: dict[str, str | None] = {}
    for task_id in benchmark.task_ids:
        domain = registration.task(task_id).domain
        if task_id in skipped or (urls and (isinstance(urls, str) or domain in urls)):
            continue
        if domain not in blocked:
            blocked[domain] = domain_unavailable(domain)
        if blocked[domain]:
            skipped[task_id] = blocked[domain]
        elif problem := registration.forwarding_problem(task_id):
            raise fail(problem)
    return dataclasses.replace(benchmark, skipped=tuple(skipped.items()))


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
            raise fail(f"--env-url wants URL or DOMAIN=URL, got {value!r}")
        urls[domain] = url
    return urls
