"""Sample episodes: trained groups written as trajectories the inspector shows."""

from __future__ import annotations

import numpy as np
import pytest

from mintgym.buffer.types import Batch, Group, Sample, Turn


def _group(gid: str, rewards: list[float]) -> Group:
    samples = [Sample("null/echo", "null", 3, r, [Turn([1, 2, 3], [7], [-0.5], policy_version=2,
                                                       images=[np.full((4, 6, 3), i, np.uint8)])],
                      "success" if r else "failure", episode_id=f"{gid}-{i}") for i, r in enumerate(rewards)]
    return Group(gid, "null/echo", "null", 3, samples)


def test_sample_episodes_take_the_first_of_every_group_first(tmp_path):
    from mintgym.trainer.samples import write_sample_episodes
    from mintgym.trajectory.store import load_trajectory

    batch = Batch([_group("null/echo-3-aaaa", [1.0, 0.0]), _group("null/echo-3-bbbb", [0.0, 0.0, 1.0]),
                   _group("null/echo-3-aaaa", [0.0, 1.0])], trainer_version=3)  # a task id's slash; a same id
    dirs = write_sample_episodes(tmp_path, 5, batch, n=4)
    assert [d.name for d in dirs] == ["00-null_echo-3-aaaa-0", "01-null_echo-3-bbbb-0", "02-null_echo-3-aaaa-0",
                                      "03-null_echo-3-aaaa-1"]
    assert all(d.parent == tmp_path / "episodes" / "step_5" for d in dirs)
    first = load_trajectory(dirs[0])
    assert first.status == "success" and first.total_reward == 1.0 and first.extra["lag"] == 1
    assert first.extra["advantage"] == pytest.approx(1.0, abs=1e-5)  # (1 - 0.5) / std 0.5
    (step,) = first.steps
    assert step.screen_size == (6, 4) and step.response_token_ids == [7] and step.logprobs == [-0.5]
    assert step.terminated and step.reward == 1.0 and step.policy_version == 2


def test_a_decoded_prompt_becomes_the_messages_the_inspector_shows():
    from mintgym.trainer.samples import prompt_messages

    pad = "<|vision_start|>" + "<|image_pad|>" * 3 + "<|vision_end|>"
    text = (f"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n{pad}Before{pad}Now: count<|im_end|>\n"
            "<|im_start|>assistant\n")
    assert prompt_messages(text, "turn-1", (60, 40), images=2) == [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "[image 1 of 2, not stored]"},
                                     {"type": "text", "text": "Before"},
                                     {"type": "image", "frame_id": "turn-1", "size": [60, 40]},
                                     {"type": "text", "text": "Now: count"}]}]
    assert prompt_messages("plain prompt", "turn-0", (0, 0), images=0) == [
        {"role": "prompt", "content": [{"type": "text", "text": "plain prompt"}]}]
