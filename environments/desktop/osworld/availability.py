"""Why an OSWorld task cannot run on this machine (None when it can). Cheap: no X, no processes."""

from __future__ import annotations

import json
import re
import shutil
import urllib.parse
from pathlib import Path

from mintgym.environments.desktop import accessibility
from mintgym.environments.desktop.osworld import files
from mintgym.environments.desktop.osworld.getters import GETTERS
from mintgym.environments.desktop.osworld.loader import OSWorldSpec, Step
from mintgym.environments.desktop.osworld.metrics import METRICS, ROUTES, missing_library
from mintgym.environments.desktop.osworld.steps import (
    CONTROLLER_HELPERS,
    SUPPORTED_STEPS,
    is_local_url,
    preinstalled_apt,
    program_of,
)
from mintgym.environments.desktop.osworld.tree_getters import TREE_GETTERS

#: OSWorld getters MintGym leaves out, and why.
UNAVAILABLE_GETTERS = {
    "googledrive_file": "needs your own Google account (OSWorld's settings.yml credentials)",
}
SESSION_HELPERS = {"python", "python3", "google-chrome", "mintgym-terminal"}
#: Needs no check of ours can see from the JSON alone.
KNOWN_BLOCKERS = {
    "94d95f96-9699-4208-98ba-3c3119edf9c2": "installs Spotify from the internet",
    "69acbb55-d945-4927-a87b-8480e1a5bb7e": "installs a GitHub project and its pip packages from the internet",
    "48d05431-6cd5-4e76-82eb-12b60d823f7d": "needs conda (Anaconda), which is not installed",
    "5812b315-e7bd-4265-b51f-863c02174c28": "needs sudo to create a system user (the session user is unprivileged)",
}
STEP_NEEDS = {
    "googledrive": "needs a Google Drive account",
    "login": "needs an online account login",
}
SCHEMA_DIR = Path("/usr/share/glib-2.0/schemas")


def _session_reaches(url: str) -> bool:
    """Whether a page the session's own browser loads can be reached: its own loopback or a file."""
    parsed = urllib.parse.urlparse(url)
    return parsed.scheme in ("file", "about", "chrome", "data") or parsed.hostname in ("127.0.0.1", "localhost", "::1")


def _steps(spec: OSWorldSpec) -> list[Step]:
    return list(spec.config) + list(spec.evaluator.postconfig)


def metric_unavailable(spec: OSWorldSpec) -> str | None:
    """Why one of the task's metrics cannot run here (None when all can): not exposed, desktop-env missing,
    or a library the metric needs left out (``metrics.NEEDS``)."""
    for func in () if spec.evaluator.infeasible else spec.evaluator.funcs:
        if func not in METRICS:
            if ROUTES.get(func) == "desktop-env":
                return (f"metric {func!r} is OSWorld's own code from desktop-env, which is not installed "
                        "(see README, OSWorld scoring)")
            return f"metric {func!r} is not implemented offline"
        library = missing_library(func)
        if library:
            return f"metric {func!r} needs {library!r}, which is not installed (see README, OSWorld scoring)"
    return None


def why_unavailable(spec: OSWorldSpec) -> str | None:
    if spec.id in KNOWN_BLOCKERS:
        return KNOWN_BLOCKERS[spec.id]
    ev = spec.evaluator
    # Infeasible tasks are checked like the others: their config steps still have to run here.
    # A step installing packages that are installed already changes nothing: it needs neither sudo
    # nor the network here.
    steps = [s for s in _steps(spec) if not preinstalled_apt(s.parameters.get("command"))]
    text = json.dumps([spec.instruction, [s.parameters for s in steps], ev.results, ev.expected])
    for step in steps:
        if step.type in STEP_NEEDS:
            return f"config step {step.type!r} {STEP_NEEDS[step.type]}"
        if step.type not in SUPPORTED_STEPS:
            return f"config step {step.type!r} is not supported offline"
        if step.type == "chrome_open_tabs":
            for url in step.parameters.get("urls_to_open", []):
                if not _session_reaches(str(url)):
                    return (f"opens {urllib.parse.urlparse(str(url)).hostname} in Chrome (the session's network "
                            "has only its own loopback here; no egress is configured)")
        if step.type == "download":
            for item in step.parameters.get("files", []):
                url, path = str(item.get("url", "")), str(item.get("path", ""))
                if not is_local_url(url):
                    reason = files.availability(url, path, spec.id)
                    if reason:
                        return reason
        if step.type in ("launch", "execute", "command"):
            prog = None if step.parameters.get("shell") else program_of(step.parameters.get("command", ""))
            if prog and prog not in SESSION_HELPERS and prog not in CONTROLLER_HELPERS and shutil.which(prog) is None:
                return f"needs {prog!r}, which is not installed"
    for getter in (*ev.results, *ev.expected):
        if getter is None:
            continue
        kind = getter.get("type")
        if kind in UNAVAILABLE_GETTERS:
            return f"evaluator getter {kind!r} {UNAVAILABLE_GETTERS[kind]}"
        if kind not in GETTERS:
            return f"evaluator getter {kind!r} is not implemented offline"
        if kind in TREE_GETTERS:
            reason = accessibility.missing_parts()
            if reason:
                return f"evaluator getter {kind!r} reads the accessibility tree, but {reason}"
        if kind in ("cache_file", "cloud_file"):
            urls = getter.get("path") or getter.get("url") or ""
            dests = getter.get("dest") or ""
            urls, dests = (urls, dests) if isinstance(urls, list) else ([urls], [dests])
            dests = dests if isinstance(dests, list) else [dests] * len(urls)
            for url, dest in zip(urls, dests, strict=False):  # as the getter reads them (getters.py)
                if not is_local_url(str(url)):
                    reason = files.reference_availability(str(url), str(dest), spec.id)
                    if reason:
                        return reason.replace("downloads its files", "its reference files come")
    reason = metric_unavailable(spec)
    if reason:
        return reason
    if "{CLIENT_PASSWORD}" in text or re.search(r"\bsudo\b", text):
        return "needs sudo (the session user is unprivileged)"
    for schema in set(re.findall(r"gsettings (?:get|set|reset) ([\w.]+)", text)):
        if not (SCHEMA_DIR / f"{schema}.gschema.xml").exists():
            return f"needs the GSettings schema {schema} (GNOME is not installed)"
    if re.search(r"\b(pactl|pulseaudio)\b", text) and shutil.which("pulseaudio") is None:
        return "needs PulseAudio, which is not installed"
    app_needs = {"libreoffice_impress": "loimpress", "gimp": "gimp", "vlc": "vlc", "vs_code": "code",
                 "thunderbird": "thunderbird", "chrome": "chromium"}
    for app in {spec.app, *spec.related_apps}:
        binary = app_needs.get(app)
        if binary and shutil.which(binary) is None:
            return f"needs {app} ({binary!r} is not installed)"
    return None
