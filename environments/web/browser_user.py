"""Who Chromium runs as: never root.

Agents load arbitrary HTML and JavaScript, so the browser must not run with the server's privileges. When the
env server runs as root, Chromium is started through a small launcher script that hands Playwright's fresh
profile folder to a dedicated system user (``mintgym-web``, made on first use) and drops to it with
``setpriv`` (no capabilities, no supplementary groups, no new privileges) before it execs Chromium; Playwright's
pipe to the browser survives the exec. A non-root server runs Chromium as itself. Either way the host then
tries Chromium's own sandbox first (it needs user namespaces, which e.g. Docker's default seccomp profile
denies) and falls back to ``--no-sandbox`` as the unprivileged user (see ``WebHost``).
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mintgym.environments.isolation import cgroups

log = logging.getLogger("mintgym.web")

BROWSER_USER = "mintgym-web"

_LAUNCHER = """#!/bin/sh
# Written by mintgym's WebHost: give Playwright's new profile to the browser user, then run Chromium as it.
{join}
for arg in "$@"; do
  case "$arg" in --user-data-dir=*) chown -R {uid}:{gid} -- "${{arg#--user-data-dir=}}" || exit 1 ;; esac
done
exec setpriv --reuid={uid} --regid={gid} --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs \\
  -- {chromium} "$@"
"""


@dataclass(frozen=True)
class BrowserLaunch:
    """What Playwright starts: the executable, its environment (None: inherit) and the user it runs as."""

    executable: str
    env: dict[str, str] | None
    user: str
    uid: int


def browser_launch(chromium: str, workdir: Path, cgroup: cgroups.Cgroup | None = None) -> BrowserLaunch:
    """How to start ``chromium`` without root; ``workdir`` is a fresh folder of the host's (root's, when root).
    With ``cgroup`` (root only) the launcher moves itself into that control group first, so Chromium and every
    process it starts run in it."""
    uid = os.geteuid()
    if uid != 0:
        return BrowserLaunch(chromium, None, pwd.getpwuid(uid).pw_name if _has_entry(uid) else str(uid), uid)
    if shutil.which("setpriv") is None:
        raise RuntimeError("Chromium must not run as root, and setpriv (util-linux) is not installed to drop to "
                           f"the {BROWSER_USER!r} user; install util-linux or run the env server as a normal user")
    entry = _ensure_user(BROWSER_USER)
    home = workdir / "home"
    home.mkdir(mode=0o700)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    workdir.chmod(0o711)  # the browser user may pass through to its home, not list or write the folder
    launcher = workdir / "chromium"
    join = f"{cgroup.join_script()} || exit 1" if cgroup is not None else ""
    launcher.write_text(_LAUNCHER.format(uid=entry.pw_uid, gid=entry.pw_gid, chromium=chromium, join=join))
    launcher.chmod(0o700)
    env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": os.environ.get("LANG", "C.UTF-8"),
           "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"), "TMPDIR": "/tmp"}
    if "DISPLAY" in os.environ:
        env["DISPLAY"] = os.environ["DISPLAY"]
    return BrowserLaunch(str(launcher), env, BROWSER_USER, entry.pw_uid)


def _has_entry(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def _ensure_user(name: str) -> pwd.struct_passwd:
    """The system user ``name``, made (no home, no login shell) when it does not exist yet."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    made = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                           "--shell", "/usr/sbin/nologin", name], capture_output=True, text=True, check=False)
    try:
        return pwd.getpwnam(name)  # another host may have made it at the same moment
    except KeyError:
        raise RuntimeError(f"cannot make the browser user {name!r}: {made.stderr.strip() or made.returncode}") from None
