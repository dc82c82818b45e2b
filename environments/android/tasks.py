"""The Android task pack, in AndroidWorld's style, on stock apps, scored from the device's real state.

Each task's ``setup`` lays its starting state over adb (``svc``, ``settings put``, ``pm clear``, files in
/sdcard), ``evaluate`` reads the result through :class:`~mintgym.environments.android.state.DeviceState`
(``settings get``, ``content query``, ``ls``, ``dumpsys window``, ``sqlite3`` as root), and the oracle
solves it through shared actions only, finding its targets in the uiautomator tree.

Tasks whose name matches AndroidWorld's take its template, difficulty and tags from
``task_metadata.json`` (read at run time, see :mod:`.metadata`); the others are MintGym's and say so in
their tags. Listing the pack touches no device.
"""

from __future__ import annotations

import abc
import asyncio
import random
import re
import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from mintgym.action_spaces import ActionModel, Back, Key, LongPress, OpenApp, Tap, Type, Wait
from mintgym.env.core import Task
from mintgym.environments.android import apps as app_names
from mintgym.environments.android import oracle as O
from mintgym.environments.android import uitree
from mintgym.environments.android.adb import AdbError
from mintgym.environments.android.metadata import androidworld
from mintgym.environments.android.state import DeviceState
from mintgym.errors import TaskUnavailable

if TYPE_CHECKING:
    from mintgym.environments.android.env import AndroidEnvironment

HOME_KEY = 3


@dataclass
class AndroidTask(Task):
    """Base of the pack. Subclasses implement ``score`` (and usually ``prepare`` and ``oracle``).

    Per-episode parameters (a random contact, a file name) live in ``env.episode``, never on the task,
    which the registry shares between sessions.
    """

    domain: ClassVar[str] = "android"
    difficulty: str = ""
    optimal_steps: int | None = None
    #: App names (see apps.KNOWN_APPS) that must be installed for the task to run.
    apps: tuple[str, ...] = ()
    needs_root: bool = False

    async def setup(self, env: AndroidEnvironment, rng: random.Random) -> str | None:
        installed = set(await env.device.packages())
        for app in self.apps:
            found = [p for p in app_names.candidates(app) if p in installed]
            if not found:
                raise TaskUnavailable(f"task {self.id!r} needs the {app} app (one of "
                                      f"{', '.join(app_names.candidates(app))})")
            env.episode.setdefault("packages", {})[app] = found[0]
        if self.needs_root and not await _rooted(env):
            raise TaskUnavailable(f"task {self.id!r} reads an app database and needs a rooted device (`adb root`)")
        instruction = await self.prepare(env, rng)
        await env.device.keyevent(HOME_KEY)
        return instruction

    async def prepare(self, env: AndroidEnvironment, rng: random.Random) -> str | None:
        """Lay the starting state; may return the instruction (parameterized tasks)."""
        return None

    async def evaluate(self, env: AndroidEnvironment) -> float:
        return await self.score(env.state, env.episode)

    @abc.abstractmethod
    async def score(self, state: DeviceState, params: dict[str, Any]) -> float:
        """The score of a device state, given the episode's parameters."""


async def _rooted(env: AndroidEnvironment) -> bool:
    try:
        return (await env.device.root_shell("id -u")).strip() == "0"
    except AdbError:  # no `su` and adbd not running as root
        return False


# -- settings -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SettingCheck:
    namespace: str
    key: str
    accept: tuple[str, ...] = ()
    #: Alternatively an inclusive numeric range.
    low: float | None = None
    high: float | None = None

    def ok(self, value: str | None) -> bool:
        if value is None:
            return False
        if self.accept:
            return value.strip() in self.accept
        try:
            number = float(value)
        except ValueError:
            return False
        return (self.low is None or number >= self.low) and (self.high is None or number <= self.high)


WIFI_ON = SettingCheck("global", "wifi_on", ("1", "2"))
WIFI_OFF = SettingCheck("global", "wifi_on", ("0",))
BT_ON = SettingCheck("global", "bluetooth_on", ("1",))
BT_OFF = SettingCheck("global", "bluetooth_on", ("0",))

