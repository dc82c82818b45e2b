"""AndroidEnvironment pieces that can be checked without a device (the rest needs one: see the skips)."""

from __future__ import annotations

import pytest

from mintgym.action_spaces import ANDROID, Done, Zoom
from mintgym.environments.android.adb import AdbDevice, AdbServer
from mintgym.environments.android.env import AndroidEnvironment
from mintgym.errors import EnvironmentCrashed

pytestmark = pytest.mark.timeout(60)


def test_every_android_action_is_executed_or_left_to_the_episode():
    executed = {t.model_fields["type"].default for t in AndroidEnvironment.EXECUTES}
    assert executed | {"zoom", "done"} == set(ANDROID.type_names)
    assert Zoom not in AndroidEnvironment.EXECUTES and Done not in AndroidEnvironment.EXECUTES


async def test_start_on_an_absent_device_is_a_crash(adb_port):
    env = AndroidEnvironment(AdbDevice(AdbServer(adb_port), "emulator-5554", timeout=10))
    with pytest.raises(EnvironmentCrashed, match="'emulator-5554' is not online"):
        await env.start()
    assert not await env.alive()
    await env.close()
    await env.close()


def test_screen_size_before_start_is_an_error(adb_port):
    env = AndroidEnvironment(AdbDevice(AdbServer(adb_port), "emulator-5554"))
    with pytest.raises(RuntimeError, match="before start"):
        _ = env.screen_size


async def test_session_on_a_device(device_serial):
    """On a real device: the screenshot has the `wm size` shape, a11y text renders, a tap executes."""
    import os

    from mintgym.action_spaces import Home, Tap
    from mintgym.environments.android.host import AndroidHost

    port = os.environ.get("MINTGYM_ANDROID_ADB_PORT")
    host = AndroidHost(serial=device_serial, adb_port=int(port) if port else None)
    await host.start()
    try:
        env = await host.create({})
        shot = await env.screenshot()
        assert (shot.shape[1], shot.shape[0]) == env.screen_size
        channels = await env.side_channels(frozenset({"a11y", "text"}))
        assert channels["a11y"] and channels["text"].startswith("foreground app:")
        await env.execute(Home())
        w, h = env.screen_size
        await env.execute(Tap(x=w // 2, y=h // 2))
        await env.close()
    finally:
        await host.stop()
