"""The server's side of the worker protocol: whatever a cell writes into the pipe is a ProtocolError
(that cell's failure), never another exception."""

from __future__ import annotations

import asyncio
import json

import pytest

from mintgym.environments.pytool.protocol import MAX_DROPPED, CellReply, ProtocolError, cell_reply, read_frame
from mintgym.environments.pytool.worker import HEADER


async def _read(body: bytes, limit: int = 1 << 20, size: int | None = None) -> dict:
    stream = asyncio.StreamReader()
    stream.feed_data(HEADER.pack(len(body) if size is None else size) + body)
    stream.feed_eof()
    return await read_frame(stream, limit)


async def test_a_well_formed_frame_is_read():
    assert await _read(json.dumps({"seq": 3, "output": "hi"}).encode()) == {"seq": 3, "output": "hi"}


@pytest.mark.parametrize("body, words", [
    (b"[" * 400_000, "nested too deeply"),
    (b'{"a": ' * 100_000 + b"1" + b"}" * 100_000, "nested too deeply"),
    (b"\xff\xfe not json", "not JSON"),
    (b"{'single': 'quotes'}", "not JSON"),
    (b"[1, 2]", "a JSON list, not an object"),
    (b'"text"', "a JSON str, not an object"),
    (b'{"n": ' + b"9" * 5000 + b"}", "not JSON"),
])
async def test_a_bad_frame_is_a_protocol_error(body, words):
    with pytest.raises(ProtocolError, match=words):
        await _read(body)


async def test_a_frame_over_the_limit_is_refused_before_it_is_read():
    with pytest.raises(ProtocolError, match="a frame of 2000000 bytes is over the limit of 1000"):
        await _read(b"{}", limit=1000, size=2_000_000)


@pytest.mark.parametrize("message, field", [
    ({"output": "x"}, "seq"),
    ({"seq": "1"}, "seq"),
    ({"seq": True}, "seq"),
    ({"seq": 1, "output": {"x": 1}}, "output"),
    ({"seq": 1, "error": ["a"]}, "error"),
    ({"seq": 1, "truncated_bytes": -5}, "truncated_bytes"),
    ({"seq": 1, "truncated_bytes": MAX_DROPPED + 1}, "truncated_bytes"),
    ({"seq": 1, "truncated_bytes": 1.5}, "truncated_bytes"),
    ({"seq": 1, "restart": "yes"}, "restart"),
])
def test_a_malformed_reply_names_its_bad_field(message, field):
    with pytest.raises(ProtocolError, match=rf"a malformed reply \({field}: "):
        cell_reply(message)


def test_a_reply_keeps_only_what_the_server_reads():
    reply = cell_reply({"seq": 2, "ok": "ignored", "output": "4\n", "error": None, "truncated_bytes": 7,
                        "restart": False, "seconds": "ignored"})
    assert reply == CellReply(seq=2, output="4\n", truncated_bytes=7)