# Alternatives are tried in order: Android 12+ has Network & internet > Internet > "Wi-Fi" (a switch row),
# Android 10-11 Network & internet > Wi-Fi > "Use Wi-Fi".
WIFI_PATH = (("Network & internet", "Connections"), ("Internet", "Wi-Fi"), ("Use Wi-Fi", "Wi-Fi"))
BT_PATH = (("Connected devices", "Connections"), ("Connection preferences",), ("Bluetooth",), ("Use Bluetooth",))

WIFI_ENABLE = "svc wifi enable"
WIFI_DISABLE = "svc wifi disable"
BT_ENABLE = "svc bluetooth enable || cmd bluetooth_manager enable"
BT_DISABLE = "svc bluetooth disable || cmd bluetooth_manager disable"


@dataclass
class SettingsTask(AndroidTask):
    """Reach setting values through the Settings app (and optionally end in an app)."""

    checks: tuple[SettingCheck, ...] = ()
    setup_shell: tuple[str, ...] = ()
    #: One Settings path per change; each path is a tuple of steps, each step alternative labels.
    paths: tuple[tuple[tuple[str, ...], ...], ...] = ()
    #: A seekbar fraction to drag to at the end of the last path (brightness), else None.
    seekbar: float | None = None
    #: The app that must be in the foreground at the end (TurnOnWifiAndOpenApp).
    end_app: str | None = None

    async def prepare(self, env, rng):
        for line in self.setup_shell:
            await env.device.shell(line, check=False)
        await env.device.force_stop("com.android.settings")
        if self.end_app:
            for pkg in app_names.candidates(self.end_app):
                await env.device.force_stop(pkg)
        await _settle_settings(env, self.checks)

    async def score(self, state, params):
        for check in self.checks:
            if not check.ok(await state.setting(check.namespace, check.key)):
                return 0.0
        if self.end_app and await state.foreground_package() not in app_names.candidates(self.end_app):
            return 0.0
        return 1.0

    async def oracle(self, env) -> AsyncIterator[ActionModel]:
        for i, path in enumerate(self.paths):
            if i:
                for _ in range(5):
                    yield Back()
            yield OpenApp(app="Settings")
            async for a in O.settings_path(env, *path):
                yield a
            if self.seekbar is not None and i == len(self.paths) - 1:
                async for a in O.drag_seekbar(env, self.seekbar):
                    yield a
            yield Wait(seconds=2)
        if self.end_app:
            yield OpenApp(app=self.end_app)
            async for a in O.dismiss_popups(env):
                yield a


