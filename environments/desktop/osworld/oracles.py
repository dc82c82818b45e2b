"""Oracles for OSWorld tasks: id -> a scripted solution acting only through shared actions.

Each solves its task the way a capable user would at a terminal (ctrl+alt+t, then commands), in
general terms -- it edits the setting the instruction asks for, it does not write the evaluator's
expected answer anywhere else. Apps whose settings a task changes are closed first, as their own
settings writer would otherwise overwrite the edit on exit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from mintgym.action_spaces import ActionModel, Click, Done, Key, Wait
from mintgym.environments.desktop.env import DesktopEnvironment
from mintgym.environments.desktop.osworld.getters import CHROME_PREFS, chrome_prefs
from mintgym.environments.desktop.scripting import terminal

Oracle = Callable[[DesktopEnvironment], AsyncIterator[ActionModel]]


def _wait_gone(comm: str, seconds: float = 30.0) -> str:
    """Shell that waits (up to ``seconds``) until no live process of this user has a name matching the
    regex ``comm``. An app writes its settings as it exits, and under load that takes longer than any
    fixed sleep. Zombies don't count: they write nothing, and under load their reaping can lag by
    seconds (``pgrep`` would count them)."""
    polls = int(seconds / 0.2)
    return (f"for _ in $(seq {polls}); do ps -u \"$(id -u)\" -o stat=,comm= | grep -qE '^[^Z][^ ]* +{comm}$' "
            "|| break; sleep 0.2; done;")


def _chrome_pref(assign: str) -> str:
    # Chromium writes Preferences as it exits, which under load takes longer than any fixed sleep: wait
    # until it is gone; a browser still starting up may be its launcher script, so stop and wait twice.
    stop = "pkill -x google-chrome; pkill -x chromium; " + _wait_gone("chromium") + " "
    return (stop + "sleep 1; " + stop + "python3 -c \"import json,pathlib; "
            f"p=pathlib.Path.home()/'{CHROME_PREFS}'; "
            "d=json.loads(p.read_text()) if p.exists() else {}; " + assign + "; "
            "p.parent.mkdir(parents=True,exist_ok=True); p.write_text(json.dumps(d))\"")


def _chrome_prefs_show(*keys: str, value: object) -> Callable[[DesktopEnvironment], bool]:
    """Whether Chromium's Preferences file holds ``value`` under ``keys``."""
    def check(env: DesktopEnvironment) -> bool:
        data = chrome_prefs(env)
        for key in keys:
            data = data.get(key, {}) if isinstance(data, dict) else {}
        return data == value
    return check


def _until(then: Oracle, done: Callable[[DesktopEnvironment], bool], what: str, timeout: float = 90.0) -> Oracle:
    """Run ``then``, then wait until ``done`` (the command typed into a terminal has had its effect)."""
    async def oracle(env: DesktopEnvironment) -> AsyncIterator[ActionModel]:
        async for action in then(env):
            yield action
        waited = 0.0
        while not done(env):
            if waited >= timeout:
                raise RuntimeError(f"oracle: {what} not seen within {timeout:g} s")
            yield Wait(seconds=0.5)
            waited += 0.5
    return oracle


def _vlcrc(key: str, value: str, section: str = "core") -> str:
    # VLC writes its full vlcrc (every key commented under its module's [section]) soon after it first
    # starts; a key outside its section is dropped on VLC's next write. So wait for that file, close
    # VLC, then edit the key's line in place (appending under the section only if VLC never wrote it).
    f = "~/.config/vlc/vlcrc"
    return (f"timeout 30 sh -c 'until [ -s {f} ]; do sleep 0.5; done'; pkill -9 -x vlc; sleep 0.5; "
            f"mkdir -p ~/.config/vlc; touch {f}; "
            f"if grep -q '^#*{key}=' {f}; then sed -i \"s|^#*{key}=.*|{key}={value}|\" {f}; "
            f"else printf '[{section}]\\n%s\\n' \"{key}={value}\" >> {f}; fi")


