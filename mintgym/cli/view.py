"""``mintgym view DIR [DIR ...]``: the trajectory inspector's pages, optionally served on loopback.

    mintgym view runs/eval-miniwob                    # index + a page per episode, written into the run
    mintgym view runs/train/episodes --serve          # the same, served at a printed http://127.0.0.1 URL
    mintgym view runs/model-a runs/model-b            # both runs, plus compare.html pairing their episodes
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from mintgym.cli.agent_options import fail


def register(app: typer.Typer) -> None:
    app.command("view")(view)


def view(runs: list[Path] = typer.Argument(..., help="run folders (eval, rollout, a training run's episodes/) or "
                                                    "trajectory folders; several: also a comparison page"),
         out: Path | None = typer.Option(None, help="where the comparison of several runs goes "
                                                       "(default: the first run's folder)"),
         serve: bool = typer.Option(False, "--serve", help="serve the pages on 127.0.0.1 until Ctrl-C"),
         port: int = typer.Option(8765, min=0, max=65535, help="the --serve port (0: any free one)")) -> None:
    """Write the trajectory inspector: a filterable index per run and a page per episode, step by step."""
    from mintgym.trajectory.inspector import NotARun, write_pages
    from mintgym.trajectory.inspector import serve as serve_pages

    try:
        entry, found = write_pages(runs, out)
    except NotARun as err:
        raise fail(str(err)) from None
    episodes = sum(len(r.episodes) for r in found)
    for run in found:
        for problem in run.problems:
            typer.echo(f"warning: {run.root}/{problem}", err=True)
    typer.echo(f"wrote {episodes} episode page{'s' if episodes != 1 else ''}; open {entry}")
    if not serve:
        return
    folders = [r.root for r in found] + ([entry.parent] if len(found) > 1 else [])
    try:
        server, url = serve_pages(folders, entry, port)
    except OSError as err:
        raise fail(f"cannot serve on 127.0.0.1:{port}: {err.strerror or err}; pick another --port (0: any free one)",
                   1) from None
    typer.echo(f"serving {url} (Ctrl-C to stop)")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
