"""Layer 6: some of a step's trained episodes, written as trajectories for ``mintgym view``.

Every ``log.sample_episodes_every`` steps the loop hands the batch it just trained on to
:func:`write_sample_episodes`, which writes up to ``log.sample_episodes`` of its episodes (the first of each
group, then the second ...) with :class:`mintgym.trajectory.store.TrajectoryWriter` under
``<out>/episodes/step_<k>/``. Each model turn is one step: the last image of its prompt as the screenshot,
the decoded prompt (as ``messages``, per chat turn) and response, the exact token ids and sampler logprobs, the weights version; the
episode carries the reward, its group-relative advantage and the lag it was trained at.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from mintgym.buffer.advantages import compute_advantages
from mintgym.buffer.types import Batch, Group, Sample
from mintgym.trajectory.store import TrajectoryWriter
from mintgym.trajectory.types import StepRecord, Trajectory

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
    """Write up to ``n`` episodes of ``batch`` (trained at ``step``); returns their directories."""
    folder = episodes_dir(out, step)
    written = []
    for k, (group, index, sample) in enumerate(_picked(batch, n)):
        adv = compute_advantages(group.rewards, advantage, scale=scale)[index]
        status = sample.status if sample.status in _STATUSES else "failure"
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", group.group_id)  # one folder: task ids hold slashes
        traj = Trajectory(id=f"{k:02d}-{name}-{index}", task_id=sample.task_id, domain=sample.domain,
                          instruction="", agent=agent, seed=sample.seed, group_id=group.group_id,
                          started=time.time(),
                          extra={"trained_at_step": step, "advantage": float(adv),
                                 "lag": batch.trainer_version - sample.policy_version,
                                 "worker_id": sample.worker_id, "episode_id": sample.episode_id,
                                 "group_rewards": list(group.rewards)})
        writer = TrajectoryWriter(folder, traj)
        for t, turn in enumerate(sample.turns):
            images = [img for img in turn.images if isinstance(img, np.ndarray)]
            shot, size = "", (0, 0)
            if images:
                shot = writer.frame(images[-1])
                size = (int(images[-1].shape[1]), int(images[-1].shape[0]))
            prompt = turn_text = ""
            if tokenizer is not None:
                prompt = tokenizer.decode(turn.prompt_token_ids, skip_special_tokens=False)
                turn_text = tokenizer.decode(turn.response_token_ids, skip_special_tokens=False)
            writer.step(StepRecord(index=t, frame_id=f"turn-{t}", screenshot=shot, screen_size=size, action=None,
                                   text=turn_text,
                                   prompt_token_ids=list(turn.prompt_token_ids),
                                   response_token_ids=list(turn.response_token_ids), logprobs=list(turn.logprobs),
                                   policy_version=turn.policy_version,
                                   reward=sample.reward if t == len(sample.turns) - 1 else 0.0,
                                   terminated=t == len(sample.turns) - 1,
                                   messages=prompt_messages(prompt, f"turn-{t}", size, len(turn.images))
                                   if prompt else None,
                                   extra={"prompt": _IMAGE_RUN.sub(_count_pads, prompt),
                                          "images": len(turn.images), "temperature": turn.temperature}))
        traj.total_reward, traj.status, traj.ended = sample.reward, status, time.time()
        written.append(writer.close())
    return written
