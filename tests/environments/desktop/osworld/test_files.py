"""OSWorld's download step and reference files: the URL-keyed cache in OSWorld's layout, a mirror, and
the network only where allowed; a loopback HTTP server stands in for the file host."""

import http.server
import os
import threading
import uuid
from pathlib import Path

import pytest

from mintgym.environments.desktop.osworld import files
from mintgym.environments.desktop.osworld.availability import why_unavailable
from mintgym.environments.desktop.osworld.loader import parse_task
from mintgym.environments.desktop.osworld.steps import ConfigStepFailed, run_steps

REMOTE = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/calc/sheet.xlsx"


@pytest.fixture
def file_host(tmp_path):
    """A loopback HTTP server serving tmp_path/www, counting requests."""
    www = tmp_path / "www" / "datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/calc"
    www.mkdir(parents=True)
    (www / "sheet.xlsx").write_bytes(b"PK\x03\x04 spreadsheet bytes")
    hits = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(tmp_path / "www"), **kw)

        def log_message(self, *args):
            hits.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hits, server
    server.shutdown()
    server.server_close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(files.CACHE_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.delenv(files.MIRROR_VARIABLE, raising=False)
    monkeypatch.delenv(files.DOWNLOADS_VARIABLE, raising=False)
    return tmp_path / "cache"


def test_a_mirror_fills_the_cache_in_osworlds_layout_and_the_cache_serves_later(cache, file_host, monkeypatch):
    base, hits, server = file_host
    monkeypatch.setenv(files.MIRROR_VARIABLE, base)
    data = files.fetch(REMOTE, "/home/user/sheet.xlsx", "task-1")
    assert data.startswith(b"PK") and len(hits) == 1
    stored = cache / "task-1" / f"{uuid.uuid5(uuid.NAMESPACE_URL, REMOTE)}_sheet.xlsx"
    assert stored.read_bytes() == data
    server.shutdown()
    assert files.fetch(REMOTE, "/home/user/sheet.xlsx", "task-1") == data  # no network needed now
    assert files.fetch(REMOTE, "/home/user/other-name.xlsx", "task-2") == data  # same URL, other task
    assert len(hits) == 1


def test_a_prefilled_osworld_cache_makes_a_download_task_runnable(cache):
    spec = parse_task({"id": "abc", "instruction": "x", "config": [
        {"type": "download", "parameters": {"files": [{"url": REMOTE, "path": "/home/user/sheet.xlsx"}]}}],
        "evaluator": {"func": "check_include_exclude", "result": {"type": "rule", "rules": {}}}},
        Path("/x/libreoffice_calc/abc.json"))
    reason = why_unavailable(spec)
    assert reason and "huggingface.co" in reason and "--allow-internet" in reason
    folder = cache / "abc"
    folder.mkdir(parents=True)
    (folder / files.cache_name(REMOTE, "/home/user/sheet.xlsx")).write_bytes(b"cached")
    assert why_unavailable(spec) is None


def test_without_cache_mirror_or_permission_nothing_leaves_the_machine(cache, file_host):
    with pytest.raises(files.DownloadUnavailable, match="huggingface.co"):
        files.fetch(REMOTE, "/home/user/sheet.xlsx", "t")
    assert not cache.exists() or not any(cache.rglob("*sheet*"))


def test_a_failed_download_names_the_url(cache, monkeypatch):
    monkeypatch.setenv(files.MIRROR_VARIABLE, "http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(files.DownloadUnavailable, match="127.0.0.1:9"):
        files.fetch(REMOTE, "/home/user/sheet.xlsx", "t")


def test_reference_files_are_kept_under_their_dest_name(cache, file_host, monkeypatch):
    base, hits, _ = file_host
    monkeypatch.setenv(files.MIRROR_VARIABLE, base)
    assert files.reference_availability(REMOTE, "gold.xlsx", "t9") is None
    path = files.fetch_reference(REMOTE, "gold.xlsx", "t9")
    assert path == cache / "t9" / "gold.xlsx" and path.read_bytes().startswith(b"PK")
    monkeypatch.delenv(files.MIRROR_VARIABLE)
    assert files.fetch_reference(REMOTE, "gold.xlsx", "t9") == path


@pytest.mark.desktop
@pytest.mark.asyncio(loop_scope="module")
async def test_the_download_step_puts_the_file_in_the_session_as_the_session_users(env, cache, file_host, monkeypatch):
    base, _, _ = file_host
    monkeypatch.setenv(files.MIRROR_VARIABLE, base)
    step = parse_task({"id": "d", "instruction": "x", "config": [
        {"type": "download", "parameters": {"files": [{"url": REMOTE, "path": "/home/user/Desktop/sheet.xlsx"}]}}],
        "evaluator": {"func": "infeasible"}}, Path("/x/os/d.json")).config
    await run_steps(env, step, task_id="d")
    target = env.home / "Desktop/sheet.xlsx"
    assert target.read_bytes().startswith(b"PK")
    if os.geteuid() == 0:
        assert target.stat().st_uid == env.sandbox.uid
    monkeypatch.delenv(files.MIRROR_VARIABLE)
    missing = parse_task({"id": "e", "instruction": "x", "config": [
        {"type": "download", "parameters": {"files": [{"url": REMOTE + "?v=2", "path": "/home/user/b.xlsx"}]}}],
        "evaluator": {"func": "infeasible"}}, Path("/x/os/e.json")).config
    with pytest.raises(ConfigStepFailed, match="huggingface.co"):
        await run_steps(env, missing, task_id="e")


def test_allow_internet_lasts_as_long_as_the_eval_command(cache):
    """It once stayed set in the process after an in-process `mintgym eval --allow-internet`, making every
    download task look runnable to whatever ran next."""
    from typer.testing import CliRunner

    from mintgym.cli import app

    result = CliRunner().invoke(app, ["eval", "--tasks", "null/no-such-task", "--agent", "scripted",
                                      "--allow-internet"])
    assert result.exit_code != 0
    assert os.environ.get(files.DOWNLOADS_VARIABLE) is None
