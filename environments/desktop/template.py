"""The home-directory template every session is reset to, and the session's helper commands."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from mintgym.environments.desktop.sandbox import base_dir

SHIM_DIR = Path(__file__).parent / "shim"
DUMP_SCRIPT = "mintgym-a11y-dump.py"
TEMPLATE_VERSION = "4"
TERMINAL_LOGS = ".cache/mintgym/terminal"
#: The interpreter session users run (the server's own may sit in a directory they cannot read);
#: it needs python3-xlib for the pyautogui stand-in.
SESSION_PYTHON = "/usr/bin/python3"

BASHRC = """\
# MintGym desktop session
export PS1='\\u@desktop:\\w\\$ '
alias ll='ls -la'
"""

PULSE_DEFAULT = """\
.include /etc/pulse/default.pa
# The snapshot's volume: half way, like a fresh Ubuntu install leaves it below 100%.
set-sink-volume auto_null 32768
"""

#: The snapshot's file associations: videos open in the browser until the user picks a player.
MIMEAPPS = "[Default Applications]\n" + "".join(
    f"video/{kind}=chromium.desktop\n" for kind in ("mp4", "x-matroska", "webm", "x-msvideo", "quicktime"))

TERMINAL_KEYBIND = """<keyboard>
    <keybind key="C-A-t"><action name="Execute"><command>mintgym-terminal</command></action></keybind>"""


def _openbox_rc() -> str:
    system = Path("/etc/xdg/openbox/rc.xml")
    text = system.read_text() if system.exists() else "<openbox_config><keyboard></keyboard></openbox_config>"
    text = text.replace("<keyboard>", TERMINAL_KEYBIND, 1)
    # One desktop: virtual-desktop switching only hides windows from the agent.
    return text.replace("<number>4</number>", "<number>1</number>")


def build_template() -> Path:
    """Write the template (once per version) and return its path. Cheap when it already exists."""
    digest = hashlib.sha1((TEMPLATE_VERSION + _openbox_rc()).encode()).hexdigest()[:10]
    root = base_dir() / f"template-{digest}"
    if (root / ".complete").exists():
        return root / "home"
    tmp = root.with_name(root.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    home = tmp / "home"
    for sub in ("Desktop", "Documents", "Downloads", "Music", "Pictures", "Videos", ".config/openbox",
                ".config/pulse", TERMINAL_LOGS, ".local/share"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    (home / ".bashrc").write_text(BASHRC)
    (home / ".profile").write_text("[ -f ~/.bashrc ] && . ~/.bashrc\n")
    (home / ".config/openbox/rc.xml").write_text(_openbox_rc())
    (home / ".config/pulse/default.pa").write_text(PULSE_DEFAULT)
    (home / ".config/mimeapps.list").write_text(MIMEAPPS)
    (tmp / ".complete").write_text("ok\n")
    try:
        os.rename(tmp, root)
    except OSError:  # another server built it first
        shutil.rmtree(tmp, ignore_errors=True)
    return root / "home"


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def write_session_bin(bin_dir: Path) -> None:
    """Helper commands on the session's PATH (root-owned, read-only to the session user).

    * ``python``/``python3``: the system interpreter, with a ``pyautogui`` stand-in on the path so
      OSWorld config scripts (``import pyautogui; pyautogui.click(...)``) act through XTEST.
    * ``vlc``: VLC with its HTTP interface on the session's port 8080 (OSWorld's ``vlc_playing_info``).
    * ``mintgym-terminal``: xterm titled "Terminal", logging its output (read by ``vm_terminal_output``).
    * ``google-chrome``: Chromium with the profile where Chrome keeps it. Its DevTools port (OSWorld's
      tasks pass ``--remote-debugging-port=1337``) is on the session's own loopback, which nothing
      outside the session reaches but the server's bridge (:mod:`.devtools`). It runs with its own
      sandbox where the kernel lets the session user make user namespaces.
    """
    bin_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(bin_dir, 0o755)
    # A copy: the project's own folder is hidden from the session.
    shim = bin_dir / "shim"
    shutil.copytree(SHIM_DIR, shim, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    os.chmod(shim, 0o755)
    shutil.copyfile(Path(__file__).with_name("xinput.py"), bin_dir / "xinput.py")  # the shim's XTEST module
    shutil.copyfile(Path(__file__).with_name("a11y_dump.py"), bin_dir / DUMP_SCRIPT)  # the AT-SPI reader
    py = SESSION_PYTHON if Path(SESSION_PYTHON).exists() else sys.executable
    for name in ("python", "python3"):
        _script(bin_dir / name, f'PYTHONPATH="{shim}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{py}" "$@"\n')
    _script(bin_dir / "mintgym-terminal",
            f'mkdir -p "$HOME/{TERMINAL_LOGS}"\n'
            f'exec xterm -title Terminal -xrm "XTerm*logInhibit: false" -l '
            f'-lf "$HOME/{TERMINAL_LOGS}/$(date +%s%N).log" "$@"\n')
    # VLC with OSWorld's HTTP interface (status of what plays), on the session's own loopback only.
    _script(bin_dir / "vlc", 'exec /usr/bin/vlc --extraintf=http --http-host=127.0.0.1 --http-port=8080 '
                             '--http-password=password "$@"\n')
    # Chromium's own sandbox needs user namespaces; where the kernel refuses them to the session user it
    # still runs as that user, unsandboxed.
    flags = ('--no-first-run --no-default-browser-check --password-store=basic --disable-gpu '
             '--disable-dev-shm-usage --user-data-dir="$HOME/.config/google-chrome"')
    _script(bin_dir / "google-chrome",
            f'if unshare -U true 2>/dev/null; then exec chromium {flags} "$@"; fi\n'
            f'exec chromium --no-sandbox {flags} "$@"\n')
