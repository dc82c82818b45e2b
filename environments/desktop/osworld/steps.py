"""Run OSWorld config/postconfig steps on a desktop session, offline and inside its sandbox.

Every command runs as the session's unprivileged user with HOME in the session directory, inside the
session's namespaces. Downloads come from local paths, ``file://`` URLs, or over HTTP(S) through the
file cache of :mod:`.files` (cache, mirror, or the network where allowed).
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import shlex
import shutil
import subprocess
import urllib.parse
from pathlib import Path
from typing import Any

from mintgym.environments.desktop.env import OSWORLD_HOME, DesktopEnvironment
from mintgym.environments.desktop.osworld import files
from mintgym.environments.desktop.osworld.loader import Step

SUPPORTED_STEPS = ("launch", "open", "execute", "command", "sleep", "download", "activate_window", "close_window",
                   "chrome_open_tabs", "chrome_close_tabs", "update_browse_history")
#: Helper processes of OSWorld's own VM controller; nothing here needs them.
CONTROLLER_HELPERS = ("socat",)
#: Process names as OSWorld's Ubuntu image has them -> as this desktop has them.
PROCESS_ALIASES = {"chrome": "chromium", "google-chrome": "chromium"}
OPENERS = {".xlsx": "localc", ".xls": "localc", ".csv": "localc", ".ods": "localc", ".docx": "lowriter",
           ".doc": "lowriter", ".odt": "lowriter", ".pptx": "loimpress", ".odp": "loimpress", ".png": "feh",
           ".jpg": "feh", ".jpeg": "feh", ".webp": "feh", ".txt": "mousepad", ".py": "mousepad", ".md": "mousepad"}
LOOPBACK = ("127.0.0.1", "localhost", "::1")


APT_PART = re.compile(r"^\s*(?:echo \S+ \|\s*)?sudo -S apt-get (update|install(?: -y)?((?: [\w.+-]+)+))\s*$")


def preinstalled_apt(command: Any) -> bool:
    """True for a ``sudo apt-get update && sudo apt-get install PKG...`` line whose packages are all
    installed already: the step would change nothing here, so it is satisfied without sudo."""
    if not isinstance(command, str):
        return False
    packages: list[str] = []
    for part in command.split("&&"):
        match = APT_PART.match(part)
        if not match:
            return False
        if match.group(2):
            packages += [p for p in match.group(2).split() if p != "-y"]
    return bool(packages) and all(_dpkg_installed(p) for p in packages)


@functools.lru_cache(maxsize=256)
def _dpkg_installed(package: str) -> bool:
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip().endswith("installed")


class ConfigStepFailed(RuntimeError):
    """A task's config step could not be carried out; the message names the step and the cause."""


