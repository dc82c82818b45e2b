"""The ``mintgym`` command line: envs, tasks, suites, serve, rollout, check, view, and the commands plug-in
modules add.

A user's mistake (unknown id, missing or bad file, bad config, no device, unreachable server) ends a
command with one ``error:`` line saying what to do, and exit status 2 (1 for a failure at run time);
``mintgym --debug COMMAND ...`` (or ``MINTGYM_DEBUG=1``) shows the traceback instead.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

app = typer.Typer(help="MintGym: environments and RL for visual computer-use agents.", no_args_is_help=True,
                  pretty_exceptions_show_locals=False)

#: Modules under mintgym.cli that add commands through register(app).
COMMAND_MODULES = ("core", "serve_model", "evaluate", "train", "report", "check", "view", "export")

#: Set by ``--debug``: errors propagate with their traceback.
DEBUG_ENV = "MINTGYM_DEBUG"


@app.callback()
def _options(debug: bool = typer.Option(False, "--debug", help="show the full traceback of an error")) -> None:
    if debug:
        os.environ[DEBUG_ENV] = "1"


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


def one_line(err: BaseException) -> tuple[str, int]:
    """The one-line message (with what to do) and exit status for an error that reached the top."""
    import json

    from mintgym.errors import BackendError, MintGymError, RegistrationError, ServerError, first_line
    from mintgym.extras import install_hint

    first = first_line(err)
    if isinstance(err, (RegistrationError, ServerError)) or type(err) is MintGymError:
        return first, 2
    if isinstance(err, BackendError):
        return f"{first} (run with --debug for the server log)", 1
    if isinstance(err, MintGymError):
        return f"{type(err).__name__}: {first}", 1
    if isinstance(err, ModuleNotFoundError) and (hint := install_hint(first)):
        return f"this command {hint}", 2
    if isinstance(err, FileNotFoundError):
        return f"no such file or folder: {err.filename or first}; check the path", 2
    if isinstance(err, IsADirectoryError):
        return f"{err.filename} is a folder, a file is needed here", 2
    if isinstance(err, PermissionError):
        return f"permission denied: {err.filename or first}", 2
    if isinstance(err, json.JSONDecodeError):
        return f"bad JSON: {first}", 2
    if isinstance(err, (KeyError, ValueError, TypeError)):
        return f"{first} (run with --debug for the traceback)", 2
    if type(err).__module__.split(".")[0] in ("yaml", "pydantic", "omegaconf", "tomllib"):
        return f"bad configuration: {first}", 2
    if type(err).__module__.split(".")[0] == "httpx":
        return f"cannot reach the server: {type(err).__name__}: {first}; check the URL and that it runs", 1
    return f"{type(err).__name__}: {first} (run with --debug for the traceback)", 1


def main() -> None:
    from mintgym.allocator import tune_malloc

    tune_malloc()  # every command moves frames: keep their buffers mapped (see mintgym.allocator)
    try:
        code = app(standalone_mode=False)
    except Exception as err:  # noqa: BLE001 -- the last stop: one line unless --debug
        kinds = {c.__name__ for c in type(err).__mro__}
        if "ClickException" in kinds:  # typer's (vendored) click: a usage mistake, a missing or malformed option
            if "UsageError" in kinds and "NoArgsIsHelpError" not in kinds:
                where = err.ctx.command_path if getattr(err, "ctx", None) is not None else "mintgym"
                print(f"error: {err.format_message()} (see `{where} --help`)", file=sys.stderr)
            else:
                err.show()
            sys.exit(err.exit_code)
        if "Abort" in kinds:
            print("aborted", file=sys.stderr)
            sys.exit(130)
        if os.environ.get(DEBUG_ENV):
            raise
        message, code = one_line(err)
        print(f"error: {message}", file=sys.stderr)
        sys.exit(code)
    sys.exit(code if isinstance(code, int) else 0)
