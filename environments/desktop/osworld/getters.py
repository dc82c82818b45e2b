"""OSWorld getters: read a value from the live session for a metric. ``await getter(env, config)``.

Paths are the session's (``/home/user`` is already mapped to the session home); commands run as the
session user. File getters copy the file out of the session, as OSWorld copies it out of its VM, and
return the copy's path on this machine, or None when the file does not exist (or is a link, another
user's file, or over the size cap: the server never reads through what the agent could have planted).
Files are read and copied on a thread: a session's big file never stalls the server's other sessions.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from mintgym.environments.desktop.env import DesktopEnvironment
from mintgym.environments.desktop.osworld import files

CHROME_PREFS = ".config/google-chrome/Default/Preferences"


async def vm_command_line(env: DesktopEnvironment, config: dict) -> str:
    result = await env.run(config["command"], shell=bool(config.get("shell", False)), timeout=60)
    return result.stdout


async def vm_command_error(env: DesktopEnvironment, config: dict) -> str:
    result = await env.run(config["command"], shell=bool(config.get("shell", False)), timeout=60)
    return result.stderr


async def vm_file(env: DesktopEnvironment, config: dict) -> str | list[str | None] | None:
    paths = config["path"] if isinstance(config["path"], list) else [config["path"]]
    copies = [await asyncio.to_thread(env.fetch_file, p) for p in paths]
    found = [str(c) if c is not None else None for c in copies]
    return found if isinstance(config["path"], list) else found[0]


async def vm_terminal_output(env: DesktopEnvironment, config: dict) -> str | None:
    """The text of the most recent terminal (its output log, escape sequences removed)."""
    await asyncio.sleep(0.5)  # let the shell answer the last command typed into it
    logs = await asyncio.to_thread(env.terminal_logs)
    return await asyncio.to_thread(env.terminal_text, logs[-1]) if logs else None


async def rule(env: DesktopEnvironment, config: dict) -> Any:
    return config["rules"]


async def default_video_player(env: DesktopEnvironment, config: dict) -> str:
    result = await env.run(["xdg-mime", "query", "default", "video/mp4"], timeout=20)
    return result.stdout.strip()


def session_json(env: DesktopEnvironment, path: str) -> Any:
    """A JSON file of the session, parsed (None when it is missing, refused or not JSON)."""
    text = env.read_text(path)
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def chrome_prefs(env: DesktopEnvironment) -> dict:
    """Chromium's Preferences of the session's user ({} when missing or unreadable)."""
    prefs = session_json(env, f"~/{CHROME_PREFS}")
    return prefs if isinstance(prefs, dict) else {}


async def default_search_engine(env: DesktopEnvironment, config: dict) -> str:
    data = await asyncio.to_thread(chrome_prefs, env)
    return data.get("default_search_provider_data", {}).get("template_url_data", {}).get("short_name", "Google")


async def chrome_font_size(env: DesktopEnvironment, config: dict) -> dict:
    defaults = {"default_fixed_font_size": 13, "default_font_size": 16, "minimum_font_size": 13}
    prefs = await asyncio.to_thread(chrome_prefs, env)
    return {**defaults, **prefs.get("webkit", {}).get("webprefs", {})}


async def gimp_config_file(env: DesktopEnvironment, config: dict) -> str | None:
    copy = await asyncio.to_thread(env.fetch_file, f"~/.config/GIMP/2.10/{config['file_name']}")
    return str(copy) if copy else None


async def vlc_config(env: DesktopEnvironment, config: dict) -> str | None:
    copy = await asyncio.to_thread(env.fetch_file, "~/.config/vlc/vlcrc")
    return str(copy) if copy else None


async def cache_file(env: DesktopEnvironment, config: dict) -> str | list[str | None] | None:
    """Reference files of the evaluator: local paths or ``file://`` URLs as they are, remote ones through
    the file cache (:mod:`.files`: OSWorld's ``cache/<task>/<dest>`` layout, a mirror, or the network
    where allowed). None for one that cannot be had."""
    from mintgym.environments.desktop.osworld.steps import is_local_url, local_source

    urls = config.get("path") or config.get("url")
    dests = config.get("dest")
    many = isinstance(urls, list)
    urls = urls if many else [urls]
    dests = dests if isinstance(dests, list) else [dests] * len(urls)
    found: list[str | None] = []
    for url, dest in zip(urls, dests, strict=False):  # as OSWorld's getters: the shorter list decides
        if is_local_url(str(url)):
            src = local_source(str(url))
            found.append(str(src) if await asyncio.to_thread(src.is_file) else None)
            continue
        try:
            path = await asyncio.to_thread(files.fetch_reference, str(url), str(dest or ""),
                                           env.task_key or "shared")
            found.append(str(path))
        except files.DownloadUnavailable:
            found.append(None)
    return found if many else found[0]


GETTERS: dict[str, Callable[[DesktopEnvironment, dict], Awaitable[Any]]] = {
    "vm_command_line": vm_command_line, "vm_command_error": vm_command_error, "vm_file": vm_file,
    "vm_terminal_output": vm_terminal_output, "rule": rule, "rules": rule,
    "default_video_player": default_video_player, "default_search_engine": default_search_engine,
    "chrome_font_size": chrome_font_size, "gimp_config_file": gimp_config_file, "vlc_config": vlc_config,
    "cache_file": cache_file, "cloud_file": cache_file,
}

def _chrome_getters() -> dict[str, Callable[[DesktopEnvironment, dict], Awaitable[Any]]]:
    from mintgym.environments.desktop.osworld.chrome import GETTERS as CHROME
    from mintgym.environments.desktop.osworld.tree_getters import GETTERS as TREE

    return {**CHROME, **TREE}


GETTERS.update(_chrome_getters())
