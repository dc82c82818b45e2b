"""Layer 6: some of a step's trained episodes, written as trajectories for ``mintgym view``.

Every ``log.sample_episodes_every`` steps the loop hands the batch it just trained on to
:func:`write_sample_episodes`, which writes up to ``log.sample_episodes`` of its episodes (the first of each
group, then the second ...) with :class:`mintgym.trajectory.store.TrajectoryWriter` under
``<out>/episodes/step_<k>/``. What is written is the sample's own episode record (the one the learner
trained on: every step with its action or action error, reward, terminated vs truncated, exact token ids,
sampler logprobs, weights version and prompt images), plus for the inspector the last prompt image as the
screenshot where none was stored and the decoded prompt (as ``messages``, per chat turn); the episode carries
the reward, its group-relative advantage and the lag it was trained at.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from mintgym.buffer.advantages import compute_advantages
from mintgym.buffer.types import Batch, Group, Sample
from mintgym.trajectory.store import TrajectoryWriter
from mintgym.trajectory.types import StepRecord

#: A run of image placeholder tokens in a decoded prompt, shown as one marker with its count.
_IMAGE_RUN = re.compile(r"(<\|image_pad\|>)+")
#: One chat-template turn of a decoded prompt (Qwen's ``<|im_start|>role ... <|im_end|>``).
_CHAT_TURN = re.compile(r"<\|im_start\|>(\w+)\n(.*?)(?:<\|im_end\|>\n?|$)", re.S)
#: An image in a decoded prompt: its placeholder run, with the vision markers around it.
_IMAGE = re.compile(r"(?:<\|vision_start\|>)?(?:<\|image_pad\|>)+(?:<\|vision_end\|>)?")

_STATUSES = ("success", "failure", "error", "timeout")


def episodes_dir(out: str | Path, step: int) -> Path:
    return Path(out) / "episodes" / f"step_{step}"


def _count_pads(match: re.Match) -> str:
    return f"<|image_pad|>x{len(match.group(0)) // len('<|image_pad|>')}"


def prompt_messages(text: str, frame_id: str, size: tuple[int, int], images: int) -> list[dict[str, Any]]:
    """A decoded prompt as step ``messages`` (see :class:`mintgym.trajectory.types.StepRecord`): one message per
    chat-template turn (the whole text as one ``prompt`` message for a model without Qwen's markers); the
    last image is this step's screenshot, earlier ones (not stored) are named in the text."""
    turns = _CHAT_TURN.findall(text) or [("prompt", text)]
    seen, messages = 0, []
    for role, body in turns:
        content: list[dict[str, Any]] = []
        pos = 0
        for match in _IMAGE.finditer(body):
            if body[pos:match.start()]:
                content.append({"type": "text", "text": body[pos:match.start()]})
            seen += 1
            content.append({"type": "image", "frame_id": frame_id, "size": list(size)} if seen == images else
                           {"type": "text", "text": f"[image {seen} of {images}, not stored]"})
            pos = match.end()
        if body[pos:]:
            content.append({"type": "text", "text": body[pos:]})
        if content:  # not the empty assistant turn the generation prompt opens
            messages.append({"role": role, "content": content})
    return messages


def _picked(batch: Batch, n: int) -> list[tuple[Group, int, Sample]]:
    """Up to ``n`` (group, index, sample): the first sample of every group, then the second, ..."""
    picked: list[tuple[Group, int, Sample]] = []
    depth = max((len(g.samples) for g in batch.groups), default=0)
    for i in range(depth):
        for group in batch.groups:
            if i < len(group.samples) and len(picked) < n:
                picked.append((group, i, group.samples[i]))
    return picked


def write_sample_episodes(out: str | Path, step: int, batch: Batch, *, n: int, tokenizer: Any = None,
                          agent: str = "train", advantage: str = "grpo", scale: bool = True) -> list[Path]:
    """Write up to ``n`` episodes of ``batch`` (trained at ``step``); returns their directories.

    Each is the sample's own episode record (actions, action errors, per-step rewards, terminated vs
    truncated, token ids, logprobs, prompt images) with the training context added to its ``extra``; a step
    without a screenshot shows the last image of its prompt, and one without recorded messages gets its
    decoded prompt."""
    folder = episodes_dir(out, step)
    written = []
    for k, (group, index, sample) in enumerate(_picked(batch, n)):
        adv = compute_advantages(group.rewards, advantage, scale=scale)[index]
        episode = sample.record()
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", group.group_id)  # one folder: task ids hold slashes
        traj = replace(episode, id=f"{k:02d}-{name}-{index}", group_id=group.group_id, steps=[],
                       agent=episode.agent or agent,
                       status=episode.status if episode.status in _STATUSES else "failure",
                       extra={**episode.extra, "trained_at_step": step, "advantage": float(adv),
                              "lag": batch.trainer_version - sample.policy_version,
                              "worker_id": sample.worker_id, "episode_id": sample.episode_id,
                              "group_rewards": list(group.rewards)})
        writer = TrajectoryWriter(folder, traj)
        for record in episode.steps:
            writer.step(_viewable(record, writer, tokenizer))
        written.append(writer.close())
    return written


def _viewable(record: StepRecord, writer: TrajectoryWriter, tokenizer: Any) -> StepRecord:
    """``record`` as the inspector shows it: images still in the object store are left out (counted in
    ``extra``), the last prompt image stands for a missing screenshot, the decoded prompt for missing
    messages."""
    given = record.prompt_images or []
    images = [img for img in given if isinstance(img, np.ndarray)]
    shot, size = record.screenshot, record.screen_size
    if not shot and images:
        shot, size = writer.frame(images[-1]), (int(images[-1].shape[1]), int(images[-1].shape[0]))
    extra = dict(record.extra)
    messages, text = record.messages, record.text
    if tokenizer is not None and record.prompt_token_ids:
        prompt = tokenizer.decode(record.prompt_token_ids, skip_special_tokens=False)
        extra["prompt"] = _IMAGE_RUN.sub(_count_pads, prompt)
        if messages is None:
            messages = prompt_messages(prompt, record.frame_id or f"turn-{record.index}", size, len(given))
        if not text and record.response_token_ids:
            text = tokenizer.decode(record.response_token_ids, skip_special_tokens=False)
    if record.prompt_images is not None:
        extra.update(images=len(given), images_not_stored=len(given) - len(images))
    return replace(record, screenshot=shot, screen_size=size, text=text, messages=messages, extra=extra,
                   frame_id=record.frame_id or f"turn-{record.index}",
                   prompt_images=images if record.prompt_images is not None else None)
