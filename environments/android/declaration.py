"""What the android domain tells the core (:mod:`mintgym.env.declarations`): its prompt line, whether a device is
attached (checked without starting anything), and ``mintgym serve --serial``."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess

from mintgym.env.declarations import CommandOption, Declaration


def _port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def no_device() -> str | None:
    """Why no android task can run here: no adb, or adb's server (port 5037) lists no device ready, or no
    server runs and no emulator port is open; None when a device is there. Starts nothing."""
    adb = shutil.which(os.environ.get("MINTGYM_ADB") or "adb")
    if adb is None:
        return "no `adb` binary (install Android platform-tools, e.g. `apt-get install adb`)"
    if _port_open(5037):
        try:
            listed = subprocess.run([adb, "devices"], capture_output=True, text=True, timeout=5, check=False).stdout
        except subprocess.TimeoutExpired:
            return "the adb server on port 5037 does not answer `adb devices` (restart it: `adb kill-server`)"
        if any(line.split()[1:] == ["device"] for line in listed.splitlines()[1:]):
            return None
        return "no Android device attached (`adb devices` lists none ready); start an emulator or connect a phone"
    if any(_port_open(port) for port in range(5555, 5586, 2)):  # an emulator's adb port
        return None
    return ("no Android device: no adb server runs and no emulator listens on 127.0.0.1:5555-5585; start an "
            "emulator, or connect a phone with USB debugging and run `adb start-server`")


DECLARATION = Declaration(
    channels=("a11y", "text"),
    screen_hint="The screenshot shows an Android phone screen.",
    unavailable=no_device,
    probe_before_serving=True,  # a missing device fails at once, with the host's advice
    options=(CommandOption(flag="--serial", help="android: the device serial", commands=("serve",),
                           host_option="serial"),),
)
