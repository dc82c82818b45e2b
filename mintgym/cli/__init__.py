"""The ``mintgym`` command line: envs, tasks, serve, rollout, view, and the commands plug-in modules add."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(help="MintGym: environments and RL for visual computer-use agents.", no_args_is_help=True,
                  pretty_exceptions_show_locals=False)

#: Modules under mintgym.cli that add commands through register(app).
COMMAND_MODULES = ("core", "serve_model", "evaluate", "train", "report")


def _load_commands() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"mintgym.cli.{name}")
        except ModuleNotFoundError as err:
            if err.name == f"mintgym.cli.{name}":
                continue  # that command group is not part of this install
            raise
        module.register(app)


_load_commands()


def main() -> None:
    from mintgym.allocator import tune_malloc

    tune_malloc()  # every command moves frames: keep their buffers mapped (see mintgym.allocator)
    app()
