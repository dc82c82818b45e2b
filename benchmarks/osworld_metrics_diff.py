"""MintGym's OSWorld metrics side by side with desktop-env's own functions: one table, per metric.

Builds the differential cases (xlsx, docx, pptx, pdf, png, wav, xcu, vlcrc, json, csv, txt files made on
the spot) in a temporary folder, runs every exposed metric through ``mintgym.environments.desktop.osworld.metrics`` here
and desktop-env's function in a fresh interpreter (plain ``import desktop_env.evaluators.metrics``), and
prints the number of cases and disagreements per metric, then each disagreement. Exits 1 on any.
Needs the osworld extra and desktop-env (README, "OSWorld scoring").

    python benchmarks/osworld_metrics_diff.py [--keep DIR] [--reference-python PATH]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
import warnings
from pathlib import Path

from mintgym.environments.desktop.osworld import metric_loader
from mintgym.environments.desktop.osworld.metric_diff import run, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="write the input files here and keep them")
    parser.add_argument("--reference-python", default=sys.executable,
                        help="the Python that runs desktop-env's side, e.g. a venv with desktop-env's pinned "
                             "libraries (numpy<2, pandas<2.3, Pillow 11); default: this one")
    args = parser.parse_args()
    if not metric_loader.available():
        print(f"desktop-env is not installed: {metric_loader.INSTALL_HINT}", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)  # the metrics log every comparison they make
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        rows = run(args.keep or Path(tmp), args.reference_python)
    print(table(rows))
    print(f"\n{sum(r.cases for r in rows)} cases in {time.perf_counter() - started:.1f} s")
    bad = [f"{r.metric}: {d}" for r in rows for d in r.disagreements]
    for line in bad:
        print("DISAGREES", line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
