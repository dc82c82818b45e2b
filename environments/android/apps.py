"""App names an agent may pass to ``open_app``, and how they resolve to installed packages.

adb cannot read app labels, so common names map to the packages that ship them on AOSP, Google APIs
emulator images and Pixel phones (and AndroidWorld's apps); anything else is matched against the
installed launcher packages.
"""

from __future__ import annotations

import re

#: lower-case app name -> candidate packages, most common first.
KNOWN_APPS: dict[str, tuple[str, ...]] = {
    "settings": ("com.android.settings",),
    "clock": ("com.google.android.deskclock", "com.android.deskclock"),
    "contacts": ("com.google.android.contacts", "com.android.contacts"),
    "phone": ("com.google.android.dialer", "com.android.dialer"),
    "dialer": ("com.google.android.dialer", "com.android.dialer"),
    "messages": ("com.google.android.apps.messaging", "com.android.messaging"),
    "camera": ("com.android.camera2", "com.google.android.GoogleCamera", "com.android.camera"),
    "files": ("com.google.android.documentsui", "com.android.documentsui", "com.google.android.apps.nbu.files"),
    "chrome": ("com.android.chrome",),
    "calendar": ("com.google.android.calendar", "com.android.calendar", "com.simplemobiletools.calendar.pro"),
    "calculator": ("com.google.android.calculator", "com.android.calculator2"),
    "photos": ("com.google.android.apps.photos",),
    "gallery": ("com.android.gallery3d", "com.simplemobiletools.gallery.pro"),
    "maps": ("com.google.android.apps.maps",),
    "gmail": ("com.google.android.gm",),
    "youtube": ("com.google.android.youtube",),
    "play store": ("com.android.vending",),
    "markor": ("net.gsantner.markor",),
    "simple sms messenger": ("com.simplemobiletools.smsmessenger",),
    "simple calendar pro": ("com.simplemobiletools.calendar.pro",),
    "simple gallery pro": ("com.simplemobiletools.gallery.pro",),
    "simple draw pro": ("com.simplemobiletools.draw.pro",),
    "audio recorder": ("com.dimowner.audiorecorder",),
    "pro expense": ("com.arduia.expense",),
    "broccoli": ("com.flauschcode.broccoli",),
    "osmand": ("net.osmand",),
    "tasks": ("org.tasks",),
    "joplin": ("net.cozic.joplin",),
    "opentracks": ("de.dennisguse.opentracks",),
    "retro music": ("code.name.monkey.retromusic",),
    "vlc": ("org.videolan.vlc",),
}
ALIASES = {"google chrome": "chrome", "gmail app": "gmail", "text messages": "messages", "sms": "messages",
           "file manager": "files", "alarm": "clock", "google maps": "maps", "google photos": "photos"}


def _norm(name: str) -> str:
    return re.sub(r"\s+", " ", name.strip().casefold().removesuffix(" app"))


def resolve_app(name: str, installed: list[str], launchable: list[str]) -> str | None:
    """The package to open for ``name`` (a package name or an app name), or None.

    ``installed`` is ``pm list packages``; ``launchable`` the packages with a launcher activity.
    """
    if name in installed:
        return name
    key = ALIASES.get(_norm(name), _norm(name))
    for pkg in KNOWN_APPS.get(key, ()):
        if pkg in installed:
            return pkg
    words = [w for w in re.split(r"[^a-z0-9]+", key) if w]
    if not words:
        return None
    squashed = "".join(words)
    for pkg in launchable:  # "Audio Recorder" -> com.dimowner.audiorecorder
        tail = pkg.rsplit(".", 1)[-1].casefold()
        if tail == squashed or squashed in pkg.casefold().replace(".", ""):
            return pkg
    return None


def candidates(name: str) -> tuple[str, ...]:
    """Packages that could provide the app ``name`` (for task requirements and error messages)."""
    key = ALIASES.get(_norm(name), _norm(name))
    return KNOWN_APPS.get(key, (name,))
