"""The desktop session on a real Xvfb: XTEST input, screenshots, the sandbox, reset, faults."""

import asyncio
import os
import signal

import numpy as np
import pytest
from PIL import Image
from Xlib import X
from Xlib import display as xdisplay

from mintgym.action_spaces import Click, Drag, Key, Move, Scroll, Type
from mintgym.environments.desktop.xinput import char_keysym, key_keysym
from mintgym.errors import EnvironmentCrashed

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]


async def test_keysyms_cover_unicode_and_named_keys():
    assert char_keysym("a") == ord("a")
    assert char_keysym("é") == 0xE9
    assert char_keysym("✓") == 0x01000000 | 0x2713
    assert key_keysym("enter") != 0 and key_keysym("f5") != 0 and key_keysym("pagedown") != 0


class EventWindow:
    """A full-screen override-redirect window of the test's own, recording pointer events."""

    def __init__(self, display_name: str, size: tuple[int, int]):
        self.d = xdisplay.Display(display_name)
        root = self.d.screen().root
        self.win = root.create_window(0, 0, size[0], size[1], 0, self.d.screen().root_depth,
                                      override_redirect=True,
                                      event_mask=X.ButtonPressMask | X.ButtonReleaseMask | X.PointerMotionMask)
        self.win.map()
        self.d.sync()

    def events(self):
        out = []
        while self.d.pending_events():
            ev = self.d.next_event()
            if ev.type in (X.ButtonPress, X.ButtonRelease):
                out.append(("press" if ev.type == X.ButtonPress else "release", ev.detail, ev.event_x, ev.event_y))
            elif ev.type == X.MotionNotify:
                out.append(("motion", 0, ev.event_x, ev.event_y))
        return out

    def close(self):
        self.win.destroy()
        self.d.close()


async def _events(env, window, action):
    await asyncio.sleep(0.1)
    window.events()
    await env.execute(action)
    await asyncio.sleep(0.2)
    return window.events()


async def test_pointer_actions_arrive_as_x_events(env):
    window = EventWindow(env.display_name, env.screen_size)
    try:
        ev = await _events(env, window, Click(x=120, y=48))
        buttons = [e for e in ev if e[0] != "motion"]
        assert buttons == [("press", 1, 120, 48), ("release", 1, 120, 48)]
        ev = await _events(env, window, Click(x=300, y=200, button="right", clicks=2))
        assert [e[:2] for e in ev if e[0] != "motion"] == [("press", 3), ("release", 3)] * 2
        ev = await _events(env, window, Scroll(x=10, y=10, dx=-50, dy=100))
        assert [e[1] for e in ev if e[0] == "press"] == [5, 5, 6]
        ev = await _events(env, window, Drag(x1=10, y1=20, x2=210, y2=120))
        assert ev[0][0] == "motion" and [e for e in ev if e[0] == "press"][0][1:] == (1, 10, 20)
        assert [e for e in ev if e[0] == "release"][0][1:] == (1, 210, 120)
        await env.execute(Move(x=640, y=360))
        assert env._input.pointer() == (640, 360)
    finally:
        window.close()


async def test_typing_unicode_and_key_combos_in_a_terminal(env):
    await env.launch(["mintgym-terminal"])
    for _ in range(100):
        if any(t == "Terminal" for _, t in await env.windows()):
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)
    await env.execute(Type(text="echo 'Grüße ✓ € 東京' > ~/typed.txt\n"))
    # Wait for the shell to have run that line before the line-editing part: keys typed ahead while the
    # shell is still starting reach the tty's line discipline, not readline (a loaded CI box once saw
    # ctrl+u clear only half a type-ahead line).
    for _ in range(200):
        if (env.home / "typed.txt").exists() and (env.home / "typed.txt").read_text().endswith("\n"):
            break
        await asyncio.sleep(0.05)
    await env.execute(Type(text="echo partial"))
    await env.execute(Key(keys=("ctrl", "u")))  # clears the line: the echo never runs
    many = "".join(chr(0x4E00 + i) for i in range(30))  # more distinct unmapped chars than spare keycodes
    await env.execute(Type(text=f"echo {many} >> ~/typed.txt\n"))
    await env.execute(Type(text="echo done >> ~/typed.txt\n"))
    for _ in range(50):
        if (env.home / "typed.txt").exists() and "done" in (env.home / "typed.txt").read_text():
            break
        await asyncio.sleep(0.1)
    assert (env.home / "typed.txt").read_text() == f"Grüße ✓ € 東京\n{many}\ndone\n"


