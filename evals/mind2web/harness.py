"""The offline Multimodal-Mind2Web run: every action of a task is a short episode, scored at step level.

What the agent sees: one viewport of the page before the action, and as instruction the task and the
gold previous actions (teacher forcing). Pages are taller than a viewport; like SeeAct's offline setup,
the page is cut into consecutive viewport-high pieces from the top and the agent is shown the piece that
holds the centre of the target element (the last piece is aligned to the page bottom). The piece's
position follows only from the page grid, so it does not tell where in the view the target is.

What the agent answers, in the shared actions: ``click(x, y)`` on the element, then ``done()`` (a CLICK),
``type(text=...)`` (a TYPE; the text may be empty) or ``select(text=...)`` (a SELECT): the agent chooses its
operation, as the official multiple-choice model does. A ``type``/``select`` with no click names no element.
At most two actions per step. The click is mapped from viewport to page pixels and then to the top-k
candidate whose box holds it (:func:`~mintgym.evals.mind2web.metrics.element_at`).

Each step is scored under both protocols and both are kept: ``official`` (the official multiple-choice rules,
:mod:`~mintgym.evals.mind2web.metrics`) and ``seeclick`` (SeeClick's click-in-box rules,
:mod:`~mintgym.evals.mind2web.seeclick`, with the gold box of the first positive in the viewport shown);
``protocol`` picks the headline table.

Outputs under ``out/<split>/``: ``run.json`` (what made the run: the split, the dataset, the viewport, the
agent as ``describe`` names it; only the same run resumes the folder, see :mod:`mintgym.run_record`),
``steps.jsonl`` (one verdict per step as it finishes; re-runs skip them),
``results.json`` (both protocols' figures, per step too), the official layout's
``<split>_predictions_top<k>.json`` and ``<split>_results_top<k>.json`` (the latter absent when every step was
cut, as the official code then has no result), and ``report.html``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from mintgym.action_spaces import WEB, Click, Select, Type
from mintgym.env.declarations import declaration
from mintgym.errors import MintGymError
from mintgym.evals.mind2web import seeclick
from mintgym.evals.mind2web.data import Mind2WebStep, load_ranks
from mintgym.evals.mind2web.metrics import TOP_K, aggregate, element_at, score_step
from mintgym.evals.mind2web.options import Mind2WebOptions
from mintgym.evals.screenspot.harness import read_predictions
from mintgym.evals.suite_options import parse_suite_options
from mintgym.policy import Agent, AgentContext
from mintgym.run_record import RECORD, check_folder, read_record
from mintgym.types import Observation

#: The actions of a Mind2Web step.
MIND2WEB_ACTIONS = WEB.restrict("mind2web", ["click", "type", "done"]).extend("mind2web", Select)
VIEWPORT = (1280, 720)


def viewport_top(page_height: int, target_y: float | None, view_height: int) -> int:
    """Top of the viewport-high piece of the page that holds ``target_y`` (the page grid, bottom-aligned last)."""
    if page_height <= view_height or target_y is None:
        return 0
    top = int(target_y // view_height) * view_height
    return max(0, min(top, page_height - view_height))


def instruction_text(step: Mind2WebStep) -> str:
    previous = "\n".join(step.previous_actions) if step.previous_actions else "None"
    return (f"Task: {step.task}\nPrevious actions:\n{previous}\n"
            "Click the element the next action acts on; then call done() if the action is a click, "
            "type(text=...) with the text to enter, or select(text=...) with the option to choose.")


def show(step: Mind2WebStep, viewport: tuple[int, int] = VIEWPORT) -> tuple[np.ndarray, int]:
    """The viewport image shown for ``step`` and its top offset in page pixels."""
    if not hasattr(step.screenshot, "convert"):
        raise ValueError(f"step {step.key} has no screenshot image (got {type(step.screenshot).__name__})")
    page = step.screenshot.convert("RGB")
    target = step.positives[0].box if step.positives and step.positives[0].box else None
    top = viewport_top(page.height, (target[1] + target[3]) / 2 if target else None, viewport[1])
    width = min(viewport[0], page.width)
    view = page.crop((0, top, width, min(page.height, top + viewport[1])))
    return np.asarray(view, dtype=np.uint8), top


def seeclick_verdict(step: Mind2WebStep, top: int, pred: seeclick.Prediction | None,
                     size: tuple[int, int]) -> dict[str, Any] | None:
    """The step under SeeClick's rules, its gold box the first positive's in the viewport; None: skipped."""
    box = step.positives[0].box if step.positives else None
    if box is None:
        return None
    gold = seeclick.Box(x=box[0], y=box[1] - top, width=box[2] - box[0], height=box[3] - box[1])
    ref = seeclick.reference({"original_op": step.original_op, "value": step.value}, gold, size)
    return None if ref is None else seeclick.score_step(*ref, pred, size)


async def play_step(agent: Agent, step: Mind2WebStep, viewport: tuple[int, int] = VIEWPORT,
                    top_k: int = TOP_K) -> dict[str, Any]:
    """Show one step to the agent, read its (at most two) actions, and score them under both protocols."""
    shot, top = show(step, viewport)
    size = (shot.shape[1], shot.shape[0])
    text = instruction_text(step)
    await agent.start(AgentContext(task_id=step.key, domain="web", instruction=text,
                                   action_set=MIND2WEB_ACTIONS, screen_size=size, max_steps=2,
                                   screen_hint=declaration("web").screen_hint))
    element = click = None
    op, value, answers, frame = None, "", [], None
    for turn in range(2):
        answer = await agent.act(Observation(screenshot=shot, instruction=text, domain="web", step=turn,
                                             frame_id=f"{step.key}:{turn}"))
        answers.append(answer.text)
        frame = answer.extra.get("frame") or frame
        action = answer.action
        if isinstance(action, Click) and turn == 0:
            click = (action.x, action.y)
            element = element_at(step.candidates, action.x, action.y + top, top_k)
            op = "CLICK"
            continue
        if isinstance(action, (Type, Select)):
            op, value = ("TYPE" if isinstance(action, Type) else "SELECT"), action.text
        break  # done() keeps the click's CLICK; anything else ends the step as it stands
    score = score_step(step, element.backend_node_id if element else None, op, value, top_k)
    pred = None if op is None else seeclick.Prediction(op=op, click=click, value=value)
    try:
        verdict, refused = seeclick_verdict(step, top, pred, size), None
    except ValueError as err:  # SeeClick's evaluation would stop here; the official protocol goes on
        verdict, refused = None, f"step {step.key}: {err}"
    if frame is None:
        frame = getattr(getattr(agent, "frame", None), "spec", None)
    return {**score.to_json(), "seeclick": verdict, "seeclick_refused": refused, "operation": op, "value": value,
            "click_view_xy": click,
            "click_page_xy": None if click is None else [click[0], click[1] + top], "viewport_top": top,
            "image_size": list(size), "answers": answers, "frame": frame, "task": step.task, "domain": step.domain}


def seeclick_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """SeeClick's figures over the rows, episodes in first-seen task order (skipped steps left out)."""
    refused = next((r["seeclick_refused"] for r in rows if r.get("seeclick_refused")), None)
    if refused:
        return {"error": refused}
    episodes: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        episodes.setdefault(r["annotation_id"], [])
        if r.get("seeclick") is not None:
            episodes[r["annotation_id"]].append(r["seeclick"])
    try:
        return seeclick.aggregate(list(episodes.values()))
    except ValueError as err:
        return {"error": str(err)}


