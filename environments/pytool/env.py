"""PytoolEnvironment: one session -- a sandboxed Python worker, the task image, and the rendered canvas.

Domain hooks a task reads: :attr:`task_image`, :attr:`ground_truth` (set by the task's setup),
:meth:`files` / :meth:`read_file` (the sandbox's working directory) and :attr:`last_result`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

import numpy as np
from PIL import Image

from mintgym.action_spaces import ActionModel, InvalidAction, Python, Wait
from mintgym.env.core import Environment, Task
from mintgym.environments.isolation import mounts
from mintgym.environments.pytool import canvas
from mintgym.environments.pytool.sandbox import ExecResult, Sandbox, SandboxLimits
from mintgym.errors import EnvironmentCrashed

#: Largest out.png the canvas will decode (bytes on disk, pixels).
MAX_SHOWN_BYTES = 16 * 2**20
MAX_SHOWN_PIXELS = 4096 * 4096


class PytoolEnvironment(Environment):
    """A session of the Python-tool domain. Created by :class:`~.host.PytoolHost`."""

    domain: ClassVar[str] = "pytool"

    def __init__(self, root: Path, uid: int | None, limits: SandboxLimits | None = None,
                 size: tuple[int, int] = (canvas.WIDTH, canvas.HEIGHT),
                 on_close: Callable[[PytoolEnvironment], None] | None = None):
        self.root = Path(root)
        self.workdir = self.root / "work"
        self.taskdir = self.root / "task"
        self.uid = uid
        self._size = (int(size[0]), int(size[1]))
        self.sandbox = Sandbox(self.workdir, self.taskdir, uid, limits)
        self.task_image: Image.Image | None = None
        #: What the task's generator knows is right (read by ``evaluate``, never shown to the agent).
        self.ground_truth: Any = None
        self.last_result: ExecResult | None = None
        self._canvas = canvas.CanvasState()
        self._frame: np.ndarray | None = None
        self._shown_stamp: tuple[int, int] | None = None
        self._closed = False
        self._on_close = on_close

    # -- Environment ----------------------------------------------------------------------------------
    @property
    def screen_size(self) -> tuple[int, int]:
        return self._size

    async def start(self) -> None:
        self._make_dirs()
        await self.sandbox.start()

    async def reset(self, task: Task, seed: int | None) -> None:
        """A fresh worker and an empty working directory; the task's setup then lays its image."""
        reuse = self.sandbox.fresh and self.sandbox.alive()  # started and never ran code: already fresh
        if not reuse:
            await self.sandbox.stop()  # kills the worker and every process of its group (cgroup.kill)
        await asyncio.to_thread(self._clear_dirs)  # the agent may have left up to the tmpfs's inodes
        self.task_image = None
        self.ground_truth = None
        self.last_result = None
        self._shown_stamp = None
        self._canvas = canvas.CanvasState(title=task.id)
        self._frame = None
        if not reuse:
            await self.sandbox.start()

    async def execute(self, action: ActionModel) -> None:
        if isinstance(action, Python):
            result = await self.sandbox.execute(action.code)
            self.last_result = result
            shown, problem = await asyncio.to_thread(self._load_shown)
            if problem is not None:  # the cell's own failure: the agent reads why, like a traceback
                result.error = (result.error or "") + f"out.png was not shown: {problem}\n"
            self._canvas.code = action.code
            self._canvas.output = result.text()
            self._canvas.failed = not result.ok
            if shown is not None:
                self._canvas.shown_image = shown if shown is not False else None
            self._canvas.step += 1
            self._frame = None
        elif isinstance(action, Wait):
            if not self.sandbox.alive():
                raise EnvironmentCrashed("the pytool sandbox worker is gone")
            await asyncio.sleep(action.seconds)
            self._canvas.step += 1
            self._frame = None
        else:
            raise InvalidAction(f"the pytool environment cannot execute {action.type!r}")

    async def screenshot(self) -> np.ndarray:
        if self._frame is None:
            self._frame = await asyncio.to_thread(canvas.render, self._canvas, self._size)
        return self._frame.copy()

    async def side_channels(self, wanted: frozenset[str]) -> dict[str, str]:
        return {"text": self.last_output} if "text" in wanted else {}

    async def alive(self) -> bool:
        return not self._closed and self.sandbox.alive()

    def step_info(self) -> dict[str, Any]:
        used = self.sandbox.cpu_seconds()
        return {"sandbox_cpu_seconds": round(used, 3)} if used is not None else {}

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self.sandbox.close()
            await asyncio.to_thread(self._remove_dirs)
        finally:
            if self._on_close is not None:
                self._on_close(self)

    def describe(self) -> dict[str, Any]:
        return {"sandbox": self.sandbox.describe(), "screen": list(self._size)}

    # -- domain hooks ---------------------------------------------------------------------------------
    @property
    def last_output(self) -> str:
        """The last cell's output and error, as the agent reads them ("" before any cell)."""
        return self.last_result.text() if self.last_result is not None else ""

    @property
    def task_image_path(self) -> str:
        """The task image's path as the sandboxed code sees it."""
        return self.sandbox.task_image_path

    def set_task_image(self, image: Image.Image) -> None:
        """Publish the task image: to the sandbox (read-only) and on the canvas."""
        image = image.convert("RGB")
        path = self.taskdir / "image.png"
        image.save(path)
        os.chmod(path, 0o644)
        self.task_image = image
        self._canvas.task_image = image
        self._frame = None

    def files(self) -> list[str]:
        """Names of the regular files at the top of the working directory."""
        return sorted(e.name for e in os.scandir(self.workdir) if e.is_file(follow_symlinks=False))

    def read_file(self, name: str, limit: int = MAX_SHOWN_BYTES) -> bytes:
        """A file the code wrote, read safely: regular files only, no symlinks, at most ``limit`` bytes."""
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"read_file takes a plain file name in the working directory, got {name!r}")
        dir_fd = os.open(self.workdir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ValueError(f"{name!r} in the sandbox is not a regular file")
            return f.read(limit)

    # -- internals ------------------------------------------------------------------------------------
    def _make_dirs(self) -> None:
        for point in mounts.mounts_under(self.root):
            mounts.unmount(point)
        shutil.rmtree(self.workdir, ignore_errors=True)
        shutil.rmtree(self.taskdir, ignore_errors=True)
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o711)
        self.workdir.mkdir(mode=0o700)
        self.taskdir.mkdir(mode=0o755)
        os.chmod(self.taskdir, 0o755)
        if self.sandbox.uid is not None:
            os.chown(self.workdir, self.sandbox.uid, self.sandbox.uid)
        if self.sandbox.isolation.disk == "tmpfs":  # root: the working directory gets its quota
            mounts.mount_tmpfs(self.workdir, self.sandbox.limits.disk_mb, self.sandbox.uid, family="pytool")

    def _remove_dirs(self) -> None:
        for point in mounts.mounts_under(self.root):
            mounts.unmount(point)
        shutil.rmtree(self.root, ignore_errors=True)

    def _clear_dirs(self) -> None:
        """Empty the working and task folders in place (a running sandbox has them bind-mounted)."""
        for folder in (self.workdir, self.taskdir):
            for entry in os.scandir(folder):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)

    def _load_shown(self) -> tuple[Image.Image | bool | None, str | None]:
        """(image, problem) for out.png after a cell: the image when the cell (re)wrote it, False when it
        vanished or cannot be shown, None when unchanged; ``problem`` says why an out.png the cell left
        cannot be shown (a directory, FIFO or link, too big, not a PNG), None when nothing is wrong."""
        dir_fd = os.open(self.workdir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            return self._read_shown(dir_fd)
        finally:
            os.close(dir_fd)

    def _read_shown(self, dir_fd: int) -> tuple[Image.Image | bool | None, str | None]:
        try:
            info = os.stat("out.png", dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:  # no out.png: nothing to show (the last one was removed, or none was made)
            changed = self._shown_stamp is not None
            self._shown_stamp = None
            return (False if changed else None), None
        stamp = (info.st_ino, info.st_mtime_ns, info.st_size, info.st_mode)
        if stamp == self._shown_stamp:
            return None, None
        self._shown_stamp = stamp
        if not stat.S_ISREG(info.st_mode):
            return False, f"it is {_file_kind(info.st_mode)}, not a regular file; save the image itself there"
        if info.st_size > MAX_SHOWN_BYTES:
            return False, f"it is {info.st_size} bytes, over the limit of {MAX_SHOWN_BYTES}"
        try:  # no link followed, and no wait on what may have replaced the file since the look above
            fd = os.open("out.png", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
        except OSError as err:
            return False, f"it could not be opened ({os.strerror(err.errno)})"
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or now.st_size > MAX_SHOWN_BYTES:
            os.close(fd)
            return False, "it was replaced while being read"
        with os.fdopen(fd, "rb") as f:
            return _decode_png(f)


def _decode_png(f: BinaryIO) -> tuple[Image.Image | bool, str | None]:
    """The PNG in ``f`` as RGB, or (False, why not): only the PNG decoder ever reads the agent's bytes."""
    try:
        with Image.open(f, formats=("PNG",)) as img:
            if img.width * img.height > MAX_SHOWN_PIXELS:
                return False, f"it is {img.width}x{img.height} px, over the limit of {MAX_SHOWN_PIXELS} pixels"
            return img.convert("RGB"), None
    except Image.UnidentifiedImageError:
        return False, "it is not a PNG image"
    except Exception as err:  # noqa: BLE001 -- any decoder failure on agent-written bytes is the cell's
        return False, f"it is not a readable PNG ({type(err).__name__}: {str(err)[:200]})"


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")
