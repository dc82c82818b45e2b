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
               data: Path | None = typer.Option(None, help="the ScreenSpot-Pro copy the file was made on (its "
                                                           "annotations give each image's size: exact rescoring "
                                                           "at box edges)"),
               out: Path | None = typer.Option(None, help="write the rescored records and tables here (JSON)"),
               show_records: bool = typer.Option(False, help="print every record's verdict")) -> None:
    """Rescore each record as the official code scores it; check the stored ``correctness``; print the tables."""
    from mintgym.evals.screenspot.data import pro_image_sizes
    from mintgym.evals.screenspot.report import render_text
    from mintgym.evals.screenspot.scoring import agreement, breakdowns, read_results, rescore, with_image_sizes

    try:
        benchmark, stored = read_results(predictions)
        if data is not None:
            stored = with_image_sizes(stored, pro_image_sizes(data))
        records = rescore(stored)
    except (OSError, ValueError) as err:
        _fail(str(err))
    same, differ = agreement(records)
    results = {"benchmark": benchmark, "metrics": breakdowns(records, benchmark), "details": records}
    if show_records:
        for i, r in enumerate(records):
            typer.echo(f"{i:4d} {r['correctness']:12s} stored={r.get('stored_correctness')} pred={r.get('pred')} "
                       f"bbox={r.get('bbox')} {str(r.get('prompt_to_evaluate', ''))[:50]!r}")
    typer.echo(render_text(results))
    checked = sum(1 for r in records if r.get("stored_correctness") is not None)
    typer.echo(f"\nrescored {len(records)} records: {same}/{checked} match the stored correctness")
    ties = sum(1 for r in records if r.get("tie"))
    if ties:
        typer.echo(f"{ties} stored point(s) lie within float rounding of a box edge: the file keeps no normalized "
                   "point, so either verdict fits and the stored one stands"
                   + ("" if data else " (--data, the Pro copy, gives the image sizes that decide most of them)"))
    for i in differ:
        r = records[i]
        typer.echo(f"  record {i}: stored {r['stored_correctness']!r}, recomputed {r['correctness']!r}", err=True)
    if out:
        out.write_text(json.dumps(results, indent=1))
    if differ:
        raise typer.Exit(1)


@report_app.command("mind2web")
def mind2web(results: list[Path] = typer.Option([], "--results", help="results.json of a Mind2Web split run, or "
                                                                     "an official <split>_results_top<k>.json "
                                                                     "(repeatable: one per split)"),
             protocol: str = typer.Option("official", help="official (the official multiple-choice rules: Ele. "
                                                           "Acc, Op. F1, Step SR macro over tasks, SR) or seeclick "
                                                           "(SeeClick's mind2web_test.py figures)"),
             predictions: Path | None = typer.Option(None, help="score an official <split>_predictions_top<k>.json "
                                                                "instead (needs --data and --split)"),
             data: Path | None = typer.Option(None, help="the Mind2Web data the predictions are of (either layout)"),
             split: str | None = typer.Option(None, help="the split the predictions are of (test_task, ...)"),
             scores: Path | None = typer.Option(None, help="the candidate ranks (scores_all_data.pkl)"),
             top_k: int = typer.Option(50, min=1, help="the cut the predictions were made with")) -> None:
    """Mind2Web's figures per split under one protocol, titled with the protocol."""
    from mintgym.evals.mind2web.report import paper_table

    if (predictions is None) == (not results):
        _fail("give --results, or --predictions with --data and --split")
    docs = []
    for path in results:
        try:
            docs.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError) as err:
            _fail(f"cannot read {path}: {err}")
    try:
        if predictions is not None:
            from mintgym.evals.mind2web.report import score_predictions_file

            if data is None or split is None or protocol != "official":
                _fail("--predictions needs --data and --split, and is scored under the official protocol")
            docs.append(score_predictions_file(predictions, data, split, scores, top_k))
        typer.echo(paper_table(docs, protocol))
    except (OSError, ValueError) as err:
        _fail(str(err))


