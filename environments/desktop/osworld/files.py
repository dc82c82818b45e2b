"""The files OSWorld tasks download: a content cache keyed by URL, laid out as OSWorld's own file cache.

OSWorld's setup controller saves each downloaded file as ``cache/<task id>/<uuid5(URL)>_<file name>``;
this cache uses the same layout, so a user can point ``$MINTGYM_OSWORLD_CACHE`` at OSWorld's ``cache/``
folder (or copy it) and run the download-heavy tasks without the internet. Where a file is not cached:

* ``$MINTGYM_OSWORLD_MIRROR`` (a base URL) replaces the scheme and host of every remote URL (a local
  copy of the file host: ``https://huggingface.co/a/b`` -> ``<mirror>/a/b``);
* a remote URL is fetched only when downloads are allowed (``$MINTGYM_OSWORLD_DOWNLOADS=1``, set by
  ``--allow-internet``); a loopback URL always is. A fetched file is written to the cache first.

The env server fetches (the session has no network beyond its own loopback); the file then goes into the
session as the session user's.
"""

from __future__ import annotations

import os
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

CACHE_VARIABLE = "MINTGYM_OSWORLD_CACHE"
MIRROR_VARIABLE = "MINTGYM_OSWORLD_MIRROR"
DOWNLOADS_VARIABLE = "MINTGYM_OSWORLD_DOWNLOADS"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_FILE_BYTES = 2 * 2**30


class DownloadUnavailable(RuntimeError):
    """A file that is neither cached nor allowed to be fetched; the message names the URL and the way out."""


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_VARIABLE) or Path.home() / ".cache" / "mintgym" / "osworld")


def cache_name(url: str, path: str) -> str:
    """OSWorld's cache file name for ``url`` saved at ``path`` in the VM."""
    return f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{os.path.basename(path)}"


def cached(url: str, path: str, task_id: str) -> Path | None:
    """The cached copy of ``url`` (for this task, else saved by any task), or None."""
    root = cache_dir()
    own = root / task_id / cache_name(url, path)
    if own.is_file():
        return own
    key = f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_"
    if root.is_dir():
        for folder in root.iterdir():
            if folder.is_dir():
                for candidate in folder.glob(f"{key}*"):
                    if candidate.is_file() and not candidate.name.endswith(".part"):
                        return candidate
    return None


def is_loopback(url: str) -> bool:
    parsed = urllib.parse.urlparse(url)
    return parsed.scheme in ("http", "https") and parsed.hostname in LOOPBACK


def mirrored(url: str) -> str:
    """``url`` with the mirror base in place of its scheme and host (unchanged without a mirror)."""
    mirror = os.environ.get(MIRROR_VARIABLE)
    parsed = urllib.parse.urlparse(url)
    if not mirror or parsed.scheme not in ("http", "https") or is_loopback(url):
        return url
    rest = parsed.path + (f"?{parsed.query}" if parsed.query else "")
    return mirror.rstrip("/") + rest


def reachable(url: str) -> bool:
    """Whether :func:`fetch` may go to the network for ``url`` (loopback, a loopback mirror, or allowed)."""
    return is_loopback(mirrored(url)) or os.environ.get(DOWNLOADS_VARIABLE) == "1"


def availability(url: str, path: str, task_id: str) -> str | None:
    """None when the file can be had here, else why not (cheap: no network)."""
    if cached(url, path, task_id) is not None or reachable(url):
        return None
    host = urllib.parse.urlparse(url).hostname
    return (f"downloads its files from {host} (needs the internet: --allow-internet, or fill "
            f"${CACHE_VARIABLE} from OSWorld's cache/ folder, or set ${MIRROR_VARIABLE})")


def fetch(url: str, path: str, task_id: str, timeout: float = 60.0) -> bytes:
    """The file's bytes: from the cache, else downloaded (through the mirror) and cached."""
    hit = cached(url, path, task_id)
    if hit is not None:
        return hit.read_bytes()
    if not reachable(url):
        raise DownloadUnavailable(availability(url, path, task_id) or url)
    target = mirrored(url)
    try:
        with urllib.request.urlopen(target, timeout=timeout) as resp:
            data = resp.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise DownloadUnavailable(f"download of {target} failed: {err}") from None
    if len(data) > MAX_FILE_BYTES:
        raise DownloadUnavailable(f"{target} is larger than {MAX_FILE_BYTES} bytes")
    store = cache_dir() / task_id / cache_name(url, path)
    store.parent.mkdir(parents=True, exist_ok=True)
    partial = store.with_name(store.name + f".{os.getpid()}.part")
    partial.write_bytes(data)
    os.replace(partial, store)
    return data


def cached_reference(url: str, dest: str, task_id: str) -> Path | None:
    """A reference file of an evaluator (OSWorld's ``cloud_file`` getter saves it as ``cache/<task>/<dest>``)."""
    own = cache_dir() / task_id / os.path.basename(dest) if dest else None
    if own is not None and own.is_file():
        return own
    return cached(url, dest or url, task_id)


def reference_availability(url: str, dest: str, task_id: str) -> str | None:
    if cached_reference(url, dest, task_id) is not None or reachable(url):
        return None
    return availability(url, dest or url, task_id)


def fetch_reference(url: str, dest: str, task_id: str) -> Path:
    """The path of a reference file on this machine, downloaded into the cache when it is not there yet."""
    hit = cached_reference(url, dest, task_id)
    if hit is not None:
        return hit
    data = fetch(url, dest or url, task_id)
    if not dest:
        return cached(url, url, task_id)  # type: ignore[return-value]
    target = cache_dir() / task_id / os.path.basename(dest)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".{os.getpid()}.part")
    partial.write_bytes(data)
    os.replace(partial, target)
    return target
