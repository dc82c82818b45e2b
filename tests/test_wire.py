"""The batch envelope carries frames and error answers in order, and a damaged one is refused in one line."""

import json

import numpy as np
import pytest

from mintgym.types import Observation
from mintgym.wire import BATCH_MAGIC, FrameOptions, batch_parts, frame_parts, unpack_batch, unpack_frame


def _obs(value: int) -> Observation:
    return Observation(screenshot=np.full((3, 4, 3), value, np.uint8), instruction="i", domain="null", step=value,
                       frame_id=f"e-{value}")


def test_batch_envelope_round_trips_frames_and_errors():
    error = json.dumps({"status": 404, "error": {"code": "unknown_session"}}).encode()
    items = [frame_parts(_obs(1), FrameOptions(encoding="raw"), reward=1.0), (error,),
             frame_parts(_obs(2), FrameOptions(encoding="png"))]
    payload = b"".join(batch_parts(items))
    assert payload[:4] == BATCH_MAGIC
    first, failed, last = unpack_batch(payload)
    obs, meta = unpack_frame(first)
    assert meta.reward == 1.0 and obs.screenshot.tolist() == _obs(1).screenshot.tolist()
    assert json.loads(failed)["status"] == 404
    assert unpack_frame(last)[0].step == 2
    assert unpack_batch(b"".join(batch_parts([]))) == []


@pytest.mark.parametrize("damage, words", [
    (lambda p: b"MGF1" + p[4:], "bad magic"),
    (lambda p: p[:-3], "truncated in item 0 of 1"),
    (lambda p: p[:8], "truncated: 0 of 1 items"),
    (lambda p: p + b"extra", "5 bytes after its 1 items"),
])
def test_a_damaged_batch_envelope_is_refused(damage, words):
    payload = b"".join(batch_parts([frame_parts(_obs(1), FrameOptions(encoding="raw"))]))
    with pytest.raises(ValueError, match=words):
        unpack_batch(damage(payload))
