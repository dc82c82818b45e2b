"""Flags a domain or pack declares reach MintGym's commands with no core file touched: a user's package that
declares them by entry point (run as a user runs it, in a subprocess), and the built-in ones, which keep
their exact spelling (``--osworld-root``, ``serve --serial``, ``eval --allow-internet``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from mintgym.cli.declared_options import Declared, with_declared_options
from mintgym.env import declarations
from mintgym.env.declarations import CommandOption, Declaration

USER_PACKAGE = '''
import os
from pathlib import Path
from mintgym.env.declarations import CommandOption, Declaration


def greet(value):
    if value == "shout":
        raise ValueError("--greeting shout: greetings are quiet here")
    Path(os.environ["GREETING_FILE"]).write_text(repr(value))


DECLARATION = Declaration(
    unavailable=lambda: "the null domain is switched off by a user's package",
    options=(CommandOption(flag="--greeting", help="mine: a greeting", commands=("tasks",), apply=greet),),
)
'''


@pytest.fixture
def user_package(tmp_path):
    """A package installed the way a user's is: an entry point in its metadata, its folder on the path."""
    (tmp_path / "mine_decl.py").write_text(USER_PACKAGE)
    (tmp_path / "elsewhere").mkdir()
    info = tmp_path / "mine_decl-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mine-decl\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[mintgym.declarations]\nnull = mine_decl:DECLARATION\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])),
           "GREETING_FILE": str(tmp_path / "greeting.txt")}
    return tmp_path, env


def _mintgym(env, *args):
    return subprocess.run([sys.executable, "-m", "mintgym.cli", *args], capture_output=True, text=True,
                          timeout=300, check=False, env=env, cwd=Path(env["GREETING_FILE"]).parent / "elsewhere")


def test_a_users_package_adds_a_flag_and_an_availability_check(user_package):
    folder, env = user_package
    done = _mintgym(env, "tasks", "null", "--greeting", "hello")
    assert done.returncode == 0, done.stderr
    assert (folder / "greeting.txt").read_text() == "'hello'"
    assert "skipped here: the null domain is switched off by a user's package" in done.stdout
    assert "--greeting" in _mintgym(env, "tasks", "--help").stdout

    refused = _mintgym(env, "tasks", "null", "--greeting", "shout")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == ["error: --greeting shout: greetings are quiet here"]


def test_without_the_package_the_flag_is_unknown(user_package):
    _, env = user_package
    env = {**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    done = _mintgym(env, "tasks", "null", "--greeting", "hello")
    assert done.returncode == 2 and "--greeting" in done.stderr


def test_new_flags_shared_flags_host_options_and_undo():
    seen, undone = [], []

    def apply(value):
        seen.append(value)
        return lambda: undone.append(value)

    one = Declaration(options=(
        CommandOption(flag="--serial-no", help="one: a serial", commands=("serve",), host_option="serial"),
        CommandOption(flag="--loud", kind="switch", help="one: shout", commands=("serve",), apply=apply)))
    two = Declaration(options=(
        CommandOption(flag="--own", kind="switch", help="two's reading", commands=("serve",), apply=apply),))
    got = {}

    def serve(own: bool = typer.Option(False, "--own", help="the command's own"), declared: Declared = None):
        got.update(own=own, host_options=declared.host_options, undone=list(undone))

    with declarations.declaring(one=one, two=two):
        serve = with_declared_options("serve")(serve)  # declarations are read when a command is decorated

    app = typer.Typer()
    app.command()(serve)
    runner = CliRunner()
    result = runner.invoke(app, ["--serial-no", "emulator-5554", "--loud", "--own"])
    assert result.exit_code == 0, result.output
    assert got == {"own": True, "host_options": {"serial": "emulator-5554"}, "undone": []}
    assert seen == [True, True] and undone == [True, True]  # applied before, undone after the command
    assert "the command's own; two: two's reading" in " ".join(runner.invoke(app, ["--help"]).output.split())


def test_built_in_flags_keep_their_spelling():
    from mintgym.cli import app

    runner = CliRunner()
    for command, flags in {"tasks": ["--osworld-root"], "rollout": ["--osworld-root"], "serve": ["--serial"],
                           "eval": ["--osworld-root", "--allow-internet"]}.items():
        shown = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
        for flag in flags:
            assert flag in shown, f"mintgym {command} lost {flag}"


def test_a_bad_osworld_root_is_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mintgym.cli", "tasks", "osworld", "--osworld-root",
                           str(tmp_path / "nowhere")], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: --osworld-root") and "no such folder" in line


def test_a_flag_clashing_with_a_parameter_is_refused():
    def check(out: Path = typer.Option(Path("."), "--out-dir")):
        """A command whose parameter is called out, under another flag."""

    three = Declaration(options=(CommandOption(flag="--out", help="x", commands=("check",)),))
    with declarations.declaring(three=three), pytest.raises(ValueError, match="clashes"):
        with_declared_options("check")(check)