async def _settle_settings(env, checks: tuple[SettingCheck, ...], timeout: float = 10.0) -> None:
    """Wait until the setup commands have taken effect (no check passes), so untouched scores 0."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        values = [c.ok(await env.state.setting(c.namespace, c.key)) for c in checks]
        if not any(values):
            return
        await asyncio.sleep(0.5)


# -- apps -----------------------------------------------------------------------------------------

@dataclass
class OpenAppTask(AndroidTask):
    """Bring an app to the foreground (and clear its first-run pop-ups)."""

    app: str = ""

    async def prepare(self, env, rng):
        for pkg in app_names.candidates(self.app):
            await env.device.force_stop(pkg)

    async def score(self, state, params):
        return 1.0 if await state.foreground_package() in app_names.candidates(self.app) else 0.0

    async def oracle(self, env):
        yield OpenApp(app=self.app)
        async for a in O.dismiss_popups(env):
            yield a


CONTACTS = (("Hugo Pereira", "+13920741751"), ("Amara Okafor", "+14155550142"), ("Lena Fischer", "+12065550178"),
            ("Kenji Watanabe", "+16175550199"), ("Sofia Rossi", "+13125550113"))


def digits(number: str) -> str:
    return re.sub(r"\D", "", number)


@dataclass
class ContactsAddContactTask(AndroidTask):
    """Create a contact with a name and a phone number; scored from the contacts provider."""

    async def prepare(self, env, rng):
        name, number = rng.choice(CONTACTS)
        env.episode.update(name=name, number=number)
        await env.device.shell("pm clear com.android.providers.contacts", check=False)
        await env.device.clear_app(env.episode["packages"]["Contacts"])
        return _instruction("ContactsAddContact", "Create a new contact for {name}. Their number is {number}.",
                            name=name, number=number)

    async def score(self, state, params):
        rows = await state.content_query("content://com.android.contacts/data/phones", ("display_name", "data1"))
        want = digits(params.get("number", ""))
        for row in rows:
            same_name = row.get("display_name", "").strip().casefold() == params.get("name", "").casefold()
            have = digits(row.get("data1", ""))
            if same_name and want and have and (have == want or want.endswith(have) and len(have) >= 10):
                return 1.0
        return 0.0

    async def oracle(self, env):
        first, _, last = env.episode["name"].partition(" ")
        yield OpenApp(app="Contacts")
        async for a in O.dismiss_popups(env):
            yield a
        async for a in O.tap(env, "Create contact", "Create new contact", "Add contact", scrolls=0):
            yield a
        async for a in O.dismiss_popups(env, labels=("Skip", "Not now", "Keep local", "Cancel")):
            yield a
        async for a in O.type_into(env, ("First name", "Name"), first, class_name="EditText"):
            yield a
        async for a in O.type_into(env, ("Last name", "Surname"), last, class_name="EditText"):
            yield a
        async for a in O.type_into(env, ("Phone", "Phone number"), env.episode["number"], class_name="EditText"):
            yield a
        async for a in O.tap(env, "Save", scrolls=0):
            yield a
        yield Wait(seconds=2)


ALARM_DBS = ("/data/user_de/0/{pkg}/databases/alarms.db", "/data/data/{pkg}/databases/alarms.db")


@dataclass
class ClockAlarmTask(AndroidTask):
    """Set an alarm at a given morning time; scored from the Clock app's alarm database (root)."""

    async def prepare(self, env, rng):
        hour, minute = rng.randint(5, 11), rng.choice((0, 15, 30, 45))
        pkg = env.episode["packages"]["Clock"]
        env.episode.update(hour=hour, minute=minute, package=pkg)
        await env.device.clear_app(pkg)
        return f"Set an alarm for {hour}:{minute:02d} AM in the Clock app."

    async def score(self, state, params):
        pkg = params.get("package")
        if not pkg:
            return 0.0
        for path in ALARM_DBS:
            rows = await state.sqlite(path.format(pkg=pkg), "SELECT hour, minutes, enabled FROM alarm_templates")
            if rows is None:
                continue
            for row in rows:
                if row[:3] == [str(params["hour"]), str(params["minute"]), "1"]:
                    return 1.0
        return 0.0

    async def oracle(self, env):
        yield OpenApp(app="Clock")
        async for a in O.dismiss_popups(env):
            yield a
        async for a in O.tap(env, "Alarm", "Alarms", scrolls=0):
            yield a
        async for a in O.tap(env, "Add alarm", "Add new alarm", scrolls=0):
            yield a
        async for a in O.tap_if_present(env, "text input", exact=False):
            yield a
        await asyncio.sleep(0.7)
        edits = [n for n in await env.ui_nodes() if n.class_name.endswith("EditText")]
        if len(edits) < 2:
            raise O.OracleStuck("the alarm time picker shows no hour and minute fields")
        for node, value in ((edits[0], str(env.episode["hour"])), (edits[1], f"{env.episode['minute']:02d}")):
            x, y = node.center
            yield Tap(x=x, y=y)
            yield Key(keys=("ctrl", "a"))
            yield Type(text=value)
        async for a in O.tap_if_present(env, "AM"):
            yield a
        async for a in O.tap(env, "OK", scrolls=0):
            yield a
        yield Wait(seconds=1)


FILE_NAMES = ("report_q3.txt", "holiday_plan.txt", "receipt_0412.txt", "notes_meeting.txt", "draft_letter.txt")


