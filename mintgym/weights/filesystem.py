"""Layer 5: weights through a shared folder: ``weights-<version>.npz`` written atomically, plus ``LATEST``.

The reference implementation: readable with numpy alone, and a test double for the others. Older files
beyond ``keep`` are removed. Acknowledgements are one small file per worker, ``acks/worker-<id>``
(``<version> <unix time>``), replaced atomically, so the trainer reads them on any node that sees the folder.

A file handed to a reader that loads it later (:meth:`FilesystemBroadcast.pinned_file`, a vLLM engine's
path) is a hard link under ``pins/``, so removing the version's own file does not take it from the reader:
each reader (a copy of the transport, as each Ray worker has) holds one pin, which its next pin releases,
and ``send`` removes pins older than ``pin_ttl_s`` (those of readers that died). The folder thus holds at
most ``keep`` versions plus one per live reader. ``receive`` reads the newest version again when its file
went in between.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mintgym.weights.base import WeightBroadcast, check_ack, from_wire_state, to_wire_state

#: Tries at reading the newest version when publications keep deleting the file just found.
_TRIES = 5


class FilesystemBroadcast(WeightBroadcast):
    """Versions as ``weights-<version>.npz`` files in ``folder`` (``keep`` newest kept), acks beside them."""

    #: The weight files' extension; subclasses with another format change it and ``_save``/``_read``.
    suffix = "npz"

    def __init__(self, folder: str | os.PathLike, keep: int = 2, pin_ttl_s: float = 3600.0):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.keep = max(1, keep)
        self.pin_ttl_s = pin_ttl_s
        self._held: Path | None = None  # this reader's pin (each copy of the transport is a reader)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_held": None}  # a copy sent to a worker holds nothing yet

    def reset(self) -> None:
        """Forget every published version and acknowledgement (a new run, or one resumed from a checkpoint,
        starts over here)."""
        (self.folder / "LATEST").unlink(missing_ok=True)
        for old in [*self.folder.glob(f"weights-*.{self.suffix}"), *self.folder.glob("acks/worker-*"),
                    *self.folder.glob(f"pins/*.{self.suffix}")]:
            old.unlink(missing_ok=True)

    def _file(self, version: int) -> Path:
        return self.folder / f"weights-{version:08d}.{self.suffix}"

    def _save(self, path: Path, state: Mapping[str, Any]) -> None:
        np.savez(path, **to_wire_state(state))

    def _read(self, path: Path) -> dict[str, Any]:
        with np.load(path) as data:
            return from_wire_state({k: data[k] for k in data.files})

    def send(self, version: int, state: Mapping[str, Any]) -> None:
        latest = self.latest_version()
        if latest is not None and version <= latest:
            raise ValueError(f"weights version {version} is not newer than the published {latest}")
        tmp = self.folder / f".weights-{version}.tmp.{self.suffix}"
        self._save(tmp, state)
        os.replace(tmp, self._file(version))
        marker = self.folder / ".LATEST.tmp"
        marker.write_text(str(version))
        os.replace(marker, self.folder / "LATEST")
        for old in sorted(self.folder.glob(f"weights-*.{self.suffix}"))[:-self.keep]:
            old.unlink(missing_ok=True)  # a reader's pin keeps the data it was handed
        self._drop_stale_pins()

    def latest_version(self) -> int | None:
        try:
            return int((self.folder / "LATEST").read_text())
        except FileNotFoundError:
            return None

    def newest_file(self, after: int | None = None) -> tuple[int, Path] | None:
        """The newest (version, file in this transport's own format) if newer than ``after``, else None. Not
        :meth:`receive_file`: a ``.npz`` is no file an engine loads itself (vLLM reads safetensors). The
        file may be removed by a later publication: :meth:`pinned_file` holds it for the reader."""
        version = self.latest_version()
        if version is None or (after is not None and version <= after):
            return None
        return version, self._file(version)

    def pinned_file(self, after: int | None = None) -> tuple[int, Path] | None:
        """:meth:`newest_file` as a path no publication removes: a hard link this process holds until its
        next call (or ``pin_ttl_s``). Where the folder cannot hold hard links, the plain file, with a warning."""
        return self._newest(after, self._pin)

    def _newest(self, after: int | None, use: Callable[[int, Path], Any]) -> tuple[int, Any] | None:
        """(version, ``use(version, file)``) of the newest version newer than ``after`` (None: none), taken
        again when its file was published over between ``LATEST`` and ``use`` (FileNotFoundError)."""
        for _ in range(_TRIES):
            got = self.newest_file(after)
            if got is None:
                return None
            try:
                return got[0], use(*got)
            except FileNotFoundError:
                continue
        raise FileNotFoundError(f"weights files in {self.folder} kept disappearing while read ({_TRIES} tries)")

    def _pin(self, version: int, file: Path) -> Path:
        held = getattr(self, "_held", None)
        if held is not None and held.name.split("-")[1] == f"{version:08d}" and held.exists():
            return held
        pins = self.folder / "pins"
        pins.mkdir(exist_ok=True)
        # <made>-<version>-<host>-<pid>-<random>: when it was made (for pin_ttl_s), and who holds it
        pin = pins / (f"{int(time.time())}-{version:08d}-{socket.gethostname()}-{os.getpid()}-"
                      f"{uuid.uuid4().hex[:8]}.{self.suffix}")
        try:
            os.link(file, pin)
        except FileNotFoundError:
            raise
        except OSError as err:  # no hard links here (some network or FUSE filesystems)
            warnings.warn(f"cannot pin weights files in {self.folder} ({err}); a later publication may remove "
                          "a file before its reader opens it", RuntimeWarning, stacklevel=3)
            return file
        if held is not None:
            held.unlink(missing_ok=True)
        self._held = pin
        return pin

    def _drop_stale_pins(self) -> None:
        now = time.time()
        for pin in self.folder.glob(f"pins/*.{self.suffix}"):
            try:
                made = int(pin.name.split("-", 1)[0])
            except ValueError:
                continue
            if now - made > self.pin_ttl_s:
                pin.unlink(missing_ok=True)

    def receive(self, after: int | None = None) -> tuple[int, dict[str, np.ndarray]] | None:
        return self._newest(after, lambda _version, file: self._read(file))

    def ack(self, worker_id: int, version: int) -> None:
        check_ack(worker_id, version)
        folder = self.folder / "acks"
        folder.mkdir(exist_ok=True)
        tmp = folder / f".worker-{worker_id}.tmp"
        tmp.write_text(f"{version} {time.time():.6f}")
        os.replace(tmp, folder / f"worker-{worker_id}")

    def acks(self) -> dict[int, tuple[int, float]]:
        out: dict[int, tuple[int, float]] = {}
        for path in self.folder.glob("acks/worker-*"):
            version, when = path.read_text().split()
            out[int(path.name.removeprefix("worker-"))] = (int(version), float(when))
        return out
