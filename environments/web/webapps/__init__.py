"""The ``webapps/...`` task pack: a shop, a mail client and a room-booking site served on loopback.

``tasks()`` lists the pack without importing Playwright.
"""

from __future__ import annotations


def tasks():
    from mintgym.environments.web.webapps.tasks import tasks as _tasks

    return _tasks()