def _is_split_folder(path: Path) -> bool:
    record = read_record(path) if path.is_dir() else None
    return (record is not None and record["kind"] == "mind2web") or (path / "steps.jsonl").is_file()


def run_split(steps: Iterable[Mind2WebStep], make_agent: Callable[[], Agent], out: str | Path, split: str, *,
              viewport: tuple[int, int] = VIEWPORT, describe: dict[str, Any] | None = None,
              dataset: str | None = None, force: bool = False, options: Mind2WebOptions | None = None
              ) -> dict[str, Any]:
    """Play every step not yet in ``out/<split>/steps.jsonl``; write results.json and report.html.

    ``out`` holds one folder per split. A split's folder is resumed only by the run that made it (the same
    split, ``dataset``, viewport and ``describe``); another run is refused with a one-line
    :class:`~mintgym.errors.MintGymError`, or with ``force`` starts afresh after the old folder is moved aside.
    """
    options = options or Mind2WebOptions()
    out = Path(out)
    if out.is_dir() and ((out / RECORD).exists() or (any(out.iterdir())
                                                      and not any(_is_split_folder(p) for p in out.iterdir()))):
        raise MintGymError(f"--out {out} is not empty and holds no Mind2Web split folders; give a new or empty "
                           "folder (nothing was written there)")
    folder = out / split
    key = {**(describe or {}), "split": split, "dataset": dataset, "viewport": list(viewport),
           "scores": None if options.scores is None else str(options.scores), "top_k": options.top_k,
           "scoring": "official-mc+seeclick"}
    check_folder(folder, "mind2web", key, force=force, labels={"dataset": "--data", "agent_options": "--agent-option"},
                 markers=("steps.jsonl", "results.json"), what="steps").apply()
    log = folder / "steps.jsonl"
    done = read_predictions(log, key="key")
    agent = make_agent()
    order = []
    with log.open("a") as sink:
        for step in steps:
            order.append(step.key)
            if step.key in done:
                continue
            row = asyncio.run(play_step(agent, step, viewport, options.top_k))
            done[step.key] = row
            sink.write(json.dumps(row) + "\n")
            sink.flush()
    if not order:
        raise ValueError(f"split {split!r} has no steps")
    rows = [done[k] for k in order]
    metrics = aggregate(rows)
    results = {"benchmark": "multimodal-mind2web", "split": split, "protocol": options.protocol,
               "top_k": options.top_k,
               "ranks": None if options.scores is None else str(options.scores), "config": dict(describe or {}),
               "viewport": list(viewport), "frames": sorted({str(r.get("frame")) for r in rows}),
               "metrics": metrics, "seeclick": seeclick_figures(rows), "steps": rows}
    _write(folder / "results.json", results)
    _write(folder / f"{split}_predictions_top{options.top_k}.json", [r["official_prediction"] for r in rows])
    if metrics.get("official") is not None:
        _write(folder / f"{split}_results_top{options.top_k}.json", metrics["official"])
    from mintgym.evals.mind2web.report import write_report

    write_report(folder / "report.html", results)
    return results


def _write(path: Path, doc: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)


def run_suite(name: str, *, data: str | Path, make_agent: Callable[[], Agent], out: str | Path,
              describe: dict[str, Any] | None = None, force: bool = False,
              suite_options: dict[str, str] | None = None, **_: Any) -> str:
    """``mintgym eval --suite mind2web-test-{task,website,domain} --data PATH [--suite-option K=V]``: the table."""
    from mintgym.evals.mind2web.data import SPLITS, iter_steps
    from mintgym.evals.mind2web.report import paper_table

    split = name.removeprefix("mind2web-").replace("-", "_")
    if split not in SPLITS:
        raise ValueError(f"unknown Mind2Web suite {name!r}; known: "
                         f"{', '.join('mind2web-' + s.replace('_', '-') for s in SPLITS)}")
    options = parse_suite_options(Mind2WebOptions, suite_options, name)
    ranks = load_ranks(options.scores) if options.scores is not None else None
    results = run_split(iter_steps(data, split, ranks), make_agent, out, split, describe=describe,
                        dataset=str(Path(data).expanduser().resolve()), force=force, options=options)
    return paper_table([results], options.protocol)
