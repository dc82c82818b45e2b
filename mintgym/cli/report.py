"""``mintgym report``: benchmark figures from stored predictions, scored as the benchmarks' authors score them.

    mintgym report screenspot --predictions results/qwen2vl.json          # a ScreenSpot-Pro results file
    mintgym report mind2web --results runs/m2w/test_task/results.json
    mintgym report online-mind2web --labels human_label.json --tasks Online_Mind2Web.json
    mintgym report online-mind2web --verdicts runs/judge --tasks Online_Mind2Web.json
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

report_app = typer.Typer(help="Benchmark tables from stored predictions, labels or judge verdicts.",
                         no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(report_app, name="report")


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


@report_app.command("screenspot")
def screenspot(predictions: Path = typer.Option(..., help="a results file in the ScreenSpot-Pro layout "
                                                            "({'details': [...]}) or a list of its records"),
               out: Path | None = typer.Option(None, help="write the rescored records and tables here (JSON)"),
               show_records: bool = typer.Option(False, help="print every record's verdict")) -> None:
    """Rescore each record's click against its box; check the stored ``correctness``; print the tables."""
    from mintgym.evals.screenspot.report import render_text
    from mintgym.evals.screenspot.scoring import agreement, breakdowns, read_results, rescore

    try:
        records = rescore(read_results(predictions))
    except (OSError, ValueError) as err:
        _fail(str(err))
    same, differ = agreement(records)
    benchmark = "screenspot-pro" if any(r.get("group") for r in records) else "screenspot"
    results = {"benchmark": benchmark, "metrics": breakdowns(records, benchmark), "details": records}
    if show_records:
        for i, r in enumerate(records):
            typer.echo(f"{i:4d} {r['correctness']:12s} stored={r.get('stored_correctness')} pred={r.get('pred')} "
                       f"bbox={r.get('bbox')} {str(r.get('prompt_to_evaluate', ''))[:50]!r}")
    typer.echo(render_text(results))
    checked = sum(1 for r in records if r.get("stored_correctness") is not None)
    typer.echo(f"\nrescored {len(records)} records: {same}/{checked} match the stored correctness")
    for i in differ:
        r = records[i]
        typer.echo(f"  record {i}: stored {r['stored_correctness']!r}, recomputed {r['correctness']!r}", err=True)
    if out:
        out.write_text(json.dumps(results, indent=1))
    if differ:
        raise typer.Exit(1)


@report_app.command("mind2web")
def mind2web(results: list[Path] = typer.Option(..., "--results", help="results.json of a Mind2Web split run "
                                                                      "(repeatable: one per split)")) -> None:
    """The Mind2Web paper's columns (Ele. Acc, Op. F1, Step SR, SR; macro over tasks) per split."""
    from mintgym.evals.mind2web.report import paper_table

    docs = []
    for path in results:
        try:
            docs.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError) as err:
            _fail(f"cannot read {path}: {err}")
    typer.echo(paper_table(docs))


@report_app.command("online-mind2web")
def online_mind2web(
    tasks: Path = typer.Option(..., help="the task list (Online_Mind2Web.json) that gives each task's level"),
    labels: Path | None = typer.Option(None, help="a human-label file in the authors' layout (human_label.json)"),
    verdicts: Path | None = typer.Option(None, help="a folder of WebJudge verdicts (<task_id>/judge.json) or a "
                                                    "JSONL file of {task_id, predicted_label}"),
    agent: str = typer.Option("agent", help="the agent name a --verdicts run is reported under"),
) -> None:
    """Success rate overall and per difficulty level, per agent."""
    from mintgym.evals.online_mind2web.report import (
        load_human_labels,
        load_tasks,
        load_verdicts,
        render_text,
        success_rates,
    )

    if (labels is None) == (verdicts is None):
        _fail("give exactly one of --labels and --verdicts")
    try:
        task_list = load_tasks(tasks)
        outcomes = load_human_labels(labels) if labels else {agent: load_verdicts(verdicts)}
        table = success_rates(outcomes, task_list)
    except (OSError, ValueError) as err:
        _fail(str(err))
    typer.echo(render_text(table))


@report_app.command("webjudge")
def webjudge(
    results: Path = typer.Option(..., help="a folder of <task_id>/result.json + trajectory/*.png (the official format)"),
    base_url: str = typer.Option(..., help="an OpenAI-compatible server, e.g. https://api.openai.com/v1"),
    model: str | None = typer.Option(None, help="the judge model (default: the server's first)"),
    api_key: str | None = typer.Option(None, envvar="MINTGYM_JUDGE_API_KEY", help="the server's key"),
    score_threshold: int = typer.Option(3, min=1, max=5, help="keep screenshots rated at least this (1-5)"),
    tasks: Path | None = typer.Option(None, help="a task list: also print success rates per level"),
    agent: str = typer.Option("agent", help="the name the success rates are printed under"),
) -> None:
    """Judge result folders with WebJudge; each verdict goes to <task_id>/judge.json (judged folders are kept)."""
    from mintgym.errors import MintGymError
    from mintgym.evals.online_mind2web.judge import WebJudge, judge_results
    from mintgym.inference.openai import OpenAIEngine

    engine = OpenAIEngine(base_url, model, api_key=api_key, return_token_ids=False)
    try:
        verdicts = judge_results(results, WebJudge(engine, score_threshold=score_threshold))
    except (OSError, ValueError, MintGymError) as err:
        _fail(str(err))
    finally:
        engine.close()
    wins = sum(v.success for v in verdicts)
    typer.echo(f"{wins}/{len(verdicts)} tasks judged successful")
    if tasks is not None:
        online_mind2web(tasks=tasks, labels=None, verdicts=results, agent=agent)
