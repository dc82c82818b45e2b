"""The ScreenSpot grounding run: one step per sample, one ``click``, scored as the official code scores it.

Each sample is a one-step episode in the shared observation and action space: the screenshot at its
native size and the instruction; the agent answers one ``click(x=, y=)`` (for a ScreenSpot-Pro sample of
negative ground truth it may instead answer ``done(success=False)``: the target is not there). The verdict
is taken on the model's own numbers in the frame it answered in (the agent's record of it), normalized as
the official model wrappers normalize them (:func:`~mintgym.evals.screenspot.scoring.normalized_point`):
no rounding to screen pixels comes first. An answer with no point is ``wrong_format``; a point off the
image is ``wrong``, as officially.

Outputs, under ``out``: ``run.json`` (what made the run: the samples, the agent as ``describe`` names it;
only the same run resumes the folder, see :mod:`mintgym.run_record`), ``predictions.jsonl`` (one record per
sample as it finishes; a re-run skips the samples already there), ``results.json`` in ScreenSpot-Pro's
results layout (``details`` + ``metrics``, each record with the model's numbers ``model_point`` and its
``frame``, so ``mintgym report screenspot --predictions`` rescores it exactly) and ``report.html``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mintgym.action_spaces import DESKTOP, Click, Done, Tap
from mintgym.action_spaces.errors import InvalidAction
from mintgym.action_spaces.frames import CoordinateFrame, frame_from_name
from mintgym.action_spaces.sets import ActionSet
from mintgym.env.declarations import declaration
from mintgym.evals.screenspot.data import GroundingSample, expand_pro, load_pro, load_screenspot
from mintgym.evals.screenspot.options import ProOptions, SeeClickOptions
from mintgym.evals.screenspot.scoring import breakdowns, classify, negative_verdict, normalized_point
from mintgym.evals.suite_options import parse_suite_options
from mintgym.policy import Agent, AgentContext, AgentStep
from mintgym.run_record import check_folder
from mintgym.types import Observation

#: The action set of a grounding step: one click.
GROUNDING = DESKTOP.restrict("grounding", ["click"])
#: A negative-ground-truth step may also say the target is absent.
GROUNDING_OR_ABSENT = DESKTOP.restrict("grounding-or-absent", ["click", "done"])
ABSENT_HINT = "If no element on the screen fits this instruction, answer done(success=False) instead of clicking."


def agent_frame(agent: Agent, extra: dict[str, Any]) -> str | None:
    """The coordinate frame a step was answered in: the agent's own record of it, else its declared frame."""
    if extra.get("frame"):
        return str(extra["frame"])
    frame = getattr(agent, "frame", None)
    return getattr(frame, "spec", None)


@dataclass
class _FieldRecorder:
    """A coordinate frame for the shared parser that keeps the fields it was given before converting them."""

    frame: CoordinateFrame
    fields: dict[str, Any] | None = None
    needs_screen_size: bool = True

    def convert_fields(self, fields: Any, points: Any, screen_size: Any) -> dict[str, Any]:
        self.fields = dict(fields)
        return self.frame.convert_fields(fields, points, screen_size)


def model_answer(step: AgentStep, frame: str | None, action_set: ActionSet,
                 size: tuple[int, int]) -> tuple[str, list[float] | None, str]:
    """(action type, the model's own point or None, its frame) of a step.

    The step's text is read again by the shared parser to keep the numbers the model wrote (the agent's
    action holds them already turned into screen pixels); a point off the frame is kept too. An agent with
    no text or frame answers in screen pixels (``absolute``).
    """
    if step.text and frame:
        recorder = _FieldRecorder(frame_from_name(frame))
        try:
            action_set.parse(step.text, frame=recorder, screen_size=size)  # type: ignore[arg-type]
        except InvalidAction:
            pass
        fields = recorder.fields or {}
        point = [fields.get("x"), fields.get("y")]
        if fields.get("type") in ("click", "tap") and all(_finite(v) for v in point):
            return "click", point, frame
        if fields.get("type") == "done":
            return "done", None, frame
    action = step.action
    if isinstance(action, (Click, Tap)):
        return "click", [action.x, action.y], "absolute"
    return ("done" if isinstance(action, Done) else "none"), None, frame or "absolute"


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


async def ground(agent: Agent, sample: GroundingSample) -> dict[str, Any]:
    """Show ``sample`` to ``agent`` once and score its answer; the record in Pro's results layout."""
    image = sample.image()
    shot = np.asarray(image, dtype=np.uint8)
    size = (shot.shape[1], shot.shape[0])
    if sample.img_size is not None and tuple(sample.img_size) != size:
        raise ValueError(f"sample {sample.id}: annotation says {sample.img_size} but the image is {size}")
    negative = sample.gt_type == "negative"
    action_set = GROUNDING_OR_ABSENT if negative else GROUNDING
    instruction = f"{sample.instruction}\n{ABSENT_HINT}" if negative else sample.instruction
    await agent.start(AgentContext(task_id=sample.key, domain="desktop", instruction=instruction,
                                   action_set=action_set, screen_size=size, max_steps=1,
                                   screen_hint=declaration("desktop").screen_hint))
    step = await agent.act(Observation(screenshot=shot, instruction=instruction, domain="desktop",
                                       step=0, frame_id=f"{sample.key}:0"))
    kind, point, frame = model_answer(step, agent_frame(agent, step.extra), action_set, size)
    norm = None if point is None else normalized_point(point, frame, size)
    record = sample.record()
    record.update(img_size=list(size), model_point=point, frame=frame, raw_response=step.text,
                  pred=None if norm is None else [norm[0] * size[0], norm[1] * size[1]],  # eval_screenspot_pro.py:401
                  error=step.error)  # also for a point the agent's frame refused (off the image): scored, and said why
    if negative:
        record["result"] = {"done": "negative", "click": "positive"}.get(kind, "wrong_format")
        record["correctness"] = negative_verdict(record["result"])
    else:
        record["correctness"] = classify(point, sample.bbox, size, frame)
    return record


