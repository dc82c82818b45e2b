"""PytoolHost: the env server's factory for pytool sessions, each with its own sandbox uid and folder.

Sandbox uids are claimed with a lock file per uid (``/run/mintgym-pytool/uid-N.lock``, held with
``flock`` for the session's life), so several servers on one machine never share a uid.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from mintgym.env.core import EnvironmentHost
from mintgym.environments.isolation import cgroups, mounts
from mintgym.environments.pytool.env import PytoolEnvironment
from mintgym.environments.pytool.options import PytoolOptions
from mintgym.environments.pytool.sandbox import SandboxLimits, probe_isolation

UID_BASE = 61000
UID_COUNT = 2000
LOCK_DIR = Path("/run/mintgym-pytool")

_LIMIT_FIELDS = set(SandboxLimits.__dataclass_fields__)


class UidPool:
    """Claims unused sandbox uids across processes (flock on one file per uid)."""

    def __init__(self, base: int = UID_BASE, count: int = UID_COUNT, lock_dir: Path = LOCK_DIR):
        self.base, self.count, self.lock_dir = base, count, Path(lock_dir)
        self._held: dict[int, int] = {}
        self._next = 0

    def acquire(self) -> int:
        self.lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        for i in range(self.count):
            uid = self.base + (self._next + i) % self.count
            if uid in self._held:
                continue
            fd = os.open(self.lock_dir / f"uid-{uid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self._held[uid] = fd
            self._next = (uid - self.base + 1) % self.count
            return uid
        raise RuntimeError(f"no free sandbox uid in {self.base}..{self.base + self.count - 1}")

    def release(self, uid: int) -> None:
        fd = self._held.pop(uid, None)
        if fd is not None:
            os.close(fd)  # closing drops the flock


_POOL: UidPool | None = None
_DIR_PREFIX = "mintgym-pytool-"


def _sweep_stale_dirs() -> None:
    """Remove session folders left by pytool hosts whose process died without ``stop()``."""
    for entry in Path(tempfile.gettempdir()).glob(f"{_DIR_PREFIX}*-*"):
        pid_text = entry.name[len(_DIR_PREFIX):].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            for point in mounts.mounts_under(entry):
                try:
                    mounts.unmount(point)
                except OSError:
                    pass
            shutil.rmtree(entry, ignore_errors=True)
        except PermissionError:
            continue


def _shared_pool() -> UidPool:
    """One pool per process, so consecutive hosts rotate through uids instead of reusing the first."""
    global _POOL
    if _POOL is None:
        _POOL = UidPool()
    return _POOL


class PytoolHost(EnvironmentHost):
    """Hosts pytool sessions. Options (defaults here, overridable per session in ``create``): the fields of
    :class:`~.options.PytoolOptions` (``cpu_seconds``, ``memory_mb``, ``disk_mb``, ..., ``width``, ``height``),
    each typed and bounded.
    """

    domain: ClassVar[str] = "pytool"
    options_model: ClassVar[type[PytoolOptions]] = PytoolOptions

    def __init__(self, base_dir: str | os.PathLike | None = None, **defaults: Any):
        self.defaults = _options(defaults).model_dump(include=set(defaults))
        self._base_arg = base_dir
        self.base_dir: Path | None = None
        self.isolation = probe_isolation()
        self._uids = _shared_pool() if self.isolation.level == "namespace" else None
        self._sessions: dict[int, tuple[PytoolEnvironment, int | None]] = {}
        self._counter = 0

    async def start(self) -> None:
        self._ensure_base()

    def _ensure_base(self) -> Path:
        if self.base_dir is None:
            if self._base_arg is not None:
                self.base_dir = Path(self._base_arg)
                self.base_dir.mkdir(parents=True, exist_ok=True)
            else:
                _sweep_stale_dirs()
                cgroups.sweep_stale("pytool")
                self.base_dir = Path(tempfile.mkdtemp(prefix=f"{_DIR_PREFIX}{os.getpid()}-"))
            os.chmod(self.base_dir, 0o711)
        return self.base_dir

    async def create(self, options: dict[str, Any]) -> PytoolEnvironment:
        merged = _options({**self.defaults, **(options or {})})
        limits = SandboxLimits(**{k: getattr(merged, k) for k in _LIMIT_FIELDS})
        size = (merged.width, merged.height)
        uid = self._uids.acquire() if self._uids is not None else None
        self._counter += 1
        root = self._ensure_base() / f"session-{self._counter}"
        env = PytoolEnvironment(root, uid, limits, size, on_close=self._forget)
        self._sessions[id(env)] = (env, uid)
        try:
            await env.start()
        except BaseException:
            await env.close()
            raise
        return env

    def _forget(self, env: PytoolEnvironment) -> None:
        _, uid = self._sessions.pop(id(env), (None, None))
        if uid is not None and self._uids is not None:
            self._uids.release(uid)

    async def stop(self) -> None:
        for env, _ in list(self._sessions.values()):
            await env.close()
        for _, uid in list(self._sessions.values()):
            if uid is not None and self._uids is not None:
                self._uids.release(uid)
        self._sessions.clear()
        if self.base_dir is not None:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None

    @property
    def sessions(self) -> list[PytoolEnvironment]:
        return [env for env, _ in self._sessions.values()]

    def describe(self) -> dict[str, Any]:
        iso = self.isolation
        merged = _options(self.defaults)
        limits = SandboxLimits(**{k: getattr(merged, k) for k in _LIMIT_FIELDS})
        return {"sandbox": {"level": iso.level, "network": iso.network, "filesystem": iso.filesystem,
                            "uid": iso.uid, "reason": iso.reason, "resources": iso.resources,
                            "cgroup_reason": iso.cgroup_reason, "disk": iso.disk, "limits": limits.__dict__.copy()}}


def _options(values: dict[str, Any]) -> PytoolOptions:
    """The options as :class:`PytoolOptions` reads them; a ValueError naming the bad option otherwise."""
    from mintgym.server.options import describe_error

    try:
        return PytoolOptions.model_validate(values)
    except ValidationError as err:
        raise ValueError(describe_error(PytoolOptions, err, values)) from None
