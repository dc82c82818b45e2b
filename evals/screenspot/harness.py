"""The ScreenSpot grounding run: one step per sample, one ``click``, scored by point-in-box.

Each sample is a one-step episode in the shared observation and action space: the screenshot at its
native size and the instruction; the agent answers one ``click(x=, y=)``. The agent converts its model's
coordinates into screen pixels through the :class:`~mintgym.action_spaces.frames.CoordinateFrame` it
declares (absolute on a resized image, 0-1000, 0-1); the harness records that frame with every
prediction. An answer that is not a click, does not parse, or puts the point off the image (the agent's
frame refuses it) is ``wrong_format``; the official scripts would count an off-image point as ``wrong``
(a failure either way; only the wrong_format count differs).

Outputs, under ``out``: ``run.json`` (what made the run: the samples, the agent as ``describe`` names it;
only the same run resumes the folder, see :mod:`mintgym.run_record`), ``predictions.jsonl`` (one record per
sample as it finishes; a re-run skips the samples already there), ``results.json`` in ScreenSpot-Pro's results layout (``details`` + ``metrics``,
so ``mintgym report screenspot --predictions`` rescores it) and ``report.html``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from mintgym.action_spaces import DESKTOP, Click, Tap
from mintgym.evals.screenspot.data import GroundingSample
from mintgym.evals.screenspot.scoring import WRONG_FORMAT, breakdowns, classify

from mintgym.policy import Agent, AgentContext
from mintgym.run_record import check_folder
from mintgym.types import Observation

#: The action set of a grounding step: one click.
GROUNDING = DESKTOP.restrict("grounding", ["click"])


def agent_frame(agent: Agent, extra: dict[str, Any]) -> str | None:
    """The coordinate frame a step was answered in: the agent's own record of it, else its declared frame."""
    if extra.get("frame"):
        return str(extra["frame"])
    frame = getattr(agent, "frame", None)
    return getattr(frame, "spec", None)


async def ground(agent: Agent, sample: GroundingSample) -> dict[str, Any]:
    """Show ``sample`` to ``agent`` once and score its click; the record in Pro's results layout."""
    image = sample.image()
    shot = np.asarray(image, dtype=np.uint8)
    size = (shot.shape[1], shot.shape[0])
    if sample.img_size is not None and tuple(sample.img_size) != size:
        raise ValueError(f"sample {sample.id}: annotation says {sample.img_size} but the image is {size}")
    await agent.start(AgentContext(task_id=sample.id, domain="desktop", instruction=sample.instruction,
                                   action_set=GROUNDING, screen_size=size, max_steps=1))
    step = await agent.act(Observation(screenshot=shot, instruction=sample.instruction, domain="desktop",
                                       step=0, frame_id=f"{sample.id}:0"))
    action = step.action
    point = [action.x, action.y] if isinstance(action, (Click, Tap)) else None
    record = sample.record()
    record.update(img_size=list(size), pred=point, raw_response=step.text, frame=agent_frame(agent, step.extra),
                  error=step.error if point is None else None,
                  correctness=classify(point, sample.bbox, size) if point is not None else WRONG_FORMAT)
    return record


def samples_key(samples: Sequence[GroundingSample]) -> str:
    """The sample set, as the run folder records it: how many, and a digest of their ids."""
    digest = hashlib.sha256("\n".join(s.id for s in samples).encode()).hexdigest()[:16]
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
    out = Path(out)
    check_folder(out, "screenspot", {**(describe or {}), "samples": samples_key(samples)}, force=force,
                 labels={"samples": "--data", "agent_options": "--agent-option"},
                 markers=("predictions.jsonl", "results.json"), what="predictions").apply()
    done = read_predictions(out / "predictions.jsonl")
    pending = [s for s in samples if s.id not in done]

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
                    done[sample.id] = record
                    sink.write(json.dumps(record) + "\n")
                    sink.flush()

            await asyncio.gather(*(worker() for _ in range(min(concurrency, max(1, len(pending))))))

    asyncio.run(main())
    records = [done[s.id] for s in samples]
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
            done[str(record[key])] = record
    return done


#: Suite name -> the dataset version it reads.
SUITE_VERSIONS = {"screenspot": "v1", "screenspot-v2": "v2", "screenspot-pro": "pro"}


def run_suite(name: str, *, data: str | Path, make_agent: Callable[[], Agent], out: str | Path,
              describe: dict[str, Any] | None = None, concurrency: int = 1, force: bool = False, **_: Any) -> str:
    """``mintgym eval --suite screenspot[-v2|-pro] --data PATH``: run it and return its tables as text."""
    from mintgym.evals.screenspot.data import load_screenspot
    from mintgym.evals.screenspot.report import render_text

    if name not in SUITE_VERSIONS:
        raise ValueError(f"unknown ScreenSpot suite {name!r}; known: {', '.join(SUITE_VERSIONS)}")
    samples = load_screenspot(data, SUITE_VERSIONS[name])
    return render_text(run_screenspot(samples, make_agent, out, concurrency=concurrency, describe=describe,
                                      force=force))
