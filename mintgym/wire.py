"""Layer 0: what crosses HTTP between env server and client -- strict pydantic models and the frame codec.

Step and reset answers travel as one binary *frame envelope* (content type
``application/x-mintgym-frame``): the 4-byte magic ``MGF1``, a big-endian uint32 length, that many bytes
of JSON metadata (:class:`FrameMeta`), then the screenshot bytes in the encoding the client chose
(PNG, JPEG or raw RGB). Screenshots are never base64 inside JSON on this path.

A batch of resets and steps over several sessions (:class:`BatchRequest`) is answered by one *batch
envelope* (``application/x-mintgym-frames``): the magic ``MGB1``, a big-endian uint32 count, then per item a
uint32 length and that many bytes: the item's frame envelope, or its JSON error answer
(``{"status", "error": {"code", "message", "session_id"}}``) when that item failed.
"""

from __future__ import annotations

import io
import struct
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mintgym.types import Observation

API_VERSION = "v1"
FRAME_CONTENT_TYPE = "application/x-mintgym-frame"
MAGIC = b"MGF1"
BATCH_CONTENT_TYPE = "application/x-mintgym-frames"
BATCH_MAGIC = b"MGB1"
#: The most sessions one batch request may step.
MAX_BATCH = 1024
Encoding = Literal["png", "jpeg", "raw"]
IMAGE_CONTENT_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "raw": "application/octet-stream"}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FrameOptions(Strict):
    encoding: Encoding = "png"
    jpeg_quality: int = Field(85, ge=1, le=100)


class CreateSessionRequest(Strict):
    #: Side channels to fill in every observation (:mod:`mintgym.observe`): "text", "a11y", "dom", and "som"
    #: (numbered marks drawn on the screenshot; ask for "a11y" too for their legend).
    side_channels: list[Literal["text", "a11y", "dom", "som"]] = Field(default_factory=list)
    #: Options passed to the environment host's create() (e.g. a viewport for web).
    env_options: dict[str, Any] = Field(default_factory=dict)
    #: The task the session's resets start by default: the answer's ``screen_size`` is then that task's
    #: screen (a web task's viewport), so a client can fix its observation space before any reset.
    task_id: str | None = None


class SessionCreated(Strict):
    session_id: str
    #: (width, height) of the frames of ``task_id`` (when none is named: of the task a reset without one starts).
    screen_size: tuple[int, int]
    action_set: str
    #: The line agent prompts add about this domain's screenshots (its declaration's ``screen_hint``).
    screen_hint: str = ""


class ResetRequest(Strict):
    task_id: str | None = None
    #: A non-negative integer (as gymnasium and numpy take seeds): refused with a 422 at the door, not by
    #: whichever domain's RNG meets it first.
    seed: int | None = Field(None, ge=0)
    #: At most this many steps in this episode (a limit below the task's own); reaching it truncates.
    max_steps: int | None = Field(None, ge=1)
    frame: FrameOptions = Field(default_factory=FrameOptions)


class StepRequest(Strict):
    #: A typed action as JSON, e.g. {"type": "click", "x": 10, "y": 20}.
    action: dict[str, Any] | None = None
    #: Raw model text, parsed on the server with the one shared parser.
    action_text: str | None = Field(None, max_length=100_000)
    #: The agent could not express an action, and why: the step counts with this as ``info["error"]`` and
    #: nothing is executed (an agent that parses its own output sends this, never its raw text).
    agent_error: str | None = Field(None, max_length=10_000)
    #: "reject": an invalid typed action is a 422 and no step; "count": it is a step with info["error"].
    invalid: Literal["reject", "count"] = "reject"
    frame: FrameOptions = Field(default_factory=FrameOptions)


class BatchItem(Strict):
    """One session's part of a batch: exactly one of ``reset`` and ``step``."""

    session_id: str
    reset: ResetRequest | None = None
    step: StepRequest | None = None


class BatchRequest(Strict):
    """Resets and steps of distinct sessions, run concurrently; answered as one batch envelope, in order."""

    items: list[BatchItem] = Field(min_length=1, max_length=MAX_BATCH)


class ObservationMeta(Strict):
    instruction: str
    domain: str
    step: int
    frame_id: str
    shape: tuple[int, int, int]
    encoding: Encoding
    text: str | None = None
    a11y: str | None = None
    dom: str | None = None
    zoom: tuple[int, int, int, int] | None = None
    last_error: str | None = None


class FrameMeta(Strict):
    observation: ObservationMeta
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict)


