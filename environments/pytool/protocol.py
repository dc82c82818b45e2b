"""The server's side of the worker protocol: frames read under a size cap, replies checked by a model.

Everything read here may be the agent's: its code runs inside the worker and can write to the protocol
pipe. A frame that is too big, not JSON, nested too deep or not a well-formed reply raises
:class:`ProtocolError`, which the sandbox answers as that cell's failure (a fresh worker), never as a
server exception.
"""

from __future__ import annotations

import asyncio
import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mintgym.environments.pytool.worker import HEADER

#: The most dropped output bytes a reply may claim (more is a forged count).
MAX_DROPPED = 2**53


class ProtocolError(ValueError):
    """A frame from the worker that the protocol does not allow; the cell that sent it failed."""


class CellReply(BaseModel):
    """The worker's answer to one cell; other keys (``ok``, ``seconds``) are not trusted and ignored."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    seq: int
    output: str = ""
    error: str | None = None
    truncated_bytes: int = Field(0, ge=0, le=MAX_DROPPED)
    restart: bool = False


async def read_frame(stream: asyncio.StreamReader, limit: int) -> dict:
    """The next frame as a JSON object; :class:`ProtocolError` when it breaks the protocol."""
    head = await stream.readexactly(HEADER.size)
    (size,) = HEADER.unpack(head)
    if size > limit:
        raise ProtocolError(f"a frame of {size} bytes is over the limit of {limit}")
    body = await stream.readexactly(size)
    try:
        message = json.loads(body)
    except RecursionError:
        raise ProtocolError("a frame is nested too deeply") from None
    except ValueError as err:
        raise ProtocolError(f"a frame is not JSON: {err}") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"a frame is a JSON {type(message).__name__}, not an object")
    return message


def cell_reply(message: dict) -> CellReply:
    """``message`` as a :class:`CellReply`; :class:`ProtocolError` naming the first bad field otherwise."""
    try:
        return CellReply.model_validate(message)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "reply"
        raise ProtocolError(f"a malformed reply ({where}: {first.get('msg')})") from None
