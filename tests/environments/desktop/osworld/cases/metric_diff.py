"""MintGym's OSWorld metrics against desktop-env's own outcomes: run both, store desktop-env's, compare.

MintGym's side calls :func:`mintgym.environments.desktop.osworld.metrics.metric` in this process (desktop-env
modules loaded by its ``metric_loader``, or an ``own`` route). desktop-env's side runs in a fresh interpreter
that imports ``desktop_env.evaluators.metrics`` by the plain package path -- its ``__init__`` and all -- with only an
empty ``easyocr`` module provided (that import is otherwise impossible here) and tldextract kept offline.
Both sides see the same inputs (files made by :mod:`.metric_cases`); an outcome is the returned value made
comparable by :func:`outcome_of`, or the name of the exception raised.

desktop-env's outcomes are kept as data (:data:`OUTCOMES`, written by
``python benchmarks/osworld_metrics_diff.py --write``) so the test compares MintGym's routes with them
without running the reference.

Usage:
    >>> from tests.environments.desktop.osworld.cases.metric_diff import run  # doctest: +SKIP
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
import platform
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from mintgym.environments.desktop.osworld.metrics import ROUTES, metric
from tests.environments.desktop.osworld.cases.metric_cases import Case, build_cases

#: desktop-env's outcomes on the cases, checked in next to the test that reads them.
OUTCOMES = Path(__file__).resolve().parents[1] / "metric_outcomes.json"
#: The libraries whose versions the outcomes were computed with (recorded in :data:`OUTCOMES`).
LIBRARIES = ("desktop-env", "numpy", "pandas", "pillow", "scikit-image", "opencv-python-headless", "python-docx",
             "python-pptx", "openpyxl", "pymupdf", "librosa", "rapidfuzz", "mutagen", "odfpy")

#: Runs in a fresh interpreter (any Python with desktop-env, e.g. one with desktop-env's pinned libraries):
#: argv = [calls.pkl, outcomes.pkl, the OSWorld repository's metrics folder or ""]. Needs nothing of MintGym;
#: values come back pickled (repr text if not). A call naming a module takes its function from that file of
#: the OSWorld repository (metrics newer than desktop-env 1.0.2).
REFERENCE = """
import contextlib, importlib.util, io, os, pickle, sys, types
os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
try:
    import easyocr  # noqa: F401
except ImportError:
    sys.modules["easyocr"] = types.ModuleType("easyocr")
import desktop_env.evaluators.metrics as metrics
official = {}
def function(module, name):
    if module is None:
        return getattr(metrics, name)
    if module not in official:
        path = os.path.join(sys.argv[3], module + ".py")
        spec = importlib.util.spec_from_file_location("osworld_repo_" + module, path)
        official[module] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(official[module])
    return getattr(official[module], name)
with open(sys.argv[1], "rb") as f:
    calls = pickle.load(f)
out = []
for blob in calls:
    module, name, args, kwargs = pickle.loads(blob)  # one at a time: a metric editing its inputs affects no other
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            value = function(module, name)(*args, **kwargs)
            try:
                pickle.dumps(value)
            except Exception:
                value = repr(value)
            out.append(("value", value))
        except Exception as err:
            out.append(("raise", type(err).__name__))
with open(sys.argv[2], "wb") as f:
    pickle.dump(out, f)
"""

Outcome = tuple[str, Any]


def canonical(value: Any) -> Any:
    """A JSON value for a metric's return value: numbers (bool, int, numpy) as floats, NaN as "nan",
    sequences as lists, sets as sorted lists, mappings with text keys; anything else by repr."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((canonical(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    try:
        number = float(value)
    except (TypeError, ValueError):
        return repr(value)
    return "nan" if math.isnan(number) else number


def outcome_of(value: Any) -> Outcome:
    return ("value", canonical(value))


def same(a: Any, b: Any) -> bool:
    """Outcomes agree: equal, floats within 1e-6 (relative) of each other: the float32 signal metrics
    (compare_audios' pitch distance) differ in the 8th digit from one process to the next (CI saw 0.3652465183
    against 0.3652465309), while a metric that disagrees differs in the first digits."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def key(case: Case) -> str:
    return f"{case.metric} :: {case.label}"


@dataclass
class Row:
    metric: str
    route: str
    cases: int = 0
    disagreements: list[str] = field(default_factory=list)


class StoredOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["value", "raise"]
    value: Any = None


class OutcomeFile(BaseModel):
    """desktop-env's outcome on every differential case, and what computed it."""

    model_config = ConfigDict(extra="forbid")
    reference: str
    #: The OSWorld repository snapshot whose code is the reference of the ``official`` cases.
    osworld_repository: str
    python: str
    libraries: dict[str, str]
    generated_by: str
    outcomes: dict[str, StoredOutcome]


def _ours(case: Case) -> Outcome:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            args, kwargs = copy.deepcopy((case.args, case.kwargs))  # some metrics edit their inputs
            return outcome_of(metric(case.metric)(*args, **kwargs))
        except Exception as err:  # noqa: BLE001 -- the exception's name is the outcome compared
            return ("raise", type(err).__name__)


def ours(cases: list[Case], workdir: Path) -> list[Outcome]:
    """MintGym's outcomes, run with ``workdir`` as the working folder (a few metrics write scratch files there)."""
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        return [_ours(c) for c in cases]
    finally:
        os.chdir(cwd)


