"""The inspector in real Chromium: a run made by real rollouts (a VLM agent against a stand-in model server on
loopback, and the scripted agent), its pages served by ``mintgym view --serve``, read through Playwright."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

from mintgym.agents.scripted import ScriptedAgent
from mintgym.rollout.runner import EpisodeJob, run_jobs
from mintgym.runtime.make import provider
from mintgym.testing import serve_asgi

pytestmark = pytest.mark.web

CHROMIUM = "/usr/bin/chromium"
#: The model's answers: a two-line cell (its code is shown with real newlines), then a wrong answer.
ANSWERS = ['I will look first.\npython(code="print(\'rows\')\\nprint(2 + 3)")', 'done(answer="-1")']
#: Where the test leaves its screenshots of the index and an episode page (set it to keep them).
SHOTS_ENV = "MINTGYM_INSPECTOR_SHOTS"


def _model_server():
    path = Path(__file__).parents[1] / "agents" / "model_server.py"
    spec = importlib.util.spec_from_file_location("mintgym_tests_model_server_inspector", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.create_app()


def mintgym(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mintgym.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """One run on one pytool server: a failed VLM episode played by `mintgym rollout` (its prompts recorded)
    and a successful scripted one."""
    out = tmp_path_factory.mktemp("inspector") / "run"
    prov = provider("local")
    handle = prov.start("pytool")
    try:
        prov.wait_ready(handle, 120)
        with serve_asgi(_model_server()) as url:
            httpx.post(f"{url}/control/inspect", json=ANSWERS).raise_for_status()
            vlm = mintgym("rollout", "--task", "pytool/bar-chart-0", "--agent", "vlm", "--model-url",
                          f"{url}/script-inspect/v1", "--base-url", handle.base_url, "--out", str(out))
        assert "0/1 succeeded, 0 errored" in vlm.stdout, vlm.stdout + vlm.stderr
        [scripted] = asyncio.run(run_jobs(handle.base_url, [EpisodeJob("pytool/bar-chart-1", 0, "scripted-0")],
                                          ScriptedAgent, run_dir=out))
        assert scripted.status == "success", scripted.error
    finally:
        prov.stop(handle)
    return out


@pytest.fixture(scope="module")
def served(run_dir):
    proc = subprocess.Popen([sys.executable, "-m", "mintgym.cli", "view", str(run_dir), "--serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for line in proc.stdout:
            if line.startswith("serving "):
                url = line.split()[1]
                break
        assert url and url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.poll() is not None else url
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import Error, sync_playwright

    from mintgym.environments.web.browser_user import browser_launch

    workdir = Path(tempfile.mkdtemp(prefix="mintgym-inspector-"))
    launch = browser_launch(CHROMIUM, workdir)
    options = {"executable_path": launch.executable, "env": launch.env, "args": ["--disable-gpu"]}
    with sync_playwright() as pw:
        try:
            chromium = pw.chromium.launch(chromium_sandbox=True, **options)
        except Error:  # no user namespaces here: run it without its sandbox, as the browser user
            chromium = pw.chromium.launch(chromium_sandbox=False, **options)
        try:
            yield chromium
        finally:
            chromium.close()
            shutil.rmtree(workdir, ignore_errors=True)


def _loaded(img) -> bool:
    img.scroll_into_view_if_needed()
    img.page.wait_for_function("el => el.complete && el.naturalWidth > 0", arg=img.element_handle(), timeout=10_000)
    return True


def test_index_filters_failures_and_the_episode_shows_prompt_and_both_frames(served, browser, tmp_path):
    shots = Path(os.environ.get(SHOTS_ENV) or tmp_path)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(served)
    rows = page.locator("#episodes tbody tr")
    assert rows.count() == 2
    assert rows.first.get_attribute("data-status") == "failure"  # failures first
    page.select_option("#f-status", "failed")
    visible = page.locator("#episodes tbody tr:visible")
    assert visible.count() == 1 and "pytool/bar-chart-0" in visible.inner_text()
    assert page.locator("#shown").inner_text() == "1 of 2 shown"
    page.fill("#f-search", "no-such-episode")
    assert page.locator("#episodes tbody tr:visible").count() == 0
    page.fill("#f-search", "bar-chart-0")
    page.screenshot(path=str(shots / "inspector_index.png"), full_page=True)

    visible.locator("a").first.click()
    page.wait_for_selector("section.step#step-1")
    assert page.locator(".badge").first.inner_text() == "failure"
    step0 = page.locator("#step-0")
    prompt = step0.locator("details.prompt")
    text = prompt.inner_text()
    assert "Solve the visual task by running Python code" in text  # the system prompt: the action-set text
    assert "python(code: str)" in text and "Task: " in text and "What is the next action?" in text
    assert prompt.locator(".thumb img").count() == 1 and _loaded(prompt.locator(".thumb img").first)
    assert step0.locator(".code").inner_text() == "print('rows')\nprint(2 + 3)"  # real newlines
    assert "I will look first." in step0.inner_text()
    before, after = step0.locator("figure .frame img").all()
    assert before.get_attribute("src") == "frames/0000.png" and after.get_attribute("src") == "frames/0001.png"
    assert _loaded(before) and _loaded(after)
    assert "agent " in step0.locator(".facts").inner_text() and "env " in step0.locator(".facts").inner_text()
    # the second step's prompt shows the first answer in the history, with the earlier screenshot
    step1 = page.locator("#step-1")
    assert "print(2 + 3)" in step1.locator("details.prompt").inner_text()
    assert step1.locator("figure .frame img").nth(1).get_attribute("src") == "frames/0002.png"
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(shots / "inspector_episode.png"), full_page=False)

    page.locator("#next-episode").click()
    page.wait_for_selector("h1:has-text('pytool/bar-chart-1')")
    assert "no model prompt (scripted agent)" in page.locator("#step-0").inner_text()
    page.locator("#prev-episode").click()
    page.wait_for_selector("h1:has-text('pytool/bar-chart-0')")
    page.close()


def test_the_server_serves_only_the_run(served, run_dir):
    base = served.rsplit("/", 1)[0]
    assert httpx.get(served).status_code == 200
    assert httpx.get(f"{base}/../../../../etc/passwd").status_code == 404
    assert httpx.get(f"{base}/%2e%2e/%2e%2e/etc/hostname").status_code == 404