async def test_screenshot_shows_what_the_app_draws(env):
    image = env.home / "Pictures" / "red.png"
    Image.new("RGB", (64, 64), (250, 10, 20)).save(image)
    os.chmod(image, 0o644)
    await env.launch(["feh", "--fullscreen", "--zoom", "fill", str(image)])
    shot = None
    for _ in range(100):
        shot = await env.screenshot()
        if tuple(shot[360, 640]) == (250, 10, 20):
            break
        await asyncio.sleep(0.1)
    assert shot.shape == (720, 1280, 3) and shot.dtype == np.uint8
    assert tuple(shot[360, 640]) == (250, 10, 20)


async def test_session_runs_as_its_own_unprivileged_user(env):
    result = await env.run("id -u; echo $HOME; touch /root/x 2>&1; echo rc=$?", shell=True)
    uid, home, *rest = result.stdout.splitlines()
    assert int(uid) == env.sandbox.uid
    if os.geteuid() == 0:
        assert int(uid) != 0
        assert rest[-1] != "rc=0"
    assert home == str(env.home)


async def test_reset_kills_every_process_and_restores_home(env):
    (env.home / "scratch.txt").write_text("left over")
    await env.launch("trap '' TERM HUP; sleep 1000", shell=True)  # an app that ignores polite signals
    await env.launch(["sh", "-c", "kill -STOP $$"])  # and one that hangs stopped
    await asyncio.sleep(0.3)
    assert len(env.sandbox.processes()) >= 3
    await env.reset(None, 0)
    assert not (env.home / "scratch.txt").exists()
    assert (env.home / "Desktop").is_dir()
    names = [p.name() for p in env.sandbox.processes()]
    assert names == ["openbox"]
    assert env.last_reset_seconds is not None


async def test_a_hanging_command_times_out_with_a_clear_error(env):
    with pytest.raises(TimeoutError, match="did not finish within 1 s"):
        await env.run("sleep 30", shell=True, timeout=1)
    assert await env.alive()


async def test_sessions_are_isolated_and_a_dead_display_is_reported(host, env):
    other = await host.create({})
    try:
        assert other.display_name != env.display_name and other.home != env.home
        if os.geteuid() == 0:
            (env.home / "private.txt").write_text("mine")
            os.chown(env.home / "private.txt", env.sandbox.uid, env.sandbox.gid)
            peek = await other.run(f"cat {env.home}/private.txt", shell=True)
            assert peek.returncode != 0 and "mine" not in peek.stdout
        os.kill(other.xserver.proc.pid, signal.SIGKILL)
        other.xserver.proc.wait()
        assert not await other.alive()
        with pytest.raises(EnvironmentCrashed):
            await other.execute(Click(x=1, y=1))
        with pytest.raises(EnvironmentCrashed):
            await other.screenshot()
    finally:
        await other.close()
        await other.close()  # closing twice is safe
    replacement = await host.create({})
    try:
        assert await replacement.alive()
        assert (await replacement.screenshot()).shape == (720, 1280, 3)
    finally:
        await replacement.close()
    assert await env.alive()
    assert (await env.screenshot()).shape == (720, 1280, 3)


async def test_a_reset_has_its_own_time_budget_not_one_x_calls(monkeypatch):
    """A reset starts an X server, namespaces and a window manager: on a loaded machine that takes longer than
    one X call may (``x_timeout``), and must not mark the session hung (it once did: the reset's own budget was
    chosen by ``fn is not self._reset_sync``, never true of two bound methods)."""
    import concurrent.futures
    import time

    from mintgym.environments.desktop import env as desktop_env

    monkeypatch.setattr(desktop_env.DesktopEnvironment, "_reset_sync", lambda self: time.sleep(0.5))
    monkeypatch.setattr(desktop_env, "RESET_SECONDS", 5.0)
    session = desktop_env.DesktopEnvironment(x_timeout=0.1)
    session._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        await session.reset(None, 0)
        assert not session._hung and session.last_reset_seconds >= 0.5
        with pytest.raises(EnvironmentCrashed, match="within 0.1 s"):  # an X call still gets x_timeout alone
            await session._call(time.sleep, 0.5, check_alive=False)
        assert session._hung
    finally:
        session._pool.shutdown(wait=True)