@dataclass
class FilesDeleteFileTask(AndroidTask):
    """Delete one file from /sdcard/Download with the Files app; a second file must survive."""

    async def prepare(self, env, rng):
        name = rng.choice(FILE_NAMES)
        keep = rng.choice([n for n in FILE_NAMES if n != name])
        folder = "/sdcard/Download"
        env.episode.update(file_name=name, keep=keep, folder=folder)
        await env.device.shell(
            f"mkdir -p {folder} && rm -f {folder}/*.txt && echo mintgym > {folder}/{shlex.quote(name)} && "
            f"echo keep > {folder}/{shlex.quote(keep)}"
        )
        for n in (name, keep):
            await env.device.shell("am broadcast -a android.intent.action.MEDIA_SCANNER_SCAN_FILE -d "
                                   + shlex.quote(f"file://{folder}/{n}"), check=False)
        await env.device.clear_app(env.episode["packages"]["Files"])
        return _instruction(
            "FilesDeleteFile",
            "Delete the file {file_name} from the Android filesystem located in the {subfolder} folder.",
            file_name=name, subfolder="Download",
        )

    async def score(self, state, params):
        present = await state.files(params.get("folder", "/sdcard/Download"))
        return 1.0 if params.get("keep") in present and params.get("file_name") not in present else 0.0

    async def oracle(self, env):
        yield OpenApp(app="Files")
        async for a in O.dismiss_popups(env):
            yield a
        async for a in O.tap(env, "Show roots", "Open navigation drawer", scrolls=0):
            yield a
        async for a in O.tap(env, "Downloads", "Download", scrolls=0):
            yield a
        async for item in O.locate(env, env.episode["file_name"]):
            if isinstance(item, uitree.UiNode):
                x, y = item.center
                yield LongPress(x=x, y=y, duration=1.0)
            else:
                yield item
        await asyncio.sleep(0.7)
        if uitree.find(await env.ui_nodes(), "Delete") is None:
            async for a in O.tap(env, "More options", scrolls=0):
                yield a
        async for a in O.tap(env, "Delete", scrolls=0):
            yield a
        async for a in O.tap(env, "Delete", "OK", scrolls=0):  # the confirmation dialog
            yield a
        yield Wait(seconds=1)


CAMERA_DIR = "/sdcard/DCIM/Camera"


@dataclass
class CameraTakePhotoTask(AndroidTask):
    """Take one photo; scored by a new JPEG in /sdcard/DCIM/Camera."""

    async def prepare(self, env, rng):
        pkg = env.episode["packages"]["Camera"]
        await env.device.shell(f"mkdir -p {CAMERA_DIR} && rm -f {CAMERA_DIR}/*", check=False)
        await env.device.clear_app(pkg)

    async def score(self, state, params):
        return 1.0 if any(n.lower().endswith((".jpg", ".jpeg")) for n in await state.files(CAMERA_DIR)) else 0.0

    async def oracle(self, env):
        yield OpenApp(app="Camera")
        async for a in O.dismiss_popups(env, rounds=5):
            yield a
        nodes = await env.ui_nodes()
        node = (uitree.find(nodes, resource_id="shutter_button")
                or uitree.find(nodes, "Shutter", "Take photo", "Capture", exact=False))
        if node is None:
            raise O.OracleStuck("no shutter button on the camera screen")
        x, y = node.center
        yield Tap(x=x, y=y)
        yield Wait(seconds=3)


SMS_MESSAGES = ("Running ten minutes late, start without me.", "Can you pick up milk on the way home?",
                "The meeting moved to Thursday at 3pm.", "Happy birthday! Dinner is on me tonight.",
                "Package arrived, thanks for sending it.")


@dataclass
class SmsSendTask(AndroidTask):
    """Send a text to a number; scored from the telephony provider's sent box (``content://sms/sent``)."""

    async def prepare(self, env, rng):
        number = f"+1555{rng.randint(1000000, 9999999)}"
        message = rng.choice(SMS_MESSAGES)
        env.episode.update(number=number, message=message)
        await env.device.shell("content delete --uri content://sms --where "
                               + shlex.quote(f"address LIKE '%{digits(number)[-7:]}'"), check=False)
        return _instruction("SimpleSmsSend",
                            "Send a text message using Simple SMS Messenger to {number} with message: {message}",
                            number=number, message=message)

    async def score(self, state, params):
        want = digits(params.get("number", ""))
        rows = await state.content_query("content://sms/sent", ("address", "body"))
        for row in rows:
            have = digits(row.get("address", ""))
            if want and have and (have == want or want.endswith(have) and len(have) >= 10) and \
                    row.get("body", "").strip() == params.get("message", "").strip():
                return 1.0
        return 0.0

    async def oracle(self, env):
        yield OpenApp(app="Simple SMS Messenger")
        async for a in O.dismiss_popups(env):
            yield a
        async for a in O.tap(env, "Start a conversation", "New conversation", "New message", scrolls=0):
            yield a
        async for a in O.type_into(env, ("Add Contact or Number…", "Add Contact or Number...", "To"),
                                   env.episode["number"], class_name="EditText", exact=False, scrolls=0):
            yield a
        yield Key(keys=("enter",))
        async for a in O.type_into(env, ("Type a message…", "Type a message...", "Message"), env.episode["message"],
                                   class_name="EditText", exact=False, scrolls=0):
            yield a
        async for a in O.tap(env, "Send", "SMS", exact=False, scrolls=0):
            yield a
        yield Wait(seconds=3)


