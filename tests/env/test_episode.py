"""Episode semantics: invalid actions count as steps, done ends, max_steps truncates, zoom enlarges."""

import numpy as np
import pytest

from mintgym.action_spaces import Click, Done, Zoom
from mintgym.env.episode import Episode
from mintgym.environments.null import EchoTask, NullEnvironment
from mintgym.errors import EpisodeStateError, TaskUnavailable


def task(max_steps=3):
    return EchoTask(id="null/echo", instruction="say ok", max_steps=max_steps)


async def test_invalid_action_is_a_step_with_error_and_no_change():
    ep = Episode(NullEnvironment(64, 48))
    obs, info = await ep.reset(task(), seed=1)
    out = await ep.step({"type": "click", "x": 999, "y": 1})
    assert "off the 64x48 screen" in out.info["error"]
    assert out.reward == 0 and not out.terminated and not out.truncated
    assert out.observation.step == 1
    np.testing.assert_array_equal(out.observation.screenshot, obs.screenshot)
    assert ep.env.actions == []


async def test_unparseable_text_counts_and_is_recorded():
    ep = Episode(NullEnvironment(64, 48))
    await ep.reset(task(), seed=1)
    out = await ep.step(None, parse_error="could not parse 'blah'")
    assert out.info["error"] == "could not parse 'blah'"
    assert ep.step_count == 1


async def test_done_ends_with_task_score_and_step_after_end_fails():
    ep = Episode(NullEnvironment(64, 48))
    await ep.reset(task(), seed=1)
    out = await ep.step(Done(answer="ok"))
    assert out.terminated and out.reward == 1.0
    with pytest.raises(EpisodeStateError):
        await ep.step(Done(answer="ok"))


async def test_max_steps_truncates_and_scores():
    ep = Episode(NullEnvironment(64, 48))
    await ep.reset(task(max_steps=2), seed=1)
    assert not (await ep.step(Click(x=1, y=1))).truncated
    out = await ep.step(Click(x=2, y=2))
    assert out.truncated and not out.terminated and out.reward == 0.0


async def test_step_before_reset_is_an_error():
    with pytest.raises(EpisodeStateError, match="before reset"):
        await Episode(NullEnvironment()).step(Done())


async def test_zoom_shows_the_region_enlarged_then_the_full_screen():
    env = NullEnvironment(64, 48)
    ep = Episode(env)
    await ep.reset(task(max_steps=5), seed=1)
    await ep.step(Click(x=10, y=10))  # draws a white 5x5 mark at (10, 10)
    zoomed = (await ep.step(Zoom(x1=8, y1=8, x2=13, y2=13))).observation
    assert zoomed.zoom == (8, 8, 13, 13)
    assert zoomed.screenshot.shape == (48, 64, 3)
    assert zoomed.screenshot.mean() > 200  # the white mark fills the frame
    after = (await ep.step(Click(x=40, y=40))).observation
    assert after.zoom is None and after.screenshot.mean() < 200
    bad = await ep.step(Zoom(x1=20, y1=20, x2=10, y2=30))
    assert "x2 > x1" in bad.info["error"]


async def test_unavailable_task_refuses_reset():
    class Offline(EchoTask):
        def unavailable(self):
            return "needs the internet"

    with pytest.raises(TaskUnavailable, match="needs the internet"):
        await Episode(NullEnvironment()).reset(Offline(id="x/y", instruction="i"), 0)


def test_unknown_side_channel_is_rejected():
    with pytest.raises(ValueError, match="unknown side channels"):
        Episode(NullEnvironment(), frozenset({"html"}))


async def test_the_next_observation_carries_the_refusal_then_clears_it():
    ep = Episode(NullEnvironment(64, 48))
    await ep.reset(task(max_steps=5), seed=1)
    refused = (await ep.step({"type": "click", "x": 999, "y": 1})).observation
    assert refused.last_error is not None and "off the 64x48 screen" in refused.last_error
    accepted = (await ep.step(Click(x=1, y=1))).observation
    assert accepted.last_error is None


def test_wire_round_trip_keeps_every_observation_field():
    from mintgym.types import Observation
    from mintgym.wire import FrameOptions, pack_frame, unpack_frame

    shot = np.arange(48 * 64 * 3, dtype=np.uint8).reshape(48, 64, 3)
    obs = Observation(shot, "do it", "null", 3, "e-3", text="out", a11y="tree", zoom=(1, 2, 3, 4), last_error="no")
    back, meta = unpack_frame(pack_frame(obs, FrameOptions(encoding="raw"), 0.5, True, False, {"k": 1}))
    np.testing.assert_array_equal(back.screenshot, shot)
    assert (back.instruction, back.step, back.frame_id, back.text, back.a11y, back.zoom, back.last_error) == \
        ("do it", 3, "e-3", "out", "tree", (1, 2, 3, 4), "no")
    assert meta.reward == 0.5 and meta.terminated and meta.info == {"k": 1}