def samples_key(samples: Sequence[GroundingSample]) -> str:
    """The sample set, as the run folder records it: how many, and a digest of their ids."""
    digest = hashlib.sha256("\n".join(s.key for s in samples).encode()).hexdigest()[:16]
    return f"{samples[0].benchmark}: {len(samples)} samples, ids sha256:{digest}"


def run_screenspot(samples: Sequence[GroundingSample], make_agent: Callable[[], Agent], out: str | Path, *,
                   concurrency: int = 1, describe: dict[str, Any] | None = None, force: bool = False) -> dict[str, Any]:
    """Ground every sample not yet in ``out/predictions.jsonl``; write results.json and report.html.

    ``out`` is resumed only by the run that made it (the same samples and ``describe``); another run is
    refused with a one-line :class:`~mintgym.errors.MintGymError`, or with ``force`` starts afresh after the
    old folder is moved aside."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    if not samples:
        raise ValueError("no ScreenSpot samples to run")
    keys: dict[str, GroundingSample] = {}
    for s in samples:
        if s.key in keys:
            raise ValueError(f"two samples are one sample {s.key!r} ({keys[s.key].instruction!r} and "
                             f"{s.instruction!r}); keep one per id")
        keys[s.key] = s
    out = Path(out)
    check_folder(out, "screenspot", {**(describe or {}), "samples": samples_key(samples)}, force=force,
                 labels={"samples": "--data", "agent_options": "--agent-option"},
                 markers=("predictions.jsonl", "results.json"), what="predictions").apply()
    done = read_predictions(out / "predictions.jsonl", key="key")
    pending = [s for s in samples if s.key not in done]

    async def main() -> None:
        queue: asyncio.Queue[GroundingSample] = asyncio.Queue()
        for s in pending:
            queue.put_nowait(s)
        with (out / "predictions.jsonl").open("a") as sink:
            async def worker() -> None:
                agent = make_agent()
                while not queue.empty():
                    sample = queue.get_nowait()
                    record = await ground(agent, sample)
                    done[sample.key] = record
                    sink.write(json.dumps(record) + "\n")
                    sink.flush()

            await asyncio.gather(*(worker() for _ in range(min(concurrency, max(1, len(pending))))))

    asyncio.run(main())
    records = [done[s.key] for s in samples]
    benchmark = samples[0].benchmark
    results = {"benchmark": benchmark, "config": dict(describe or {}),
               "frames": sorted({str(r.get("frame")) for r in records}),
               "metrics": breakdowns(records, benchmark), "details": records}
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(results, indent=1))
    os.replace(tmp, out / "results.json")
    from mintgym.evals.screenspot.report import write_report

    write_report(out / "report.html", results)
    return results


def read_predictions(path: Path, key: str = "id") -> dict[str, dict[str, Any]]:
    """JSONL records already written by an earlier run, by ``record[key]`` (a torn line is ignored: it runs again)."""
    done: dict[str, dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            done[str(record.get(key, record.get("id")))] = record  # runs before sample keys: by id
    return done


#: Suite name -> the dataset version it reads.
SUITE_VERSIONS = {"screenspot": "v1", "screenspot-v2": "v2", "screenspot-pro": "pro"}


def run_suite(name: str, *, data: str | Path, make_agent: Callable[[], Agent], out: str | Path,
              describe: dict[str, Any] | None = None, concurrency: int = 1, force: bool = False,
              suite_options: dict[str, str] | None = None, **_: Any) -> str:
    """``mintgym eval --suite screenspot[-v2|-pro] --data PATH [--suite-option KEY=VALUE]``: run it, return its
    tables."""
    from mintgym.evals.screenspot.report import render_text

    if name not in SUITE_VERSIONS:
        raise ValueError(f"unknown ScreenSpot suite {name!r}; known: {', '.join(SUITE_VERSIONS)}")
    version = SUITE_VERSIONS[name]
    options = parse_suite_options(ProOptions if version == "pro" else SeeClickOptions, suite_options, name)
    if isinstance(options, ProOptions):
        samples = expand_pro(load_pro(Path(data)), options.inst_style, options.gt_type, options.language)
    else:
        samples = load_screenspot(data, version)
    return render_text(run_screenspot(samples, make_agent, out, concurrency=concurrency, describe=describe,
                                      force=force))