def localize(value: Any, env: DesktopEnvironment) -> Any:
    """Fill OSWorld placeholders and map ``/home/user`` onto the session home, through a JSON value."""
    width, height = env.screen_size
    subs = {"{SCREEN_WIDTH}": str(width), "{SCREEN_HEIGHT}": str(height),
            "{SCREEN_WIDTH_HALF}": str(width // 2), "{SCREEN_HEIGHT_HALF}": str(height // 2)}
    if isinstance(value, str):
        for key, sub in subs.items():
            value = value.replace(key, sub)
        return value.replace(OSWORLD_HOME, str(env.home))
    if isinstance(value, list):
        return [localize(v, env) for v in value]
    if isinstance(value, dict):
        return {k: localize(v, env) for k, v in value.items()}
    return value


def is_local_url(url: str) -> bool:
    parsed = urllib.parse.urlparse(url)
    return parsed.scheme in ("", "file") or (parsed.scheme == "http" and parsed.hostname in LOOPBACK)


def local_source(url: str, base: Path | None = None) -> Path:
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        return Path(urllib.parse.unquote(parsed.path))
    if parsed.scheme == "":
        path = Path(url)
        return path if path.is_absolute() or base is None else base / path
    raise ConfigStepFailed(f"{url!r} is not a local file")


def program_of(command: list[str] | str) -> str | None:
    """The program a launch/execute command runs (skipping ``VAR=value`` prefixes of a shell line)."""
    try:
        words = shlex.split(command) if isinstance(command, str) else list(command)
    except ValueError:
        return None
    for word in words:
        if "=" in word and not word.startswith(("/", ".")) and word.split("=", 1)[0].isidentifier():
            continue
        return os.path.basename(word)
    return None


def _alias_kill(command: list[str]) -> list[str]:
    if command and os.path.basename(command[0]) in ("pkill", "killall"):
        return [command[0]] + [PROCESS_ALIASES.get(a, a) for a in command[1:]]
    return command


async def run_steps(env: DesktopEnvironment, steps: tuple[Step, ...], *, base: Path | None = None,
                    where: str = "config", task_id: str = "shared") -> None:
    for i, step in enumerate(steps):
        params = localize(step.parameters, env)
        try:
            await _run_step(env, step.type, params, base, task_id)
        except ConfigStepFailed as err:
            raise ConfigStepFailed(f"{where}[{i}] ({step.type}): {err}") from None
        except (KeyError, TypeError) as err:
            raise ConfigStepFailed(f"{where}[{i}] ({step.type}): bad parameters {params!r}: {err}") from None


async def _run_step(env: DesktopEnvironment, kind: str, params: dict, base: Path | None, task_id: str) -> None:
    if kind == "sleep":
        await asyncio.sleep(float(params["seconds"]))
    elif kind == "launch":
        command = params["command"]
        shell = bool(params.get("shell", False))
        if program_of(command) in CONTROLLER_HELPERS:
            return
        if not shell and isinstance(command, list) and command and os.path.basename(command[0]) in ("pkill", "killall"):
            await env.run(_alias_kill(command), timeout=20)
            await asyncio.sleep(0.5)
            return
        prog = program_of(command)
        if not shell and (prog is None or (shutil.which(prog, path=env.sandbox.env(None)["PATH"]) is None)):
            raise ConfigStepFailed(f"program {prog!r} is not installed")
        await env.launch(command, shell=shell)
    elif kind in ("execute", "command"):
        command = params["command"]
        if preinstalled_apt(command):
            return
        shell = bool(params.get("shell", False))
        if isinstance(command, list) and not shell:
            command = _alias_kill(command)
        try:
            result = await env.run(command, shell=shell, timeout=float(params.get("timeout", 120)))
        except TimeoutError as err:
            raise ConfigStepFailed(str(err)) from None
        except FileNotFoundError as err:
            raise ConfigStepFailed(f"program not found: {err.filename or err}") from None
        if result.returncode != 0:
            tail = (result.stderr or result.stdout).strip()[-400:]
            raise ConfigStepFailed(f"command {command!r} exited with code {result.returncode}: {tail}")
    elif kind == "download":
        for item in params["files"]:
            await _download(env, item["url"], item["path"], base, task_id)
    elif kind == "open":
        await _open(env, params["path"])
    elif kind == "activate_window":
        name = params["window_name"]
        deadline = asyncio.get_running_loop().time() + 10
        while not await env.activate_window(name, exact=bool(params.get("strict", False))):
            if asyncio.get_running_loop().time() > deadline:
                raise ConfigStepFailed(f"no window titled {name!r} to activate "
                                       f"(windows: {[t for _, t in await env.windows()]})")
            await asyncio.sleep(0.2)
        await asyncio.sleep(0.3)
    elif kind == "close_window":
        await env.close_window(params["window_name"])
    elif kind in ("chrome_open_tabs", "chrome_close_tabs", "update_browse_history"):
        from mintgym.environments.desktop.osworld import chrome

        try:
            if kind == "chrome_open_tabs":
                await chrome.open_tabs(env, list(params["urls_to_open"]))
            elif kind == "update_browse_history":
                await chrome.update_browse_history(env, list(params["history"]), task_id)
            else:
                await chrome.close_tabs(env, list(params["urls_to_close"]))
        except chrome.ChromeUnavailable as err:
            raise ConfigStepFailed(str(err)) from None
    else:
        raise ConfigStepFailed(f"step type {kind!r} is not supported offline (supported: {', '.join(SUPPORTED_STEPS)})")


async def _download(env: DesktopEnvironment, url: str, path: str, base: Path | None, task_id: str) -> None:
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme in ("http", "https"):
        try:  # the cache keyed by URL, a mirror, or the network where allowed (see files.py)
            data = await asyncio.to_thread(files.fetch, url, path, task_id)
        except files.DownloadUnavailable as err:
            raise ConfigStepFailed(str(err)) from None
    else:
        src = local_source(url, base)
        if not src.is_file():
            raise ConfigStepFailed(f"download source {src} does not exist")
        data = await asyncio.to_thread(src.read_bytes)
    try:  # as the session user's file, following no link (postconfig runs after the agent acted); on a thread
        await asyncio.to_thread(env.write_bytes, path, data)
    except OSError as err:
        raise ConfigStepFailed(f"cannot write {path!r} in the session: {err}") from None


async def _open(env: DesktopEnvironment, path: str) -> None:
    target = env.path(path)
    if not env.is_file(path):
        raise ConfigStepFailed(f"cannot open {path!r}: no such file in the session")
    opener = OPENERS.get(target.suffix.lower(), "xdg-open")
    await env.launch([opener, str(target)])
    deadline = asyncio.get_running_loop().time() + 90
    while asyncio.get_running_loop().time() < deadline:
        if any(target.name.lower() in t.lower() or target.stem.lower() in t.lower() for _, t in await env.windows()):
            return
        await asyncio.sleep(0.3)
    raise ConfigStepFailed(f"no window for {target.name} appeared within 90 s")