@report_app.command("online-mind2web")
def online_mind2web(
    tasks: Path = typer.Option(..., help="the task list (Online_Mind2Web.json) that gives each task's level"),
    labels: Path | None = typer.Option(None, help="a human-label file in the authors' layout (human_label.json)"),
    verdicts: Path | None = typer.Option(None, help="a folder of WebJudge verdicts (<task_id>/judge.json) or a "
                                                    "JSONL file of {task_id, predicted_label}"),
    agent: str = typer.Option("agent", help="the agent name a --verdicts run is reported under"),
) -> None:
    """Success rate overall and per difficulty level, per agent; judge verdicts name the prompts they used."""
    from mintgym.evals.online_mind2web.report import (
        load_human_labels,
        load_tasks,
        load_verdicts,
        render_text,
        success_rates,
        verdict_sources,
    )

    if (labels is None) == (verdicts is None):
        _fail("give exactly one of --labels and --verdicts")
    try:
        task_list = load_tasks(tasks)
        outcomes = load_human_labels(labels) if labels else {agent: load_verdicts(verdicts)}
        table = success_rates(outcomes, task_list)
        sources = verdict_sources(verdicts) if verdicts else []
    except (OSError, ValueError) as err:
        _fail(str(err))
    for source in sources:
        typer.echo(f"WebJudge prompts: {source}")
    typer.echo(render_text(table))


@report_app.command("webjudge")
def webjudge(
    results: Path = typer.Option(..., help="a folder of <task_id>/ result folders "
                                           "(result.json v1 or v2 + trajectory/)"),
    base_url: str = typer.Option(..., help="an OpenAI-compatible server, e.g. https://api.openai.com/v1"),
    webjudge_root: Path | None = typer.Option(None, envvar="MINTGYM_WEBJUDGE_ROOT",
                                              help="a local copy of OSU-NLP-Group/Online-Mind2Web: judge with the "
                                                   "authors' prompts, read from it"),
    mintgym_prompts: bool = typer.Option(False, "--mintgym-prompts",
                                         help="judge with MintGym's own wording instead (labelled as such)"),
    model: str | None = typer.Option(None,
                                     help="the judge model (default: the server's first; the authors use o4-mini)"),
    api_key: str | None = typer.Option(None, envvar="MINTGYM_JUDGE_API_KEY", help="the server's key"),
    score_threshold: int = typer.Option(3, help="keep screenshots rated at least this (the authors' default 3)"),
    max_new_tokens: int | None = typer.Option(None, min=1, help="one token limit for every call (default: the "
                                                                "authors' code's own)"),
    out: Path | None = typer.Option(None, help="write <task_id>/judge.json here instead of into the result folders"),
    tasks: Path | None = typer.Option(None, help="a task list: also print success rates per level"),
    agent: str = typer.Option("agent", help="the name the success rates are printed under"),
) -> None:
    """Judge result folders with WebJudge; each verdict goes to <task_id>/judge.json (judged folders are kept)."""
    from mintgym.errors import MintGymError
    from mintgym.evals.online_mind2web.judge import WebJudge, judge_results
    from mintgym.evals.online_mind2web.official import load_official
    from mintgym.evals.online_mind2web.prompts import mintgym_fallback
    from mintgym.inference.openai import OpenAIEngine

    if (webjudge_root is None) == (not mintgym_prompts):
        _fail("give exactly one of --webjudge-root (a local copy of OSU-NLP-Group/Online-Mind2Web, for the authors' "
              "prompts) and --mintgym-prompts (MintGym's own wording)")
    try:
        prompts = load_official(webjudge_root) if webjudge_root is not None else mintgym_fallback()
    except (OSError, ValueError) as err:
        _fail(str(err))
    typer.echo(f"WebJudge prompts: {prompts.label}")
    engine = OpenAIEngine(base_url, model, api_key=api_key, token_ids="off")
    try:
        judge = WebJudge(engine, prompts, score_threshold=score_threshold, max_new_tokens=max_new_tokens)
        verdicts = judge_results(results, judge, out)
    except (OSError, ValueError, MintGymError) as err:
        _fail(str(err))
    finally:
        engine.close()
    wins = sum(v.success for v in verdicts)
    typer.echo(f"{wins}/{len(verdicts)} tasks judged successful")
    if tasks is not None:
        online_mind2web(tasks=tasks, labels=None, verdicts=out or results, agent=agent)
