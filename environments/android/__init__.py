"""The Android domain: a phone or emulator driven over adb.

``adb`` talks to the adb server and one device, ``commands`` builds the shell commands (pure),
``uitree`` parses uiautomator dumps, ``state`` reads device state for evaluators, ``env``/``host``
implement the Environment contract and ``tasks`` is the AndroidWorld-style task pack.
Nothing here touches a device at import time.
"""
