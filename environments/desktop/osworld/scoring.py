"""An OSWorld evaluator scored by the rules of OSWorld's ``DesktopEnv.evaluate`` (desktop-env 1.0.2).

1. ``postconfig`` steps run first, for every task (infeasible ones included).
2. ``infeasible`` tasks score 1 when the agent's last action was FAIL, else 0. Any other task scores 0 when
   the last action was FAIL. (MintGym's FAIL: ``done(success=False)``, the bare word ``fail``, or
   ``done(answer="FAIL")``.)
3. Metrics run in order. With ``conj`` "and" (the default) the first metric scoring 0 ends the evaluation
   with 0 and otherwise the score is the mean; with "or" the first metric scoring 1 ends it with 1 and
   otherwise the score is the maximum. ``options`` are passed as keyword arguments, ``expected`` (when the
   metric has an expected getter) as the second argument.
4. A result getter raising ``FileNotFoundError`` scores 0 under "and"; under "or" OSWorld goes on with the
   result value of the previous metric, and so does this (at the first metric there is none: that is an
   evaluation error).

Where OSWorld itself has no score to give, because ``evaluate`` raises (a metric raising, ``float(None)``
of a metric returning None inside a list, a getter raising anything else) and its run loop records no
result, MintGym must still end the episode with a number:

* a metric that returns None scores 0, one returning a number outside [0, 1] is clipped into it (rewards are
  in [0, 1]; OSWorld would report the raw number);
* a metric that raises scores 0, and the error is kept in :attr:`Evaluation.errors`;
* a getter that raises anything but FileNotFoundError is a fault of the environment, not of the agent: the
  exception propagates (as a config step that fails does);
* :class:`~.metric_loader.MissingDependency` (a metric needing a library left out) always propagates.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mintgym.environments.desktop.osworld.loader import Evaluator
from mintgym.environments.desktop.osworld.metrics import Metric, metric

log = logging.getLogger(__name__)

Getter = Callable[[dict], Awaitable[Any]]


@dataclass
class Evaluation:
    """The score of one evaluation and how it came about."""

    score: float
    #: Each metric's score as OSWorld's function returned it, in order, for the metrics that ran.
    scores: list[Any] = field(default_factory=list)
    #: "func: error" for each metric that raised (scored 0), and the FileNotFoundError of a result getter.
    errors: list[str] = field(default_factory=list)
    #: Why the score was decided without (all) metrics: "infeasible", "agent answered FAIL", "missing file", ...
    decided_by: str = ""


def is_fail(claimed_success: bool | None, answer: str | None) -> bool:
    """Whether an episode's last action was OSWorld's FAIL, in MintGym's terms."""
    return claimed_success is False or (answer or "").strip().upper() == "FAIL"


def as_score(value: Any) -> float:
    """OSWorld's metric value as a reward: None counts 0, bools and numpy numbers become floats, and the rare
    value outside [0, 1] (``run_sqlite3`` returns whatever its SQL selects) is clipped into it."""
    return 0.0 if value is None else min(1.0, max(0.0, float(value)))


async def evaluate(evaluator: Evaluator, *, last_action_failed: bool, get: Getter,
                   postconfig: Callable[[], Awaitable[None]] | None = None,
                   lookup: Callable[[str], Metric] = metric) -> Evaluation:
    """Score ``evaluator`` by OSWorld's rules (module docstring).

    Args:
        evaluator: the task's evaluator, as the loader read it.
        last_action_failed: whether the agent's last action was FAIL (:func:`is_fail`).
        get: runs one getter config (``{"type": "vm_file", ...}``) on the session and returns its value.
        postconfig: runs the evaluator's postconfig steps; None when there are none to run.
        lookup: metric name -> function; :func:`.metrics.metric` by default.
    """
    if postconfig is not None:
        await postconfig()
    if evaluator.infeasible:
        return Evaluation(1.0 if last_action_failed else 0.0, decided_by="infeasible")
    if last_action_failed:
        return Evaluation(0.0, decided_by="agent answered FAIL")
    functions = [lookup(name) for name in evaluator.funcs]  # unknown names fail before any getter runs
    out = Evaluation(0.0)
    result_value: Any = _UNSET
    for name, func, result, expected, options in zip(evaluator.funcs, functions, evaluator.results,
                                                     evaluator.expected, evaluator.options, strict=True):
        try:
            result_value = await get(result)
        except FileNotFoundError as err:
            out.errors.append(f"{name}: result getter: {err}")
            if evaluator.conj == "and":
                out.decided_by = "missing file"
                return out
            if result_value is _UNSET:
                out.errors.append(f"{name}: no earlier result to reuse (OSWorld raises here)")
                out.scores.append(None)
                continue
        args = [result_value] if expected is None else [result_value, await get(expected)]
        try:
            # In a thread: some metrics take seconds (SSIM, DTW over audio) and the server's loop serves others.
            value = await asyncio.to_thread(func, *args, **options)
        except Exception as err:  # noqa: BLE001 -- a metric tripping over the agent's output scores 0
            log.warning("OSWorld metric %s raised %s: %s", name, type(err).__name__, err)
            out.errors.append(f"{name}: {type(err).__name__}: {err}")
            value = None
        out.scores.append(value)
        score = as_score(value)
        if evaluator.conj == "and" and score == 0.0:
            out.decided_by = f"{name} scored 0"
            return out
        if evaluator.conj == "or" and score == 1.0:
            out.score, out.decided_by = 1.0, f"{name} scored 1"
            return out
    values = [as_score(v) for v in out.scores]
    out.score = (sum(values) / len(values) if evaluator.conj == "and" else max(values)) if values else 0.0
    return out


_UNSET: Any = object()
