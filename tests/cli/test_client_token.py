"""Clients take the env server's token from a file or $MINTGYM_TOKEN, never from the command line."""

import os
import socket
import subprocess
import sys

import pytest

from mintgym.runtime.providers import ServerHandle, wait_for_health


@pytest.fixture
def guarded_server(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "MINTGYM_TOKEN": "s3cret-token"}
    proc = subprocess.Popen([sys.executable, "-m", "mintgym.cli", "serve", "null", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    wait_for_health(ServerHandle(url, "null", "s3cret-token"), 30, alive=lambda: proc.poll() is None)
    yield url
    proc.terminate()
    proc.wait(10)


def _rollout(url, out, *extra, env=None):
    """A rollout into its own folder ``out`` (a rollout into a folder that holds its episodes plays none)."""
    env = {k: v for k, v in (env or os.environ).items() if k != "MINTGYM_TOKEN"} | (env or {})
    return subprocess.run([sys.executable, "-m", "mintgym.cli", "rollout", "--task", "null/echo", "--agent", "random",
                           "--base-url", url, "--out", str(out), *extra],
                          capture_output=True, text=True, timeout=120, env=env)


def test_a_token_file_or_the_environment_reaches_a_guarded_server(guarded_server, tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    token.chmod(0o600)
    assert _rollout(guarded_server, tmp_path / "file", "--token-file", str(token)).returncode == 0
    assert _rollout(guarded_server, tmp_path / "env",
                    env={**os.environ, "MINTGYM_TOKEN": "s3cret-token"}).returncode == 0
    denied = _rollout(guarded_server, tmp_path / "none")
    assert denied.returncode != 0


def test_a_token_on_the_command_line_is_refused(guarded_server, tmp_path):
    done = _rollout(guarded_server, tmp_path, "--token", "s3cret-token")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    missing = _rollout(guarded_server, tmp_path, "--token-file", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "nope" in missing.stderr
