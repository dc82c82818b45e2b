"""Run MintGym's OSWorld metrics side by side with desktop-env's own functions and count disagreements.

MintGym's side calls :func:`.metrics.metric` in this process (desktop-env modules loaded by
:mod:`.metric_loader`). The reference runs in a fresh interpreter that imports
``desktop_env.evaluators.metrics`` by the plain package path -- its ``__init__`` and all -- with only an
empty ``easyocr`` module provided (that import is otherwise impossible here) and tldextract kept offline.
Both sides see the same inputs (files made by :mod:`.metric_cases`); an outcome is the returned value (as a
float when it is a number) or the name of the exception raised.

Usage:
    >>> from mintgym.environments.desktop.osworld.metric_diff import run  # doctest: +SKIP
    >>> rows = run(Path("/tmp/osworld-diff"))             # doctest: +SKIP
    >>> print(table(rows))                                # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import os
import pickle
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mintgym.environments.desktop.osworld.metric_cases import Case, build_cases
from mintgym.environments.desktop.osworld.metrics import ROUTES, metric

#: Runs in a fresh interpreter (any Python with desktop-env, e.g. one with desktop-env's pinned libraries):
#: argv = [calls.pkl, outcomes.pkl]. Needs nothing of MintGym; values come back as float/None/repr text.
REFERENCE = """
import contextlib, io, os, pickle, sys, types
os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
try:
    import easyocr  # noqa: F401
except ImportError:
    sys.modules["easyocr"] = types.ModuleType("easyocr")
import desktop_env.evaluators.metrics as metrics
with open(sys.argv[1], "rb") as f:
    calls = pickle.load(f)
out = []
for blob in calls:
    name, args, kwargs = pickle.loads(blob)  # one at a time: a metric that edits its inputs affects no other case
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            value = getattr(metrics, name)(*args, **kwargs)
            if value is not None and not isinstance(value, str):
                try:
                    value = float(value)  # bool, int, numpy scalars (numpy's bool is no numbers.Number)
                except (TypeError, ValueError):
                    value = repr(value)
            out.append(("value", value))
        except Exception as err:
            out.append(("raise", type(err).__name__))
with open(sys.argv[2], "wb") as f:
    pickle.dump(out, f)
"""


def outcome_of(value: Any) -> tuple[str, Any]:
    """A comparable outcome: numbers (bool, int, numpy) as floats, NaN as "nan", None and text as they are,
    anything else by repr. Applied to both sides, after the reference process's own conversion."""
    if value is None or isinstance(value, str):
        return ("value", value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return ("value", repr(value))
    return ("value", "nan" if math.isnan(number) else number)


@dataclass
class Row:
    metric: str
    route: str
    cases: int
    disagreements: list[str]


def _ours(case: Case) -> tuple[str, Any]:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            args, kwargs = copy.deepcopy((case.args, case.kwargs))  # some metrics edit their inputs
            return outcome_of(metric(case.metric)(*args, **kwargs))
        except Exception as err:  # noqa: BLE001 -- the exception's name is the outcome compared
            return ("raise", type(err).__name__)


def reference(cases: list[Case], workdir: Path, python: str = sys.executable,
              timeout: float = 600) -> list[tuple[str, Any]]:
    """desktop-env's outcomes for ``cases``, computed by ``python`` in a fresh process by the plain import."""
    calls = [(c.reference or c.metric, c.ref_args if c.ref_args is not None else c.args,
              c.ref_kwargs if c.ref_kwargs is not None else c.kwargs) for c in cases]
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        src, dst = Path(tmp) / "calls.pkl", Path(tmp) / "outcomes.pkl"
        src.write_bytes(pickle.dumps([pickle.dumps(call) for call in calls]))
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        proc = subprocess.run([python, "-c", REFERENCE, str(src), str(dst)], cwd=tmp, env=env, check=False,
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"the desktop-env reference run failed (exit {proc.returncode}): "
                               f"{proc.stderr.strip()[-2000:]}")
        return [outcome if outcome[0] == "raise" else outcome_of(outcome[1])
                for outcome in pickle.loads(dst.read_bytes())]


def run(workdir: Path, python: str = sys.executable) -> list[Row]:
    """Build the cases under ``workdir``, run both sides (desktop-env's under ``python``), one row per metric."""
    workdir.mkdir(parents=True, exist_ok=True)
    cases = build_cases(workdir)
    theirs = reference(cases, workdir, python)
    cwd = os.getcwd()
    os.chdir(workdir)  # a few metrics write scratch files into the working directory
    try:
        ours = [_ours(c) for c in cases]
    finally:
        os.chdir(cwd)
    rows: dict[str, Row] = {name: Row(name, route, 0, []) for name, route in ROUTES.items()}
    for case, mine, ref in zip(cases, ours, theirs):
        row = rows[case.metric]
        row.cases += 1
        if mine != ref:
            row.disagreements.append(f"{case.label}: MintGym {mine} vs desktop-env {ref}")
    return list(rows.values())


def table(rows: list[Row]) -> str:
    """The per-metric summary as a Markdown table."""
    lines = ["| metric | route | cases | disagreements |", "|---|---|---:|---:|"]
    lines += [f"| `{r.metric}` | {r.route} | {r.cases} | {len(r.disagreements)} |" for r in rows]
    total = sum(r.cases for r in rows)
    lines.append(f"| **{len(rows)} metrics** | | **{total}** | **{sum(len(r.disagreements) for r in rows)}** |")
    return "\n".join(lines)
