"""The trajectory inspector: static HTML pages for runs, and a loopback server to browse them.

``write_pages([RUN])`` writes ``RUN/index.html`` (every episode, failures first, with filters by status,
task and domain, a search box and counts) and ``<trajectory>/index.html`` per episode (each step: the
messages the model saw, its raw answer, the parsed action or error, the frames before and after with the
action drawn, code and output, timings, reward; links to the steps and episodes around it). Given several
runs it also writes a comparison page pairing each task's episodes across runs, with a side-by-side page per
task. ``serve(...)`` serves those folders, and nothing else, on 127.0.0.1.

A RUN may be an eval or rollout run folder, a training run's sampled episodes, or one trajectory folder
(see :mod:`mintgym.trajectory.inspector.runs`).
"""

from __future__ import annotations

import functools
import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from mintgym.trajectory.inspector.marks import action_marks, display_scale
from mintgym.trajectory.inspector.pages import (
    PAGE,
    link,
    pair_rows,
    render_compare,
    render_episode,
    render_index,
    render_pair,
)
from mintgym.trajectory.inspector.runs import NotARun, Run, open_run

__all__ = ["NotARun", "Run", "action_marks", "display_scale", "open_run", "serve", "write_pages",
           "write_run", "write_run_pages"]


def write_run(run: Run) -> Path:
    """Every episode page of ``run`` and its index; returns the page to open first."""
    for number, ep in enumerate(run.episodes):
        (ep.path / PAGE).write_text(render_episode(run, number))
    if run.single:
        return run.episodes[0].path / PAGE
    index = run.root / PAGE
    index.write_text(render_index(run))
    return index


def write_compare(runs: list[Run], out_dir: Path) -> Path:
    """``out_dir/compare.html`` and one side-by-side page per task under ``out_dir/compare/``."""
    pairs_dir = out_dir / "compare"
    pairs_dir.mkdir(parents=True, exist_ok=True)
    names = []
    for number, (key, episodes) in enumerate(pair_rows(runs), 1):
        page = pairs_dir / f"{number:04d}.html"
        page.write_text(render_pair(runs, key, episodes, pairs_dir, link(out_dir / "compare.html", pairs_dir)))
        names.append(link(page, out_dir))
    entry = out_dir / "compare.html"
    entry.write_text(render_compare(runs, out_dir, names))
    return entry


def write_pages(paths: list[str | Path], out: str | Path | None = None) -> tuple[Path, list[Run]]:
    """Pages for each run in ``paths`` (and a comparison when there are several, in ``out``, default the first
    run's folder); returns the page to open first and the runs. NotARun for a folder without trajectories."""
    if not paths:
        raise NotARun("give at least one run or trajectory folder")
    runs = [open_run(p) for p in paths]
    entries = [write_run(run) for run in runs]
    if len(runs) == 1:
        return entries[0], runs
    out_dir = Path(out) if out is not None else runs[0].root
    out_dir.mkdir(parents=True, exist_ok=True)
    return write_compare(runs, out_dir), runs


def write_run_pages(run_dir: str | Path) -> Path:
    """The index and episode pages of one run folder; returns the index (FileNotFoundError when it has none)."""
    try:
        run = open_run(run_dir)
    except NotARun as err:
        raise FileNotFoundError(str(err)) from None
    return write_run(run)


# ---- the loopback server ------------------------------------------------------------------------------------

class _Handler(SimpleHTTPRequestHandler):
    """Serves files below the root that lie inside one of the allowed folders; 404 for anything else."""

    allowed: tuple[Path, ...] = ()

    def send_head(self):
        local = Path(self.translate_path(self.path)).resolve()
        if not any(local == top or top in local.parents for top in self.allowed):
            self.send_error(404, "not part of the runs being inspected")
            return None
        return super().send_head()

    def log_message(self, format: str, *args) -> None:
        pass


def serve(folders: list[Path], entry: Path, port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Start serving ``folders`` on 127.0.0.1 in a thread; returns the server and the URL of ``entry``.

    The server's root is the folders' common parent, so the pages' relative links hold; only files inside
    ``folders`` are served. Stop it with ``server.shutdown()``.
    """
    tops = tuple(Path(f).resolve() for f in folders)
    root = Path(os.path.commonpath([str(t) for t in tops]))
    handler = type("InspectorHandler", (_Handler,), {"allowed": tops})
    server = ThreadingHTTPServer(("127.0.0.1", port), functools.partial(handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, name="mintgym-view", daemon=True).start()
    rel = entry.resolve().relative_to(root).as_posix()
    return server, f"http://127.0.0.1:{server.server_address[1]}/{rel}"
