"""``mintgym eval``: run a benchmark suite (or a list of tasks) with an agent; write results.json and report.html.

The harness is :mod:`mintgym.evals.harness`; this module only reads the options and builds the agent.
An existing ``--out`` is resumed only by the run that made it (its ``run.json``: tasks, seeds, limits, agent,
engine, model); another run is refused in one line before anything starts, or ``--force`` moves the old
folder aside and starts afresh (:mod:`mintgym.run_record`).

    mintgym eval --suite pytool-all --agent vlm --model-url http://127.0.0.1:8001/v1 --out runs/v
    mintgym eval --tasks pytool/count-shapes-0,pytool/table-sum-0 --agent scripted --out runs/s
    mintgym eval --model runs/see --out runs/see-eval          # a trained run's policy, its held-out seeds
    mintgym eval --config examples/must_see.yaml agent.options.blind=true --out runs/b   # a run's spec

With ``--config RUN.yaml`` (and ``KEY=VALUE`` overrides, as ``mintgym train`` takes them) or ``--model`` naming
a run folder, the agent, engine and sampling are the run's (:mod:`mintgym.cli.eval_spec`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import typer

from mintgym.cli.agent_options import (
    AgentChoice,
    agent_description,
    build_agent,
    check_observe,
    fail,
    use_packs,
    with_agent_options,
)
from mintgym.cli.core import CLIENT_TOKEN_HELP, client_token
from mintgym.cli.declared_options import with_declared_options
from mintgym.evals.stats import reason_of

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
@with_declared_options("eval")
def evaluate(
    overrides: list[str] = typer.Argument(None, metavar="[KEY=VALUE]...",
                                          help="with --config or a run folder: config overrides, as `mintgym "
                                               "train` takes them (agent.options.blind=true)"),
    config: Path | None = typer.Option(None, "--config", help="a run config YAML (as `mintgym train` takes): its "
                                                              "agent, engine and sampling; by default its tasks "
                                                              "on their held-out seeds"),
    step: int | None = typer.Option(None, "--step", min=0, help="with --model RUN_FOLDER: the checkpoint of this "
                                                                "step (default: the newest)"),
    suite: str | None = typer.Option(None, help="a named suite (see `mintgym suites`), e.g. pytool-all; with a "
                                                "run's spec, `held-out` (its default) is the run's held-out seeds"),
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
                                                                          "each task's live website"),
    suite_option: list[str] = typer.Option([], "--suite-option", help="KEY=VALUE for a data suite's own options "
                                                                       "(repeatable; each suite lists its keys in "
                                                                       "docs/evaluate.md), e.g. protocol=seeclick"),
    agent_choice: AgentChoice = None,
) -> None:
    """Evaluate an agent on a suite or on given tasks, in parallel and resumably.

    Exit status: 0 when every episode ended with a score; 3 when some errored (the others are scored, the
    reasons are printed grouped); 1 when every episode errored; 2 for a usage mistake; 130 when interrupted
    (Ctrl-C: the finished episodes are kept, a partial results.json and report are written)."""
    from mintgym.cli import eval_spec
    from mintgym.cli.core import domain_unavailable
    from mintgym.errors import MintGymError, first_line
    from mintgym.evals.harness import EvalConfig, EvalInterrupted, eval_folder, run_eval
    from mintgym.evals.suites import benchmark_for_tasks, resolve_suite

    if eval_spec.wants_spec(config, agent_choice):
        if data is not None or suite_option:
            raise fail("--data and --suite-option are for the data suites, not for an eval with a run's spec "
                       "(--config RUN.yaml or --model RUN_FOLDER)")
        _evaluate_spec(config, overrides or [], step, suite, tasks, max_steps, agent_choice,
                       episodes=episodes, seed=seed, concurrency=concurrency, out=out, force=force, backend=backend,
                       env_url=env_url, token_file=token_file, max_seconds=max_seconds, retry_errors=retry_errors,
                       progress=progress)
        return
    if overrides:
        raise fail(f"{overrides[0]!r}: KEY=VALUE overrides are for a run's spec (--config RUN.yaml, or --model "
                   "RUN_FOLDER)")
    if step is not None:
        raise fail("--step picks a checkpoint of a run folder given as --model")
    if (suite is None) == (tasks is None):
        raise fail("give exactly one of --suite and --tasks")
    data_harness = DATA_HARNESSES.get(suite or "")
    if (data is None) != (data_harness is None):
        raise fail(f"--data is for the data suites ({', '.join(DATA_HARNESSES)}), and they need it")
    suite_options = _suite_options(suite_option)
    if suite_options and data_harness is None:
        raise fail(f"--suite-option is for the data suites ({', '.join(DATA_HARNESSES)})")
    if data_harness is not None and agent_choice.observe != ("screenshot",):
        raise fail(f"--observe is for suites played on env servers; {suite} gives its harness's own input")
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
        check_observe(agent_choice, _domains(benchmark))
    config = EvalConfig(out=out, episodes=episodes, seed=seed, concurrency=concurrency, backend=backend,
                        env_url=urls, token=client_token(token_file), max_seconds=max_seconds,
                        retry_errors=retry_errors,
                        progress=progress, describe=agent_description(agent_choice, seed), force=force,
                        observe=agent_choice.observe)
    if benchmark is not None:  # the folder is checked before an engine or a server starts
        try:
            folder = eval_folder(benchmark, config)
        except (ValueError, MintGymError) as err:
            raise fail(first_line(err)) from None
    built = build_agent(agent_choice, concurrency=concurrency, seed=seed)  # fails before any server starts
    if data_harness is not None:
        _run_data_suite(data_harness, suite, data=data, make_agent=built.make, out=out,
                        describe=built.describe, concurrency=concurrency, allow_internet=allow_internet,
                        max_steps=max_steps, max_seconds=max_seconds, force=force, engine=built.engine,
                        suite_options=suite_options)
        return
    try:
        _say_folder(folder, folder.apply(), out)
        results = run_eval(benchmark, built.make, config)
    except EvalInterrupted as err:
        raise _stopped(err) from None
    except (ValueError, OSError, MintGymError) as err:
        raise fail(first_line(err)) from None
    finally:
        built.close()
    _say_results(results, out, agent_choice.agent)


def _say_results(results: dict[str, Any], out: Path, agent: str) -> None:
    """The summary lines of an evaluation; exit status 1 when every episode errored."""
    overall = results["overall"]
    if results.get("moved_aside"):
        typer.echo(f"--force: the old episodes were moved to {results['moved_aside']}; started afresh in {out}",
                   err=True)
    if results["skipped"]:
        typer.echo(f"skipped {len(results['skipped'])} tasks that cannot run here (see results.json)", err=True)
    if results.get("no_oracle"):
        typer.echo(f"skipped {len(results['no_oracle'])} tasks with no oracle (the {agent} agent plays "
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
    if errored:
        typer.echo(error_summary(results), err=True)
    typer.echo(f"results: {out / 'results.json'}; report: {out / 'report.html'}")
    if overall["episodes"] and errored == overall["episodes"]:
        reasons = overall["errors"].get("reasons") or {}
        top = max(reasons, key=reasons.get) if reasons else "see results.json"
        raise fail(f"every episode errored ({errored}); the most common reason: {top}", code=1)
    if errored:
        raise typer.Exit(PARTIAL_ERRORS_EXIT)


#: Exit status of an eval where some (not all) episodes errored.
PARTIAL_ERRORS_EXIT = 3
#: Exit status of an interrupted eval (as a shell gives a command Ctrl-C ended).
INTERRUPTED_EXIT = 130
#: At most this many kinds of error are listed on the console (results.json has every one).
MAX_REASONS_SHOWN = 8


def _stopped(err: Exception) -> typer.Exit:
    """Say in one line what an interrupted eval kept and how to resume it; the Exit to raise."""
    typer.echo(str(err), err=True)
    return typer.Exit(INTERRUPTED_EXIT)


def error_summary(results: dict[str, Any]) -> str:
    """The errored episodes grouped by reason (an error's first line), most frequent first, each shown as its
    first episode's error in full (a task's own exception: with its author's frames)."""
    overall = results["overall"]
    reasons = overall["errors"].get("reasons") or {}
    full = {}
    for episode in results["episodes"]:
        if episode.get("error") and episode["status"] in ("error", "timeout"):
            full.setdefault(reason_of(episode["error"]), episode["error"])
    lines = [f"{overall['errors']['count']} of {overall['episodes']} episodes errored, by reason:"]
    for reason, count in list(reasons.items())[:MAX_REASONS_SHOWN]:
        first, *more = full.get(reason, reason).strip().splitlines() or [reason]  # the reason, uncut
        lines.append(f"  {count:4d}x {first}")
        lines += [f"        {line}" for line in more]
    if len(reasons) > MAX_REASONS_SHOWN:
        lines.append(f"  ... and {len(reasons) - MAX_REASONS_SHOWN} more reasons (results.json, report.html)")
    lines.append("(each episode's error is in results.json and report.html; --retry-errors plays them again)")
    return "\n".join(lines)


def _evaluate_spec(config: Path | None, overrides: list[str], step: int | None, suite: str | None,
                   tasks: str | None, max_steps: int | None, choice: AgentChoice, **options: Any) -> None:
    """``mintgym eval`` with a run's spec (see :mod:`mintgym.cli.eval_spec`)."""
    from mintgym.cli import eval_spec
    from mintgym.cli.core import domain_unavailable
    from mintgym.evals.harness import EvalConfig, EvalInterrupted

    eval_spec.check_choice(choice, step)
    use_packs(choice.packs)
    cfg = eval_spec.load_spec(config, overrides, choice)
    benchmark = eval_spec.suite_of(cfg, suite, tasks, max_steps)
    urls = _env_urls(options.pop("env_url"))
    benchmark = _skip_what_cannot_run(benchmark, urls, domain_unavailable)
    model = eval_spec.policy_model(cfg, choice, step)
    eval_spec.say_model(model, choice)
    token = client_token(options.pop("token_file"))
    if options["max_seconds"] is None:
        options["max_seconds"] = cfg.rollout.episode_timeout
    try:
        results = eval_spec.run_spec_eval(cfg, benchmark, model, choice,
                                          EvalConfig(env_url=urls, token=token, **options))
    except EvalInterrupted as err:
        raise _stopped(err) from None
    _say_results(results, options["out"], cfg.agent.kind)


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


def _domains(benchmark: Any) -> list[str]:
    """The domains of the benchmark's tasks that will run (skipped ones left out)."""
    from mintgym.env import registration

    skipped = {task_id for task_id, _ in benchmark.skipped}
    return [registration.task(t).domain for t in benchmark.task_ids if t not in skipped]


def _run_data_suite(target: str, suite: str, *, engine: Any, **options: Any) -> None:
    import importlib

    from mintgym.errors import MintGymError

    module, _, name = target.partition(":")
    try:
        typer.echo(getattr(importlib.import_module(module), name)(suite, **options))
    except (ValueError, OSError, MintGymError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    finally:
        if engine is not None:
            engine.close()
    typer.echo(f"results under {options['out']}")


def _suite_options(values: list[str]) -> dict[str, str]:
    """``--suite-option KEY=VALUE`` pairs; each data harness validates its own keys."""
    options: dict[str, str] = {}
    for value in values:
        key, sep, item = value.partition("=")
        if not sep or not key:
            raise fail(f"--suite-option wants KEY=VALUE, got {value!r}")
        if key in options:
            raise fail(f"--suite-option {key} is given twice")
        options[key] = item
    return options


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
