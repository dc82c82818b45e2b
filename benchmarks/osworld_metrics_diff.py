"""MintGym's OSWorld metrics side by side with desktop-env's own functions: one table, per metric.

Builds the differential cases (xlsx, docx, pptx, pdf, png, wav, xcu, vlcrc, json, csv, txt files made on
the spot) in a temporary folder, runs every exposed metric through ``mintgym.environments.desktop.osworld.metrics`` here
and desktop-env's function in a fresh interpreter (plain ``import desktop_env.evaluators.metrics``), and
prints the number of cases and disagreements per metric, then each disagreement. Exits 1 on any.
``--write`` stores desktop-env's outcomes in tests/environments/desktop/osworld/metric_outcomes.json, the data
the differential test compares MintGym with. ``--osworld-root DIR`` (OSWorld's evaluation_examples folder)
also counts the tasks of its test_all list whose every metric can run here and names the others.
Needs the osworld extra and desktop-env (README, "OSWorld scoring").

    python benchmarks/osworld_metrics_diff.py [--keep DIR] [--reference-python PATH] [--osworld-root DIR]
        [--osworld-repo DIR --osworld-commit OWNER/NAME@SHA [--write]]

The metrics newer than desktop-env 1.0.2 (``Case.official``) are compared with the OSWorld repository's own
code, exported from a checkout to a folder given by ``--osworld-repo``; without it they are compared with the
stored outcomes.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import tempfile
import time
import warnings
from pathlib import Path

from mintgym.environments.desktop.osworld import metric_loader
from mintgym.environments.desktop.osworld.availability import metric_unavailable
from mintgym.environments.desktop.osworld.loader import check_root, load_examples, task_lists

# The differential cases are test fixtures: they live under tests/, importable from the repository's root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
metric_diff = importlib.import_module("tests.environments.desktop.osworld.cases.metric_diff")
OUTCOMES, run, table = metric_diff.OUTCOMES, metric_diff.run, metric_diff.table
write_outcomes = metric_diff.write_outcomes


def count_tasks(root: Path) -> None:
    """Print how many of the tasks of ``root``'s test_all list (all its tasks without one) have every metric
    available, and why not the rest."""
    root = check_root(root)
    listed = {task for ids in task_lists(root).get("test_all", {}).values() for task in ids}
    specs = [s for s in load_examples(root / "examples") if not listed or s.id in listed]
    missing = [(s, metric_unavailable(s)) for s in specs]
    missing = [(s, why) for s, why in missing if why]
    which = "test_all" if listed else "bundled (no test_all.json)"
    print(f"\n{len(specs) - len(missing)} of {len(specs)} {which} tasks have every metric available")
    for spec, why in missing:
        print(f"  {spec.app}/{spec.id}: {why}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="write the input files here and keep them")
    parser.add_argument("--reference-python", default=sys.executable,
                        help="the Python that runs desktop-env's side, e.g. a venv with desktop-env's pinned "
                             "libraries (numpy<2, pandas<2.3, Pillow 11); default: this one")
    parser.add_argument("--write", action="store_true", help=f"store desktop-env's outcomes in {OUTCOMES}")
    parser.add_argument("--osworld-repo", type=Path, help="an export of the OSWorld repository (its root): the "
                                                          "reference of the metrics newer than desktop-env 1.0.2")
    parser.add_argument("--osworld-commit", help="owner/name@commit of that export, recorded with --write")
    parser.add_argument("--osworld-root", type=Path, help="OSWorld's evaluation_examples folder: count its tasks "
                                                          "with every metric available")
    args = parser.parse_args()
    if not metric_loader.available():
        print(f"desktop-env is not installed: {metric_loader.INSTALL_HINT}", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)  # the metrics log every comparison they make
    started = time.perf_counter()
    if args.write and not (args.osworld_repo and args.osworld_commit):
        parser.error("--write needs --osworld-repo and --osworld-commit (every stored outcome is computed anew)")
    metrics_folder = args.osworld_repo / "desktop_env/evaluators/metrics" if args.osworld_repo else None
    if metrics_folder and not metrics_folder.is_dir():
        parser.error(f"--osworld-repo {args.osworld_repo}: no desktop_env/evaluators/metrics folder in it")
    with tempfile.TemporaryDirectory() as tmp:
        cases, theirs, rows = run(args.keep or Path(tmp), args.reference_python, metrics_folder)
    if args.write:
        write_outcomes(OUTCOMES, cases, theirs, args.osworld_commit, args.reference_python)
        print(f"wrote {len(cases)} outcomes to {OUTCOMES}")
    print(table(rows))
    print(f"\n{sum(r.cases for r in rows)} cases in {time.perf_counter() - started:.1f} s")
    if args.osworld_root:
        count_tasks(args.osworld_root)
    bad = [f"{r.metric}: {d}" for r in rows for d in r.disagreements]
    for line in bad:
        print("DISAGREES", line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
