"""The adb layer and the host against a real adb server with no device attached."""

from __future__ import annotations

import pytest

from mintgym.env import registration
from mintgym.environments.android.adb import (
    AdbDevice,
    AdbError,
    AdbServer,
    NoDeviceError,
    free_port,
    port_in_use,
    run_adb,
)
from mintgym.environments.android.host import AndroidHost
from mintgym.errors import BackendError

pytestmark = pytest.mark.timeout(60)


async def test_server_lists_no_devices(adb_port):
    server = AdbServer(adb_port)
    await server.start()
    assert server.owned is False  # the fixture's server was already there
    assert await server.devices() == {}
    assert await server.alive()


async def test_host_with_serial_fails_at_once_naming_the_fix(adb_port):
    host = AndroidHost(serial="emulator-5554", adb_port=adb_port)
    with pytest.raises(BackendError) as info:
        await host.start()
    message = str(info.value)
    assert isinstance(info.value, NoDeviceError)
    assert "no Android device 'emulator-5554' is attached" in message
    assert "emulator -avd" in message and "-no-window" in message
    assert "--serial" in message and "USB debugging" in message
    assert port_in_use(adb_port), "a server the host did not start must be left running"
    assert host.server is None


async def test_host_without_serial_fails_when_nothing_is_attached(adb_port):
    with pytest.raises(NoDeviceError, match="no Android device is attached"):
        await AndroidHost(adb_port=adb_port).start()


async def test_create_without_device_fails(adb_port):
    with pytest.raises(NoDeviceError, match="emulator-5556"):
        await AndroidHost(serial="emulator-5556", adb_port=adb_port).create({})


async def test_create_rejects_unknown_options(adb_port):
    with pytest.raises(ValueError, match="unknown android session options"):
        await AndroidHost(adb_port=adb_port).create({"colour": "red"})


async def test_host_owns_and_kills_its_own_server():
    port = free_port()
    assert not port_in_use(port)
    host = AndroidHost(serial="emulator-5554", adb_port=port)
    with pytest.raises(NoDeviceError):
        await host.start()
    assert not port_in_use(port), "the host must kill the adb server it started when start() fails"


async def test_cli_default_host_fails_and_cleans_up():
    """What `mintgym serve android --serial emulator-5554` does: its own server on a fresh port."""
    host = AndroidHost(serial="emulator-5554")
    with pytest.raises(NoDeviceError, match="no Android device 'emulator-5554'"):
        await host.start()
    await host.stop()  # safe after a failed start


async def test_server_stop_kills_only_what_it_started():
    server = AdbServer(free_port())
    await server.start()
    assert server.owned and port_in_use(server.port)
    await server.stop()
    assert not port_in_use(server.port)
    await server.stop()  # twice is fine


async def test_device_commands_on_an_absent_device_raise(adb_port):
    device = AdbDevice(AdbServer(adb_port), "emulator-5554", timeout=10)
    assert await device.state() == "absent"
    with pytest.raises(AdbError, match="gone"):
        await device.shell("true")


async def test_a_hanging_adb_call_is_killed_by_its_timeout(adb_port):
    server = AdbServer(adb_port)
    with pytest.raises(AdbError, match="did not finish within 1 s"):
        await run_adb(server.binary, adb_port, ["wait-for-device"], timeout=1)


def test_missing_adb_binary_is_a_backend_error():
    with pytest.raises(BackendError, match="adb` binary was not found"):
        AdbServer(adb_path="/nonexistent/adb")


def test_entry_point_names_the_android_host():
    assert registration.host_class("android") is AndroidHost


async def test_a_call_that_ends_just_as_its_timeout_fires_is_a_timeout_not_a_crash(monkeypatch):
    """The process exits between the timeout and the kill: killing it raised ProcessLookupError (uvloop
    does; so does asyncio once the transport is closed) and the CLI showed a long traceback."""
    import asyncio

    from mintgym.environments.android import adb

    real_wait_for = asyncio.wait_for

    async def late_timeout(awaitable, timeout):
        await real_wait_for(awaitable, timeout)  # the command finishes...
        await asyncio.sleep(0.1)
        raise TimeoutError  # ...and only then the timeout fires

    monkeypatch.setattr(adb.asyncio, "wait_for", late_timeout)
    with pytest.raises(adb.AdbTimeout):
        await run_adb("/bin/true", free_port(), [], timeout=5)
