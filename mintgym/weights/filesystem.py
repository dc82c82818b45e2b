"""Layer 5: weights through a shared folder: ``weights-<version>.npz`` written atomically, plus ``LATEST``.

The reference implementation: readable with numpy alone, and a test double for the others. Older files
beyond ``keep`` are removed. Acknowledgements are one small file per worker, ``acks/worker-<id>``
(``<version> <unix time>``), replaced atomically, so the trainer reads them on any node that sees the folder.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mintgym.weights.base import WeightBroadcast, check_ack, to_numpy_state


class FilesystemBroadcast(WeightBroadcast):
    """Versions as ``weights-<version>.npz`` files in ``folder`` (``keep`` newest kept), acks beside them."""

    #: The weight files' extension; subclasses with another format change it and ``_save``/``_read``.
    suffix = "npz"

    def __init__(self, folder: str | os.PathLike, keep: int = 2):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.keep = max(1, keep)

    def reset(self) -> None:
        """Forget every published version and acknowledgement (a new run, or one resumed from a checkpoint,
        starts over here)."""
        (self.folder / "LATEST").unlink(missing_ok=True)
        for old in [*self.folder.glob(f"weights-*.{self.suffix}"), *self.folder.glob("acks/worker-*")]:
            old.unlink(missing_ok=True)

    def _file(self, version: int) -> Path:
        return self.folder / f"weights-{version:08d}.{self.suffix}"

    def _save(self, path: Path, state: Mapping[str, Any]) -> None:
        np.savez(path, **to_numpy_state(state))

    def _read(self, path: Path) -> dict[str, np.ndarray]:
        with np.load(path) as data:
            return {k: data[k] for k in data.files}

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
            old.unlink(missing_ok=True)

    def latest_version(self) -> int | None:
        try:
            return int((self.folder / "LATEST").read_text())
        except FileNotFoundError:
            return None

    def newest_file(self, after: int | None = None) -> tuple[int, Path] | None:
        """The newest (version, file in this transport's own format) if newer than ``after``, else None. Not
        :meth:`receive_file`: a ``.npz`` is no file an engine loads itself (vLLM reads safetensors)."""
        version = self.latest_version()
        if version is None or (after is not None and version <= after):
            return None
        return version, self._file(version)

    def receive(self, after: int | None = None) -> tuple[int, dict[str, np.ndarray]] | None:
        got = self.newest_file(after)
        return None if got is None else (got[0], self._read(got[1]))

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