async def _vlc_first_run(env: DesktopEnvironment) -> AsyncIterator[ActionModel]:
    """A fresh VLC asks about network access first; accept, as a user would (VLC then saves vlcrc)."""
    for _ in range(10):
        dialogs = [w for w, t in await env.windows() if "Privacy and Network" in t]
        if dialogs:
            x, y, width, height = await env.window_rect(dialogs[-1])
            yield Click(x=x + width // 2, y=y + 10)
            yield Key(keys=("enter",))
            yield Wait(seconds=1.0)
            return
        yield Wait(seconds=1.0)


def _vlc(key: str, value: str, section: str = "core") -> Oracle:
    edit = _shell(_vlcrc(key, value, section), settle=2.0)

    async def oracle(env: DesktopEnvironment) -> AsyncIterator[ActionModel]:
        async for action in _vlc_first_run(env):
            yield action
        async for action in edit(env):
            yield action
    return _after_window("VLC media player", oracle)


def _gimprc(line: str) -> str:
    return (f"pkill gimp; {_wait_gone('gimp.*')} mkdir -p ~/.config/GIMP/2.10; echo '{line}' >> "
            "~/.config/GIMP/2.10/gimprc")



LO_AUTOSAVE = (
    "pkill -x oosplash; pkill -x soffice.bin; " + _wait_gone("soffice.bin") + " python3 -c \"import pathlib; "
    "p=pathlib.Path.home()/'.config/libreoffice/4/user/registrymodifications.xcu'; "
    "p.parent.mkdir(parents=True,exist_ok=True); "
    "head='<?xml version=\\\"1.0\\\" encoding=\\\"UTF-8\\\"?><oor:items "
    "xmlns:oor=\\\"http://openoffice.org/2001/registry\\\" "
    "xmlns:xs=\\\"http://www.w3.org/2001/XMLSchema\\\" "
    "xmlns:xsi=\\\"http://www.w3.org/2001/XMLSchema-instance\\\"></oor:items>'; "
    "t=p.read_text() if p.exists() else head; "
    "item=lambda n,v: '<item oor:path=\\\"/org.openoffice.Office.Common/Save/Document\\\"><prop oor:name=\\\"'+n+'\\\" "
    "oor:op=\\\"fuse\\\"><value>'+v+'</value></prop></item>'; "
    "p.write_text(t.replace('</oor:items>', "
    "item('AutoSave','true')+item('AutoSaveTimeIntervall','3')+'</oor:items>'))\""
)


def _after_window(title: str, then: Oracle) -> Oracle:
    """Let an app that the setup launched finish opening first (a late window would take the focus):
    wait until the same window(s) with ``title`` have been there for two looks in a row."""
    async def oracle(env: DesktopEnvironment) -> AsyncIterator[ActionModel]:
        previous: set[int] = set()
        for _ in range(20):
            current = {w for w, t in await env.windows() if title.lower() in t.lower()}
            if current and current == previous:
                break
            previous = current
            yield Wait(seconds=2.0)
        async for action in then(env):
            yield action
    return oracle


def _shell(*commands: str, settle: float = 1.5) -> Oracle:
    def oracle(env: DesktopEnvironment) -> AsyncIterator[ActionModel]:
        return terminal(env, *commands, settle=settle)
    return oracle


async def report_infeasible(env: DesktopEnvironment) -> AsyncIterator[ActionModel]:
    """An infeasible task's solution: say so, as OSWorld's FAIL (``done(success=False)``)."""
    yield Done(success=False, answer="infeasible: FAIL")


ORACLES: dict[str, Oracle] = {
    # os: make a terminal size of 132x43 the default for every new terminal (X resources of xterm)
    "13584542-872b-42d8-b299-866967b5c3ef": _shell("echo 'XTerm*vt100.geometry: 132x43' >> ~/.Xdefaults"),
    # os: turn the system volume up to the maximum
    "28cc3b7e-b194-4bc9-8353-d04c0f4d56d2": _shell("pactl set-sink-volume @DEFAULT_SINK@ 100%"),
    # os: enlarge the text on screen
    "3ce045a0-877b-42aa-8d2c-b4a863336ab8": _shell("gsettings set org.gnome.desktop.interface text-scaling-factor 1.5"),
    # os: remove vim from the favourite apps
    "ec4e3f68-9ea4-4c18-a5c9-69f89d1178b3": _shell(
        "gsettings set org.gnome.shell favorite-apps \"$(gsettings get org.gnome.shell favorite-apps "
        "| sed \"s/'vim.desktop', //; s/, 'vim.desktop'//; s/'vim.desktop'//\")\""),
    # multi_apps: make VLC the default video player
    "937087b6-f668-4ba6-9110-60682ee33441": _shell(
        "xdg-mime default vlc.desktop video/mp4 video/x-matroska video/webm video/x-msvideo video/quicktime"),
    # chrome: Bing as the default search engine
    "bb5e4c0d-f964-439c-97b6-bdb9747de3f4": _after_window("Chromium", _until(_shell(_chrome_pref(
        "d.setdefault('default_search_provider_data',{})['template_url_data']={'short_name':'Bing',"
        "'keyword':'bing.com','url':'https://www.bing.com/search?q={searchTerms}'}")),
        _chrome_prefs_show("default_search_provider_data", "template_url_data", "short_name", value="Bing"),
        "Bing in Chromium's Preferences")),
    # chrome: the largest default font size ("Very large" is 24 px)
    "af630914-714e-4a24-a7bb-f9af687d3b91": _after_window("Chromium", _until(_shell(_chrome_pref(
        "d.setdefault('webkit',{}).setdefault('webprefs',{})['default_font_size']=24")),
        _chrome_prefs_show("webkit", "webprefs", "default_font_size", value=24),
        "font size 24 in Chromium's Preferences")),
    # gimp: at least 100 undo steps; the light theme
    # (GIMP writes gimprc as it exits, and a first start lays its profile: let it open fully first)
    "7b7617bd-57cc-468e-9c91-40c4ec2bcb3d": _after_window("GNU Image Manipulation Program",
                                                          _shell(_gimprc("(undo-levels 100)"))),
    "7767eef2-56a3-4cea-8c9f-48c070c7d65b": _after_window("GNU Image Manipulation Program",
                                                          _shell(_gimprc('(theme "Light")'))),
    # vlc: keep the player open at the end; recordings to ~/Desktop; a dark volume slider; one instance
    "5ac2891a-eacd-4954-b339-98abba077adb": _vlc("play-and-exit", "0"),
    "8ba5ae7a-5ae5-4eab-9fcc-5dd4fe3abf89": _vlc("input-record-path", "$HOME/Desktop"),
    "d06f0d4d-2cd5-4ede-8de9-598629438c6e": _vlc("qt-slider-colours", "40;40;40;20;20;20;60;60;60;30;30;30", "qt"),
    "f3977615-2b45-4ac5-8bba-80c17dbe2a37": _vlc("one-instance-when-started-from-file", "0"),
    # multi_apps: sample CPU usage with sar every second for 30 s into a report on the Desktop
    "2373b66a-092d-44cb-bfd7-82e86e7a3b4d": _shell("sar -u 1 30 > ~/Desktop/System_Resources_Report.txt", settle=36.0),
    # libreoffice (impress): AutoRecovery/auto-save every 3 minutes
    # (LibreOffice writes its settings on exit: let the launched Impress open fully before closing it)
    "2cd43775-7085-45d8-89fa-9e35c0a915cf": _after_window("LibreOffice", _shell(LO_AUTOSAVE, settle=2.0)),
}