def encode_image(shot: np.ndarray, options: FrameOptions) -> bytes:
    if options.encoding == "raw":
        return np.ascontiguousarray(shot, dtype=np.uint8).tobytes()
    from PIL import Image

    buf = io.BytesIO()
    img = Image.fromarray(shot)
    if options.encoding == "png":
        img.save(buf, format="PNG", compress_level=1)
    else:
        img.save(buf, format="JPEG", quality=options.jpeg_quality)
    return buf.getvalue()


def decode_image(data: bytes, encoding: str, shape: tuple[int, int, int]) -> np.ndarray:
    if encoding == "raw":
        expected = shape[0] * shape[1] * shape[2]
        if len(data) != expected:
            raise ValueError(f"raw frame has {len(data)} bytes, expected {expected} for shape {shape}")
        return np.frombuffer(data, dtype=np.uint8).reshape(shape)
    from PIL import Image

    img = Image.open(io.BytesIO(data)).convert("RGB")
    arr = np.asarray(img, dtype=np.uint8)
    if arr.shape != tuple(shape):
        raise ValueError(f"{encoding} frame decodes to shape {arr.shape}, expected {tuple(shape)}")
    return arr


def pack_frame(obs: Observation, options: FrameOptions, reward: float = 0.0, terminated: bool = False,
               truncated: bool = False, info: dict[str, Any] | None = None) -> bytes:
    """The whole envelope as one bytes object (see :func:`frame_parts` for the zero-copy pieces)."""
    return b"".join(frame_parts(obs, options, reward, terminated, truncated, info))


def frame_parts(obs: Observation, options: FrameOptions, reward: float = 0.0, terminated: bool = False,
                truncated: bool = False, info: dict[str, Any] | None = None) -> tuple[bytes, bytes | memoryview]:
    """(head, image): the envelope in two pieces; a raw image is a view of the pixels, not a copy."""
    meta = FrameMeta(
        observation=ObservationMeta(
            instruction=obs.instruction, domain=obs.domain, step=obs.step, frame_id=obs.frame_id,
            shape=tuple(obs.screenshot.shape), encoding=options.encoding, text=obs.text, a11y=obs.a11y, dom=obs.dom,
            zoom=obs.zoom, last_error=obs.last_error,
        ),
        reward=reward, terminated=terminated, truncated=truncated, info=info or {},
    )
    head = meta.model_dump_json().encode()
    if options.encoding == "raw":
        image: bytes | memoryview = memoryview(np.ascontiguousarray(obs.screenshot, dtype=np.uint8)).cast("B")
    else:
        image = encode_image(obs.screenshot, options)
    return MAGIC + struct.pack(">I", len(head)) + head, image


def unpack_frame(payload: bytes) -> tuple[Observation, FrameMeta]:
    if payload[:4] != MAGIC or len(payload) < 8:
        raise ValueError("not a MintGym frame envelope (bad magic)")
    (length,) = struct.unpack(">I", payload[4:8])
    meta = FrameMeta.model_validate_json(payload[8:8 + length])
    o = meta.observation
    shot = decode_image(payload[8 + length:], o.encoding, o.shape)
    obs = Observation(screenshot=shot, instruction=o.instruction, domain=o.domain, step=o.step,
                      frame_id=o.frame_id, text=o.text, a11y=o.a11y, dom=o.dom, zoom=o.zoom, last_error=o.last_error)
    return obs, meta


def batch_parts(items: list[tuple[bytes, ...]]) -> list[bytes | memoryview]:
    """The batch envelope's pieces for items given as pieces (a frame's head and image, or one JSON error)."""
    parts: list[bytes | memoryview] = [BATCH_MAGIC + struct.pack(">I", len(items))]
    for pieces in items:
        parts.append(struct.pack(">I", sum(len(p) for p in pieces)))
        parts.extend(pieces)
    return parts


def unpack_batch(payload: bytes) -> list[bytes]:
    """The items of a batch envelope: each a frame envelope (starting with ``MGF1``) or a JSON error answer."""
    if payload[:4] != BATCH_MAGIC or len(payload) < 8:
        raise ValueError("not a MintGym batch envelope (bad magic)")
    view = memoryview(payload)
    (count,) = struct.unpack(">I", view[4:8])
    items, at = [], 8
    for _ in range(count):
        if at + 4 > len(view):
            raise ValueError(f"batch envelope truncated: {len(items)} of {count} items")
        (length,) = struct.unpack(">I", view[at:at + 4])
        if at + 4 + length > len(view):
            raise ValueError(f"batch envelope truncated in item {len(items)} of {count}")
        items.append(bytes(view[at + 4:at + 4 + length]))
        at += 4 + length
    if at != len(view):
        raise ValueError(f"batch envelope has {len(view) - at} bytes after its {count} items")
    return items