# -- the pack -------------------------------------------------------------------------------------

def _instruction(aw_name: str, fallback: str, **params: Any) -> str:
    meta = androidworld().get(aw_name)
    template = meta.template if meta and meta.template else fallback
    try:
        return template.format(**params)
    except (KeyError, IndexError):
        return fallback.format(**params)


def _aw(cls: type[AndroidTask], aw_name: str, fallback: str, *, suffix: str = "", params: dict | None = None,
        family: str, difficulty: str, max_steps: int = 20, **fields: Any) -> AndroidTask:
    """A task named after AndroidWorld's ``aw_name``, with its template, difficulty and tags when known."""
    meta = androidworld().get(aw_name)
    params = params or {}
    tags = ("androidworld",) + (meta.tags if meta else ())
    return cls(
        id=f"android/{aw_name}{suffix}",
        instruction=_instruction(aw_name, fallback, **params),
        max_steps=max_steps,
        family=(meta.app_family if meta and meta.app_family else family),
        tags=tags + (f"difficulty:{meta.difficulty if meta else difficulty}",),
        difficulty=meta.difficulty if meta else difficulty,
        optimal_steps=meta.optimal_steps if meta else None,
        **fields,
    )


def _own(cls: type[AndroidTask], name: str, instruction: str, *, family: str, difficulty: str,
         tags: tuple[str, ...] = (), max_steps: int = 20, **fields: Any) -> AndroidTask:
    """A MintGym task (no AndroidWorld counterpart)."""
    return cls(id=f"android/{name}", instruction=instruction, max_steps=max_steps, family=family,
               tags=("mintgym",) + tags + (f"difficulty:{difficulty}",), difficulty=difficulty, **fields)