def reference(cases: list[Case], workdir: Path, python: str = sys.executable, osworld: Path | None = None,
              timeout: float = 900) -> list[Outcome]:
    """desktop-env's outcomes for ``cases``, computed by ``python`` in a fresh process by the plain import; cases
    with an ``official`` module take OSWorld's function from ``osworld`` (the repository's
    ``desktop_env/evaluators/metrics`` folder, exported from a checkout)."""
    if osworld is None and any(c.official for c in cases):
        raise ValueError("some cases compare with the OSWorld repository's code: give its metrics folder "
                         "(--osworld-repo)")
    calls = [(c.official, c.metric, c.args, c.kwargs) for c in cases]
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        src, dst = Path(tmp) / "calls.pkl", Path(tmp) / "outcomes.pkl"
        src.write_bytes(pickle.dumps([pickle.dumps(call) for call in calls]))
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        proc = subprocess.run([python, "-c", REFERENCE, str(src), str(dst), str(osworld or "")], cwd=tmp, env=env,
                              check=False,
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"the desktop-env reference run failed (exit {proc.returncode}): "
                               f"{proc.stderr.strip()[-2000:]}")
        return [outcome if outcome[0] == "raise" else outcome_of(outcome[1])
                for outcome in pickle.loads(dst.read_bytes())]


def compare(cases: list[Case], mine: list[Outcome], theirs: list[Outcome]) -> list[Row]:
    """One row per exposed metric: its number of cases and each disagreement."""
    rows: dict[str, Row] = {name: Row(name, route) for name, route in ROUTES.items()}
    for case, a, b in zip(cases, mine, theirs, strict=True):
        row = rows[case.metric]
        row.cases += 1
        if a[0] != b[0] or not same(a[1], b[1]):
            row.disagreements.append(f"{case.label}: MintGym {a} vs desktop-env {b}")
    return list(rows.values())


def run(workdir: Path, python: str = sys.executable,
        osworld: Path | None = None) -> tuple[list[Case], list[Outcome], list[Row]]:
    """Build the cases under ``workdir``, run both sides (desktop-env's under ``python``) and compare. Without
    ``osworld`` (see :func:`reference`) the cases needing the OSWorld repository use the stored outcomes."""
    workdir.mkdir(parents=True, exist_ok=True)
    cases = build_cases(workdir)
    live = [c for c in cases if osworld is not None or not c.official]
    found = dict(zip(map(key, live), reference(live, workdir, python, osworld), strict=True))
    kept = [c for c in cases if key(c) not in found]
    found |= dict(zip(map(key, kept), stored(kept, load_outcomes()), strict=True)) if kept else {}
    theirs = [found[key(c)] for c in cases]
    return cases, theirs, compare(cases, ours(cases, workdir), theirs)


def _version(name: str, python: str) -> str:
    if python == sys.executable:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "absent"
    probe = subprocess.run([python, "-c", f"from importlib import metadata; print(metadata.version({name!r}))"],
                           capture_output=True, text=True, check=False)
    return probe.stdout.strip() or "absent"


def write_outcomes(path: Path, cases: list[Case], theirs: list[Outcome], osworld_repository: str,
                   python: str = sys.executable) -> None:
    """Store desktop-env's outcomes (``theirs``) for ``cases`` in ``path``; ``osworld_repository`` names the
    snapshot (owner/name@commit) the ``official`` cases ran on."""
    record = OutcomeFile(
        reference="desktop-env 1.0.2: desktop_env.evaluators.metrics imported the plain way (metric_diff.REFERENCE)",
        osworld_repository=osworld_repository,
        python=platform.python_version() if python == sys.executable else python,
        libraries={name: _version(name, python) for name in LIBRARIES},
        generated_by="python benchmarks/osworld_metrics_diff.py --write",
        outcomes={key(c): StoredOutcome(kind=o[0], value=o[1]) for c, o in zip(cases, theirs, strict=True)})
    path.write_text(record.model_dump_json(indent=1) + "\n", encoding="utf-8")


def load_outcomes(path: Path = OUTCOMES) -> OutcomeFile:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no stored desktop-env outcomes; run "
                                "python benchmarks/osworld_metrics_diff.py --write")
    return OutcomeFile.model_validate_json(path.read_text(encoding="utf-8"))


def stored(cases: list[Case], record: OutcomeFile) -> list[Outcome]:
    """The stored outcome of each case; a case without one is named in a KeyError."""
    missing = [key(c) for c in cases if key(c) not in record.outcomes]
    if missing:
        raise KeyError(f"{len(missing)} cases have no stored desktop-env outcome (first: {missing[0]!r}); "
                       "run python benchmarks/osworld_metrics_diff.py --write")
    return [(record.outcomes[key(c)].kind, record.outcomes[key(c)].value) for c in cases]


def table(rows: list[Row]) -> str:
    """The per-metric summary as a Markdown table."""
    lines = ["| metric | route | cases | disagreements |", "|---|---|---:|---:|"]
    lines += [f"| `{r.metric}` | {r.route} | {r.cases} | {len(r.disagreements)} |" for r in rows]
    total = sum(r.cases for r in rows)
    lines.append(f"| **{len(rows)} metrics** | | **{total}** | **{sum(len(r.disagreements) for r in rows)}** |")
    return "\n".join(lines)
