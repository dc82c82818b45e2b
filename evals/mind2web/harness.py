"""The offline Multimodal-Mind2Web run: every action of a task is a short episode, scored at step level.

What the agent sees: one viewport of the page before the action, and as instruction the task and the
gold previous actions (teacher forcing). Pages are taller than a viewport; like SeeAct's offline setup,
the page is cut into consecutive viewport-high pieces from the top and the agent is shown the piece that
holds the centre of the target element (the last piece is aligned to the page bottom). The piece's
position follows only from the page grid, so it does not tell where in the view the target is.

What the agent answers, in the shared actions: ``click(x, y)`` on the element, then either ``done()``
(a CLICK) or ``type(text=...)`` (a TYPE, or a SELECT when the clicked element is a ``<select>``: typing an
option's label is how a keyboard picks it). A ``type`` with no click is a TYPE on no element. At most two
actions per step. The click is mapped from viewport to page pixels and then to the candidate element
whose box contains it (the smallest one), and scored by :mod:`mintgym.evals.mind2web.metrics`.

Outputs under ``out/<split>/``: ``run.json`` (what made the run: the split, the dataset, the viewport, the
agent as ``describe`` names it; only the same run resumes the folder, see :mod:`mintgym.run_record`),
``steps.jsonl`` (one verdict per step as it finishes; re-runs skip them),
``results.json`` (the paper's metrics, per task and per step) and ``report.html``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
from mintgym.action_spaces import WEB, Click, Type
from mintgym.evals.mind2web.data import Mind2WebStep
from mintgym.evals.mind2web.metrics import aggregate, element_at, score_step
from mintgym.evals.screenspot.harness import read_predictions

from mintgym.errors import MintGymError
from mintgym.policy import Agent, AgentContext
from mintgym.run_record import RECORD, check_folder, read_record
from mintgym.types import Observation

#: The actions of a Mind2Web step.
MIND2WEB_ACTIONS = WEB.restrict("mind2web", ["click", "type", "done"])
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
            "Click the element the next action acts on; then call done() if the action is a click, or "
            "type(text=...) with the text to enter or the option to select.")


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


async def play_step(agent: Agent, step: Mind2WebStep, viewport: tuple[int, int] = VIEWPORT) -> dict[str, Any]:
    """Show one step to the agent, read its (at most two) actions, and score them."""
    shot, top = show(step, viewport)
    size = (shot.shape[1], shot.shape[0])
    text = instruction_text(step)
    await agent.start(AgentContext(task_id=step.key, domain="web", instruction=text,
                                   action_set=MIND2WEB_ACTIONS, screen_size=size, max_steps=2))
    element = click = None
    op, value, answers, frame = None, "", [], None
    for turn in range(2):
        answer = await agent.act(Observation(screenshot=shot, instruction=text, domain="web", step=turn,
                                             frame_id=f"{step.key}:{turn}"))
        answers.append(answer.text)
        frame = answer.extra.get("frame") or frame
        action = answer.action
        if isinstance(action, Click) and turn == 0:
            click = [action.x, action.y + top]
            element = element_at(step.candidates, action.x, action.y + top)
            op = "CLICK"
            continue
        if isinstance(action, Type):
            op = "SELECT" if element is not None and element.tag.lower() == "select" else "TYPE"
            value = action.text
        break
    score = score_step(step, element, op, value)
    if frame is None:
        frame = getattr(getattr(agent, "frame", None), "spec", None)
    return {**score.to_json(), "click_page_xy": click, "viewport_top": top, "answers": answers, "frame": frame,
            "task": step.task, "website": step.website, "domain": step.domain}


def _is_split_folder(path: Path) -> bool:
    record = read_record(path) if path.is_dir() else None
    return (record is not None and record["kind"] == "mind2web") or (path / "steps.jsonl").is_file()


def run_split(steps: Iterable[Mind2WebStep], make_agent: Callable[[], Agent], out: str | Path, split: str, *,
              viewport: tuple[int, int] = VIEWPORT, describe: dict[str, Any] | None = None,
              dataset: str | None = None, force: bool = False) -> dict[str, Any]:
    """Play every step not yet in ``out/<split>/steps.jsonl``; write results.json and report.html.

    ``out`` holds one folder per split. A split's folder is resumed only by the run that made it (the same
    split, ``dataset``, viewport and ``describe``); another run is refused with a one-line
    :class:`~mintgym.errors.MintGymError`, or with ``force`` starts afresh after the old folder is moved aside.
    """
    out = Path(out)
    if out.is_dir() and ((out / RECORD).exists() or (any(out.iterdir())
                                                      and not any(_is_split_folder(p) for p in out.iterdir()))):
        raise MintGymError(f"--out {out} is not empty and holds no Mind2Web split folders; give a new or empty "
                           "folder (nothing was written there)")
    folder = out / split
    key = {**(describe or {}), "split": split, "dataset": dataset, "viewport": list(viewport)}
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
            row = asyncio.run(play_step(agent, step, viewport))
            done[step.key] = row
            sink.write(json.dumps(row) + "\n")
            sink.flush()
    if not order:
        raise ValueError(f"split {split!r} has no steps")
    rows = [done[k] for k in order]
    results = {"benchmark": "multimodal-mind2web", "split": split, "config": dict(describe or {}),
               "viewport": list(viewport), "frames": sorted({str(r.get("frame")) for r in rows}),
               "metrics": aggregate(rows), "steps": rows}
    tmp = folder / "results.json.tmp"
    tmp.write_text(json.dumps(results, indent=1))
    os.replace(tmp, folder / "results.json")
    from mintgym.evals.mind2web.report import write_report

    write_report(folder / "report.html", results)
    return results


def run_suite(name: str, *, data: str | Path, make_agent: Callable[[], Agent], out: str | Path,
              describe: dict[str, Any] | None = None, force: bool = False, **_: Any) -> str:
    """``mintgym eval --suite mind2web-test-{task,website,domain} --data PATH``: the paper's table as text."""
    from mintgym.evals.mind2web.data import SPLITS, iter_steps
    from mintgym.evals.mind2web.report import paper_table

    split = name.removeprefix("mind2web-").replace("-", "_")
    if split not in SPLITS:
        raise ValueError(f"unknown Mind2Web suite {name!r}; known: {', '.join('mind2web-' + s.replace('_', '-') for s in SPLITS)}")
    return paper_table([run_split(iter_steps(data, split), make_agent, out, split, describe=describe,
                                  dataset=str(Path(data).expanduser().resolve()), force=force)])