def tasks() -> list[Task]:
    """Every task of the pack. Reads AndroidWorld's metadata file if present; never touches a device."""
    settings = {"apps": ("Settings",), "family": "Android Settings", "difficulty": "easy"}
    brightness_setup = ("settings put system screen_brightness_mode 0", "settings put system screen_brightness 128")
    brightness_path = (("Display", "Display & touch"), ("Brightness level", "Brightness"))
    pack: list[AndroidTask] = [
        _aw(SettingsTask, "SystemWifiTurnOn", "Turn wifi {on_or_off}.", params={"on_or_off": "on"},
            checks=(WIFI_ON,), setup_shell=("cmd connectivity airplane-mode disable", WIFI_DISABLE),
            paths=(WIFI_PATH,), **settings),
        _aw(SettingsTask, "SystemWifiTurnOff", "Turn wifi {on_or_off}.", params={"on_or_off": "off"},
            checks=(WIFI_OFF,), setup_shell=("cmd connectivity airplane-mode disable", WIFI_ENABLE),
            paths=(WIFI_PATH,), **settings),
        _aw(SettingsTask, "SystemBluetoothTurnOn", "Turn bluetooth {on_or_off}.", params={"on_or_off": "on"},
            checks=(BT_ON,), setup_shell=(BT_DISABLE,), paths=(BT_PATH,), **settings),
        _aw(SettingsTask, "SystemBluetoothTurnOff", "Turn bluetooth {on_or_off}.", params={"on_or_off": "off"},
            checks=(BT_OFF,), setup_shell=(BT_ENABLE,), paths=(BT_PATH,), **settings),
        _aw(SettingsTask, "SystemBrightnessMax", "Turn brightness to the {max_or_min} value.",
            params={"max_or_min": "max"}, checks=(SettingCheck("system", "screen_brightness", low=255),),
            setup_shell=brightness_setup, paths=(brightness_path,), seekbar=1.0, **settings),
        _aw(SettingsTask, "SystemBrightnessMin", "Turn brightness to the {max_or_min} value.",
            params={"max_or_min": "min"}, checks=(SettingCheck("system", "screen_brightness", high=1),),
            setup_shell=brightness_setup, paths=(brightness_path,), seekbar=0.0, **settings),
        _aw(SettingsTask, "TurnOffWifiAndTurnOnBluetooth", "Turn off WiFi, then enable bluetooth",
            checks=(WIFI_OFF, BT_ON), setup_shell=("cmd connectivity airplane-mode disable", WIFI_ENABLE, BT_DISABLE),
            paths=(WIFI_PATH, BT_PATH), apps=("Settings",), family="Android Settings", difficulty="medium",
            max_steps=25),
        _aw(SettingsTask, "TurnOnWifiAndOpenApp", "Turn on Wifi, then open the {app_name} app", suffix="-clock",
            params={"app_name": "Clock"}, checks=(WIFI_ON,),
            setup_shell=("cmd connectivity airplane-mode disable", WIFI_DISABLE), paths=(WIFI_PATH,),
            end_app="Clock", apps=("Settings", "Clock"), family="Android Settings", difficulty="easy"),
        _own(SettingsTask, "SystemAirplaneModeTurnOn", "Turn airplane mode on.",
             checks=(SettingCheck("global", "airplane_mode_on", ("1",)),),
             setup_shell=("cmd connectivity airplane-mode disable || settings put global airplane_mode_on 0",),
             paths=((("Network & internet", "Connections"), ("Airplane mode",)),), **settings),
        _own(SettingsTask, "SystemLocationTurnOff", "Turn location off.",
             checks=(SettingCheck("secure", "location_mode", ("0",)),),
             setup_shell=("cmd location set-location-enabled true || settings put secure location_mode 3",),
             paths=((("Location",), ("Use location",)),), **settings),
        _own(SettingsTask, "SystemDarkThemeTurnOn", "Turn on the dark theme.",
             checks=(SettingCheck("secure", "ui_night_mode", ("2",)),), setup_shell=("cmd uimode night no",),
             paths=((("Display", "Display & touch"), ("Dark theme",)),), **settings),
        _own(SettingsTask, "SystemDoNotDisturbTurnOn", "Turn on Do Not Disturb.",
             checks=(SettingCheck("global", "zen_mode", ("1", "2", "3")),),
             setup_shell=("cmd notification set_dnd off",),
             paths=((("Sound & vibration", "Sound", "Notifications"), ("Do Not Disturb",), ("Turn on now",)),),
             **settings),
    ]
    for app in ("Clock", "Contacts", "Settings", "Camera"):
        pack.append(_aw(OpenAppTask, "OpenAppTaskEval",
                        "Open the {app_name} app. Clear any pop-ups that may appear by granting all permissions "
                        "that are required.", suffix=f"-{app.lower()}", params={"app_name": app}, app=app,
                        apps=(app,), family="launcher (any app)", difficulty="easy", max_steps=10))
    pack += [
        _aw(ContactsAddContactTask, "ContactsAddContact", "Create a new contact for {name}. Their number is {number}.",
            params={"name": "{name}", "number": "{number}"}, apps=("Contacts",), family="Contacts",
            difficulty="easy"),
        _own(ClockAlarmTask, "ClockAlarmCreate", "Set an alarm at the given morning time in the Clock app.",
             apps=("Clock",), needs_root=True, family="Clock", difficulty="medium", tags=("data_entry",
                                                                                          "parameterized")),
        _aw(FilesDeleteFileTask, "FilesDeleteFile",
            "Delete the file {file_name} from the Android filesystem located in the {subfolder} folder.",
            params={"file_name": "{file_name}", "subfolder": "{subfolder}"}, apps=("Files",), family="Files",
            difficulty="medium"),
        _aw(SmsSendTask, "SimpleSmsSend",
            "Send a text message using Simple SMS Messenger to {number} with message: {message}",
            params={"number": "{number}", "message": "{message}"}, apps=("Simple SMS Messenger",),
            family="Simple SMS Messenger", difficulty="medium"),
        _aw(CameraTakePhotoTask, "CameraTakePhoto", "Take one photo.", apps=("Camera",), family="Camera",
            difficulty="easy", max_steps=10),
    ]
    return list(pack)
