"""Bounded session options and operator caps (mintgym.server.options), token sources (serve.resolve_token)."""

from __future__ import annotations

import os

import pytest

from mintgym.environments.android.options import AndroidOptions
from mintgym.environments.desktop.options import DesktopOptions
from mintgym.environments.null import NullHost, NullOptions
from mintgym.environments.pytool.host import PytoolHost
from mintgym.environments.pytool.options import PytoolOptions
from mintgym.server.options import (
    OptionError,
    check_defaults,
    check_options,
    field_range,
    options_model_for,
    parse_caps,
)
from mintgym.server.serve import TokenError, read_token_file, resolve_token


def test_ranges_are_described():
    assert field_range(PytoolOptions, "width") == "an integer in [64, 4096]"
    assert field_range(PytoolOptions, "cpu_seconds") == "a number in (0, 600]"


@pytest.mark.parametrize("model, options, words", [
    (PytoolOptions, {"width": -5}, ["env option width: ", "[64, 4096]", "-5"]),
    (PytoolOptions, {"processes": 1_000_000}, ["env option processes: ", "[1, 4096]"]),
    (PytoolOptions, {"memory_mb": "512"}, ["env option memory_mb: ", "integer"]),
    (PytoolOptions, {"memory_mb": True}, ["env option memory_mb: input should be a valid integer (got True)"]),
    (PytoolOptions, {"nope": 1}, ["env option nope: unknown key (known: ", "cpu_seconds"]),
    (DesktopOptions, {"width": 10_000}, ["env option width: ", "[64, 7680]"]),
    (DesktopOptions, {"template": "/etc"}, ["env option template: unknown key"]),
    (NullOptions, {"height": 0}, ["env option height: ", "[16, 4320]"]),
    (AndroidOptions, {"serial": "a; rm -rf /"}, ["env option serial: "]),
    (AndroidOptions, {"settle": 1e9}, ["env option settle: ", "[0, 60]"]),
])
def test_bad_options_name_the_option_and_range(model, options, words):
    with pytest.raises(OptionError) as err:
        check_options(model, options, {})
    for word in words:
        assert word in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


def test_caps_bound_session_options():
    caps = parse_caps(["memory_mb=2048", "cpu_seconds=5"], PytoolOptions)
    assert check_options(PytoolOptions, {"memory_mb": 2048}, caps) == {"memory_mb": 2048}
    with pytest.raises(OptionError, match="'memory_mb' = 4096 exceeds this server's cap of 2048"):
        check_options(PytoolOptions, {"memory_mb": 4096}, caps)
    with pytest.raises(OptionError, match="cap of 5"):
        check_options(PytoolOptions, {"cpu_seconds": 5.5}, caps)
    with pytest.raises(OptionError, match="the host's defaults|cap"):
        check_defaults(PytoolOptions, {"memory_mb": 4096}, caps)


@pytest.mark.parametrize("items, message", [(["memory_mb"], "NAME=VALUE"), (["nope=1"], "no such option"),
                                            (["memory_mb=lots"], "must be a number")])
def test_bad_caps_are_refused(items, message):
    with pytest.raises(OptionError, match=message):
        parse_caps(items, PytoolOptions)


def test_models_are_found_per_host():
    assert options_model_for(NullHost()) is NullOptions
    assert options_model_for(PytoolHost()) is PytoolOptions


def test_pytool_host_refuses_bad_defaults():
    with pytest.raises(ValueError, match=r"^env option wall_seconds: input should be greater than 0 \(got -1\); "
                                         r"allowed: "):
        PytoolHost(wall_seconds=-1)


def test_token_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("MINTGYM_TOKEN", "from-env")
    assert resolve_token() == "from-env"
    assert "MINTGYM_TOKEN" not in os.environ  # nothing the server starts inherits it
    path = tmp_path / "tok"
    path.write_text("from-file\n")
    os.chmod(path, 0o600)
    assert read_token_file(str(path)) == "from-file"
    os.chmod(path, 0o640)
    with pytest.raises(TokenError, match="chmod 600"):
        read_token_file(str(path))
    monkeypatch.setenv("MINTGYM_TOKEN", "bad\ntoken")
    with pytest.raises(TokenError, match="line break"):
        resolve_token()


def test_serve_refuses_a_bad_cap_and_the_token_flag():
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "MINTGYM_TOKEN"}
    done = subprocess.run([sys.executable, "-m", "mintgym.cli", "serve", "null", "--port", "0", "--max-option",
                           "nope=1"],
                          capture_output=True, text=True, timeout=60, check=False, env=env)
    assert done.returncode != 0 and "nope: no such option" in done.stderr, done.stderr[-400:]
    done = subprocess.run([sys.executable, "-m", "mintgym.cli", "serve", "null", "--port", "0", "--token", "x"],
                          capture_output=True, text=True, timeout=60, check=False, env=env)
    assert done.returncode != 0 and "--token" in done.stderr
