"""OSWorld's own getters that need more of the VM than a file (its ports, Python commands, a cache folder),
run on a real session through the view of OSWorld's DesktopEnv (``tree_getters.VMView``)."""

import asyncio
import io
import json
import shutil

import pytest
import requests

from mintgym.environments.desktop.osworld.metrics import metric
from mintgym.environments.desktop.osworld.tree_getters import GETTERS

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]


async def test_content_from_vm_file_reads_the_last_row_of_a_sheet(env):
    import openpyxl

    book = openpyxl.Workbook()
    book.active.append(["Name", "Citations"])
    book.active.append(["Ada", 12])
    book.active.append(["Grace", 34])
    data = io.BytesIO()
    book.save(data)
    env.write_bytes("~/Desktop/researchers.xlsx", data.getvalue())
    row = await GETTERS["content_from_vm_file"](env, {"path": "/home/user/Desktop/researchers.xlsx",
                                                       "file_type": "xlsx", "file_content": "last_row"})
    assert row == ["Grace", "34"]
    assert metric("literal_match")(row, ["Grace", "34"]) == 1.0


async def test_find_unpacked_extension_path_runs_a_command_in_the_session(env):
    prefs = {"extensions": {"settings": {"abc": {"path": "/home/user/Desktop/helloExtension", "location": 4}}}}
    env.write_bytes("~/.config/google-chrome/Default/Preferences", json.dumps(prefs).encode())
    paths = await GETTERS["find_unpacked_extension_path"](env, {})
    assert paths == ["/home/user/Desktop/helloExtension"]
    assert metric("is_in_list")(paths, {"expected": "/home/user/Desktop/helloExtension"}) == 1.0


@pytest.mark.skipif(shutil.which("vlc") is None or shutil.which("ffmpeg") is None, reason="needs vlc and ffmpeg")
async def test_vlc_playing_info_through_the_sessions_http_interface(env):
    await env.run("ffmpeg -loglevel error -f lavfi -i testsrc=duration=30:size=64x48:rate=5 -y "
                  "'$HOME/Desktop/Never Gonna.mp4'".replace("'$HOME", '"$HOME').replace(".mp4'", '.mp4"'),
                  shell=True, timeout=60)
    await env.launch('VLC_VERBOSE=-1 vlc --no-audio "$HOME/Desktop/Never Gonna.mp4"', shell=True)
    rule = {"type": "file_name", "file_name": "Never Gonna.mp4"}
    score = 0.0
    for _ in range(60):
        try:
            status = await GETTERS["vlc_playing_info"](env, {"dest": "status.xml"})
        except requests.ConnectionError:  # VLC's interface is not listening yet
            status = None
        if status is not None and (score := metric("is_vlc_playing")(status, rule)) == 1.0:
            break
        await asyncio.sleep(0.5)
    assert score == 1.0
    assert metric("is_vlc_playing")(status, {"type": "file_name", "file_name": "Other.mp4"}) == 0.0
    await env.run("pkill vlc", shell=True)


@pytest.mark.skipif(shutil.which("xterm") is None, reason="needs xterm")
async def test_vscode_config_replays_its_keys_through_the_sessions_pyautogui(env):
    """OSWorld's vscode_config presses ctrl+shift+p, types the command and Enter, then reads a file; a
    terminal stands in for VS Code's command palette (VS Code is not in Debian)."""
    await env.run("rm -f ~/Desktop/palette.txt", shell=True)
    await env.launch(["mintgym-terminal"])
    for _ in range(50):
        if any("Terminal" in title for _, title in await env.windows()):
            break
        await asyncio.sleep(0.2)
    await asyncio.sleep(1.0)
    path = await GETTERS["vscode_config"](env, {"vscode_extension_command": "echo typed > ~/Desktop/palette.txt",
                                                "path": "/home/user/Desktop/palette.txt", "dest": "palette.txt"})
    assert path is not None and open(path).read() == "typed\n"
