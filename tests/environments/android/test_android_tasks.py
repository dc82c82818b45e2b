"""The task pack: listing (no device touched), AndroidWorld metadata, and the scoring rules.

The scoring rules are exercised on recorded device states through the small DeviceState interface the
evaluators read (``RecordedState`` below is that: recorded values, not a device). Setup and the oracles
need a device: ``test_oracle_scores_one_on_a_device`` runs the conformance check when
MINTGYM_ANDROID_SERIAL names one and is skipped otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

from mintgym.env import registration
from mintgym.environments.android import tasks as T
from mintgym.environments.android.metadata import androidworld
from mintgym.environments.android.state import DeviceState
from mintgym.testing import check_task

PACK = {t.id: t for t in T.tasks()}


@dataclass
class RecordedState:
    """Device state as recorded values, answering the DeviceState interface the evaluators use."""

    settings: dict[tuple[str, str], str] = field(default_factory=dict)
    content: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    directories: dict[str, list[str]] = field(default_factory=dict)
    foreground: str | None = None
    databases: dict[str, list[list[str]]] = field(default_factory=dict)

    async def setting(self, namespace, key):
        return self.settings.get((namespace, key))

    async def content_query(self, uri, columns=None, where=None):
        return self.content.get(uri, [])

    async def files(self, directory):
        return self.directories.get(directory, [])

    async def read_file(self, path):
        return None

    async def foreground_package(self):
        return self.foreground

    async def sqlite(self, database, sql):
        return self.databases.get(database)


def test_recorded_state_fits_the_interface():
    assert isinstance(RecordedState(), DeviceState)


def test_pack_has_at_least_15_android_tasks_with_oracles():
    assert len(PACK) >= 15
    for task in PACK.values():
        assert task.domain == "android" and task.id.startswith("android/")
        assert task.has_oracle(), task.id
        assert task.instruction and task.max_steps > 0
        assert any(tag.startswith("difficulty:") for tag in task.tags)


def test_pack_is_registered_through_its_entry_point():
    ids = {t.id for t in registration.tasks(domain="android")}
    assert set(PACK) <= ids


def test_listing_touches_no_device():
    """With no adb anywhere on PATH the pack still lists (and nothing tries to start a server)."""
    code = "from mintgym.environments.android.tasks import tasks; print(len(tasks()))"
    env = {k: v for k, v in os.environ.items() if k != "MINTGYM_ADB"}
    env["PATH"] = "/nonexistent"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(PACK)


@pytest.mark.skipif(not androidworld(), reason="AndroidWorld metadata not found (set MINTGYM_DATA)")
def test_androidworld_tasks_keep_its_names_difficulty_and_tags():
    meta = androidworld()
    matched = [t for t in PACK.values() if "androidworld" in t.tags]
    assert len(matched) >= 10
    for task in matched:
        name = task.id.removeprefix("android/").split("-")[0]
        assert name in meta, task.id
        assert task.difficulty == meta[name].difficulty
        assert f"difficulty:{meta[name].difficulty}" in task.tags
        assert set(meta[name].tags) <= set(task.tags)
        assert task.optimal_steps == meta[name].optimal_steps
    assert PACK["android/SystemWifiTurnOn"].instruction == "Turn wifi on."
    assert PACK["android/SystemBluetoothTurnOff"].instruction == "Turn bluetooth off."


def _settings(**values: str) -> RecordedState:
    table = {}
    for name, value in values.items():
        namespace, key = name.split("__")
        table[(namespace, key)] = value
    return RecordedState(settings=table)


SETTING_CASES = {
    "android/SystemWifiTurnOn": ({"global__wifi_on": "0"}, {"global__wifi_on": "1"}),
    "android/SystemWifiTurnOff": ({"global__wifi_on": "1"}, {"global__wifi_on": "0"}),
    "android/SystemBluetoothTurnOn": ({"global__bluetooth_on": "0"}, {"global__bluetooth_on": "1"}),
    "android/SystemBluetoothTurnOff": ({"global__bluetooth_on": "1"}, {"global__bluetooth_on": "0"}),
    "android/SystemBrightnessMax": ({"system__screen_brightness": "128"}, {"system__screen_brightness": "255"}),
    "android/SystemBrightnessMin": ({"system__screen_brightness": "128"}, {"system__screen_brightness": "1"}),
    "android/SystemAirplaneModeTurnOn": ({"global__airplane_mode_on": "0"}, {"global__airplane_mode_on": "1"}),
    "android/SystemLocationTurnOff": ({"secure__location_mode": "3"}, {"secure__location_mode": "0"}),
    "android/SystemDarkThemeTurnOn": ({"secure__ui_night_mode": "1"}, {"secure__ui_night_mode": "2"}),
    "android/SystemDoNotDisturbTurnOn": ({"global__zen_mode": "0"}, {"global__zen_mode": "1"}),
    "android/TurnOffWifiAndTurnOnBluetooth": ({"global__wifi_on": "1", "global__bluetooth_on": "0"},
                                             {"global__wifi_on": "0", "global__bluetooth_on": "1"}),
}


@pytest.mark.parametrize("task_id", sorted(SETTING_CASES))
async def test_settings_tasks_score_the_setting(task_id):
    before, after = SETTING_CASES[task_id]
    task = PACK[task_id]
    assert await task.score(_settings(**before), {}) == 0.0
    assert await task.score(_settings(**after), {}) == 1.0
    assert await task.score(RecordedState(), {}) == 0.0  # unreadable setting scores 0


async def test_two_changes_need_both():
    task = PACK["android/TurnOffWifiAndTurnOnBluetooth"]
    assert await task.score(_settings(global__wifi_on="0", global__bluetooth_on="0"), {}) == 0.0


async def test_wifi_and_app_needs_the_app_in_front():
    task = PACK["android/TurnOnWifiAndOpenApp-clock"]
    state = _settings(global__wifi_on="1")
    assert await task.score(state, {}) == 0.0
    state.foreground = "com.google.android.deskclock"
    assert await task.score(state, {}) == 1.0
    state.settings[("global", "wifi_on")] = "0"
    assert await task.score(state, {}) == 0.0


@pytest.mark.parametrize("app,package",
                         [("clock", "com.android.deskclock"), ("contacts", "com.google.android.contacts"),
                                         ("settings", "com.android.settings"), ("camera", "com.android.camera2")])
async def test_open_app_scores_the_foreground_package(app, package):
    task = PACK[f"android/OpenAppTaskEval-{app}"]
    assert await task.score(RecordedState(foreground="com.google.android.apps.nexuslauncher"), {}) == 0.0
    assert await task.score(RecordedState(foreground="com.google.android.permissioncontroller"), {}) == 0.0
    assert await task.score(RecordedState(foreground=package), {}) == 1.0


async def test_contact_needs_the_name_and_number():
    task = PACK["android/ContactsAddContact"]
    uri = "content://com.android.contacts/data/phones"
    params = {"name": "Hugo Pereira", "number": "+13920741751"}
    assert await task.score(RecordedState(), params) == 0.0
    wrong = RecordedState(content={uri: [{"display_name": "Hugo Pereira", "data1": "+1 392-074-0000"}]})
    assert await task.score(wrong, params) == 0.0
    right = RecordedState(content={uri: [{"display_name": "Other", "data1": "1"},
                                         {"display_name": "hugo pereira", "data1": "+1 392-074-1751"}]})
    assert await task.score(right, params) == 1.0
    assert await task.score(RecordedState(content={uri: [{"display_name": "Hugo Pereira", "data1": "(392) 074-1751"}]}),
                            params) == 1.0  # formatted without the country code


async def test_alarm_reads_the_clock_database():
    task = PACK["android/ClockAlarmCreate"]
    assert task.needs_root
    params = {"hour": 7, "minute": 30, "package": "com.google.android.deskclock"}
    db = "/data/user_de/0/com.google.android.deskclock/databases/alarms.db"
    assert await task.score(RecordedState(), params) == 0.0  # no root: unreadable
    assert await task.score(RecordedState(databases={db: [["8", "30", "1"], ["7", "30", "0"]]}), params) == 0.0
    assert await task.score(RecordedState(databases={db: [["8", "30", "1"], ["7", "30", "1"]]}), params) == 1.0


async def test_delete_file_keeps_the_other_file():
    task = PACK["android/FilesDeleteFile"]
    params = {"file_name": "report_q3.txt", "keep": "draft_letter.txt", "folder": "/sdcard/Download"}
    state = RecordedState(directories={"/sdcard/Download": ["report_q3.txt", "draft_letter.txt"]})
    assert await task.score(state, params) == 0.0
    state.directories["/sdcard/Download"] = ["draft_letter.txt"]
    assert await task.score(state, params) == 1.0
    state.directories["/sdcard/Download"] = []  # deleting everything is not the task
    assert await task.score(state, params) == 0.0


async def test_photo_needs_a_jpeg():
    task = PACK["android/CameraTakePhoto"]
    assert await task.score(RecordedState(), {}) == 0.0
    assert await task.score(RecordedState(directories={T.CAMERA_DIR: ["VID_1.mp4"]}), {}) == 0.0
    assert await task.score(RecordedState(directories={T.CAMERA_DIR: ["IMG_20261202_101500.jpg"]}), {}) == 1.0


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("task_id", sorted(PACK))
async def test_oracle_scores_one_on_a_device(task_id, device_serial):
    """Conformance on a real emulator or phone: untouched scores 0, the oracle scores 1."""
    from mintgym.environments.android.host import AndroidHost

    port = os.environ.get("MINTGYM_ANDROID_ADB_PORT")
    host = AndroidHost(serial=device_serial, adb_port=int(port) if port else None)
    await host.start()
    try:
        await check_task(host, PACK[task_id])
    finally:
        await host.stop()


async def test_sms_needs_the_number_and_the_exact_message():
    task = PACK["android/SimpleSmsSend"]
    params = {"number": "+15551234567", "message": "The meeting moved to Thursday at 3pm."}
    uri = "content://sms/sent"
    assert await task.score(RecordedState(), params) == 0.0
    other = RecordedState(content={uri: [{"address": "+15551234567", "body": "The meeting moved."}]})
    assert await task.score(other, params) == 0.0
    sent = RecordedState(content={uri: [{"address": "5551234567", "body": "The meeting moved to Thursday at 3pm. "}]})
    assert await task.score(sent, params) == 1.0
