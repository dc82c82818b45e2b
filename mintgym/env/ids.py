"""Layer 1: the one task-id scheme, parsed by :func:`parse_task_id`.

A task id is ``[domain/]pack/name[-vN]``:

* ``domain`` -- the environment kind (``web``, ``desktop``, ``pytool``, ...); optional, because a pack's
  tasks all live in one domain and the registry knows which;
* ``pack`` -- the namespace of the pack that registers the task (``miniwob``, ``osworld``, ``mine``);
* ``name`` -- one or more ``/``-separated segments (``click-button``, ``gimp/<uuid>``);
* ``-vN`` -- an optional version suffix on the last segment (``sign-up-v2``).

Segments are letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit. Every id in the
registry keeps the form its pack wrote (``miniwob/click-button``, ``osworld/gimp/<uuid>``,
``desktop/terminal-file-v0``, ``web/mine/sign-up-v1``); lookups accept the long and the short form of
one id (``web/miniwob/click-button`` and ``miniwob/click-button`` name one task), and an id without a
version names the highest version registered.

>>> parse_task_id("web/mine/sign-up-v2", domains=("web",))
TaskId(domain='web', pack='mine', name='sign-up', version=2)
>>> parse_task_id("osworld/gimp/7a4deb26", domains=("web", "desktop")).canonical("desktop")
'desktop/osworld/gimp/7a4deb26'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mintgym.errors import RegistrationError

_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_VERSION = re.compile(r"^(?P<name>.+?)-v(?P<version>\d+)$")


@dataclass(frozen=True)
class TaskId:
    """A parsed task id; ``domain`` is None when the id left it out."""

    domain: str | None
    pack: str
    name: str
    version: int | None = None

    @property
    def versioned_name(self) -> str:
        return self.name if self.version is None else f"{self.name}-v{self.version}"

    def short(self) -> str:
        """``pack/name[-vN]``: the id without its domain."""
        return f"{self.pack}/{self.versioned_name}"

    def canonical(self, domain: str | None = None) -> str:
        """``domain/pack/name[-vN]``, the domain taken from the id or given (the task's own)."""
        domain = self.domain or domain
        return f"{domain}/{self.short()}" if domain else self.short()

    def unversioned(self, domain: str | None = None) -> str:
        """The canonical id without its version (what an unversioned lookup names)."""
        domain = self.domain or domain
        base = f"{self.pack}/{self.name}"
        return f"{domain}/{base}" if domain else base


def parse_task_id(text: str, domains: Iterable[str] = ()) -> TaskId:
    """Parse ``[domain/]pack/name[-vN]``; ``domains`` are the known domain names (the first segment is a
    domain only when it is one of them and at least two segments follow). Raises RegistrationError with
    one line saying what is wrong."""
    if not isinstance(text, str) or not text:
        raise RegistrationError(f"a task id is a non-empty string like 'web/mypack/my-task-v1', got {text!r}")
    parts = text.split("/")
    bad = [p for p in parts if not _SEGMENT.fullmatch(p)]
    if bad:
        raise RegistrationError(f"task id {text!r}: segment {bad[0]!r} is not letters, digits, '.', '_' or '-' "
                                "(starting with a letter or digit); ids look like 'web/mypack/my-task-v1'")
    if len(parts) < 2:
        raise RegistrationError(f"task id {text!r} has no pack: ids are [domain/]pack/name[-vN], e.g. "
                                f"'web/mypack/{text}'")
    domain = None
    if len(parts) >= 3 and parts[0] in set(domains):
        domain, parts = parts[0], parts[1:]
    pack, name = parts[0], "/".join(parts[1:])
    match = _VERSION.match(name)
    if match:
        return TaskId(domain, pack, match.group("name"), int(match.group("version")))
    return TaskId(domain, pack, name, None)
