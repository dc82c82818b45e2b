"""Layer 6: some of a step's trained episodes, written as trajectories for ``mintgym view``.

Every ``log.sample_episodes_every`` steps the loop hands the batch it just trained on to
:func:`write_sample_episodes`, which writes up to ``log.sample_episodes`` of its episodes (the first of each
group, then the second ...) with :class:`mintgym.trajectory.store.TrajectoryWriter` under
``<out>/episodes/step_<k>/``. Each model turn is one step: the last image of its prompt as the screenshot,
the decoded prompt and response, the exact token ids and sampler logprobs, the weights version; the
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

_STATUSES = ("success", "failure", "error", "timeout")


def episodes_dir(out: str | Path, step: int) -> Path:
    return Path(out) / "episodes" / f"step_{step}"


def _decode(tokenizer: Any, ids: list[int]) -> str:
    if tokenizer is None:
        return ""
    text = tokenizer.decode(ids, skip_special_tokens=False)
    return _IMAGE_RUN.sub(lambda m: f"<|image_pad|>x{len(m.group(0)) // len('<|image_pad|>')}", text)


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
    for group, index, sample in _picked(batch, n):
        adv = compute_advantages(group.rewards, advantage, scale=scale)[index]
        status = sample.status if sample.status in _STATUSES else "failure"
        traj = Trajectory(id=f"{group.group_id[:12]}-{index}", task_id=sample.task_id, domain=sample.domain,
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
            writer.step(StepRecord(index=t, frame_id=f"turn-{t}", screenshot=shot, screen_size=size, action=None,
                                   text=_decode(tokenizer, turn.response_token_ids),
                                   prompt_token_ids=list(turn.prompt_token_ids),
                                   response_token_ids=list(turn.response_token_ids), logprobs=list(turn.logprobs),
                                   policy_version=turn.policy_version,
                                   reward=sample.reward if t == len(sample.turns) - 1 else 0.0,
                                   terminated=t == len(sample.turns) - 1,
                                   extra={"prompt": _decode(tokenizer, turn.prompt_token_ids),
                                          "images": len(turn.images), "temperature": turn.temperature}))
        traj.total_reward, traj.status, traj.ended = sample.reward, status, time.time()
        written.append(writer.close())
    return written
