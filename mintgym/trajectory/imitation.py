"""Behaviour-cloning data: a teacher's episodes replayed through a student agent's own prompts.

A run of the task oracle (``mintgym eval --agent scripted``) records what the teacher saw and did. Each
successful episode's observations are replayed, in order, through ``agent.imitate(observation, action)``:
the student builds the prompt it would have built (its image size, history and text) and says which
response it would have written to take the same action. The records are supervised pairs in the student's
own format, trained on by :mod:`mintgym.trainer.sft` and written by ``mintgym export --agent`` as a Hugging
Face dataset (DESIGN section 5). A step the student does not answer (``imitate`` returns None: an action
it cannot express, or one a one-decision student makes no call for) gives no record.

Each record's ``messages`` is the prompt JSON-safe, each image part ``{"type": "image", "image": i}``, the
index into the record's ``images``: the frames (or their ``crop`` region) resized to the size the student showed them
at (the shared :func:`mintgym.agents.vlm.resize_image`), so what is trained on is exactly what the model would see.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mintgym.action_spaces import ActionSet, action_set_for, build_action
from mintgym.env import declarations
from mintgym.policy import Agent, AgentContext
from mintgym.trajectory.store import iter_run
from mintgym.trajectory.types import Trajectory
from mintgym.types import Observation


class _Frames:
    """An episode's recorded frames by frame id, each read from disk once (a prompt shows the frame its step
    was chosen on, and a history shows earlier ones again)."""

    def __init__(self, path: Path, traj: Trajectory):
        self.files = {s.frame_id: path / s.screenshot for s in traj.steps}
        self.pixels: dict[str, np.ndarray] = {}

    def get(self, frame_id: str | None) -> np.ndarray | None:
        if frame_id not in self.pixels:
            file = self.files.get(frame_id)
            if file is None:
                return None
            self.pixels[frame_id] = np.asarray(Image.open(file).convert("RGB"))
        return self.pixels[frame_id]


def _shown(messages: list[dict[str, Any]], frames: _Frames, where: str) -> tuple[str, list[np.ndarray]]:
    """The prompt with each image part an index into the returned images (the frames at their shown size)."""
    from mintgym.agents.vlm import resize_image

    images: list[np.ndarray] = []
    out = []
    for message in messages:
        parts = []
        for part in message["content"]:
            if part.get("type") != "image":
                parts.append(part)
                continue
            if part.get("blank"):  # a blind agent's black image
                width, height = part["size"]
                images.append(np.zeros((height, width, 3), dtype=np.uint8))
                parts.append({"type": "image", "image": len(images) - 1})
                continue
            pixels = frames.get(part.get("frame_id"))
            if pixels is None:
                raise ValueError(f"{where}: the prompt shows frame {part.get('frame_id')!r}, which the episode "
                                 "did not record")
            if part.get("crop"):
                x0, y0, x1, y1 = part["crop"]
                pixels = pixels[y0:y1, x0:x1]
            images.append(resize_image(pixels, tuple(part["size"])))
            parts.append({"type": "image", "image": len(images) - 1})
        out.append({"role": message["role"], "content": parts})
    return json.dumps(out), images


async def _replay(path: Path, traj: Trajectory, agent: Agent, action_set: ActionSet) -> list[dict[str, Any]]:
    steps = [s for s in traj.steps if s.action is not None and not s.error]
    if not steps:
        return []
    await agent.start(AgentContext(task_id=traj.task_id, domain=traj.domain, instruction=traj.instruction,
                                   action_set=action_set, screen_size=tuple(steps[0].screen_size),
                                   max_steps=len(traj.steps), seed=traj.seed,
                                   screen_hint=declarations.declaration(traj.domain).screen_hint,
                                   observe=tuple(traj.observe)))
    frames = _Frames(path, traj)
    records = []
    for step in steps:
        channels = step.channels or {}
        observation = Observation(screenshot=frames.get(step.frame_id), instruction=traj.instruction,
                                  domain=traj.domain, step=step.index, frame_id=step.frame_id, zoom=step.zoom,
                                  text=channels.get("text"), a11y=channels.get("a11y"), dom=channels.get("dom"))
        taught = await agent.imitate(observation, build_action(step.action))
        if taught is None:
            continue
        if taught.messages is None:
            raise ValueError(f"{agent.name}.imitate returned no messages: imitation needs the prompt it built")
        messages, images = _shown(taught.messages, frames, f"{path} step {step.index}")
        records.append({"trajectory_id": traj.id, "task_id": traj.task_id, "seed": traj.seed, "domain": traj.domain,
                        "step": step.index, "instruction": traj.instruction, "messages": messages,
                        "images": images, "response": taught.text,
                        "response_token_ids": list(taught.response_token_ids or []),
                        "action": json.dumps(taught.action.model_dump(mode="json") if taught.action else None)})
    return records


async def imitation_records(run_dir: str | Path, make_agent: Callable[[], Agent], *, only_success: bool = True,
                            episodes: Collection[str] | None = None,
                            skip_seeds: Collection[int] = ()) -> list[dict[str, Any]]:
    """The supervised records of every (successful) episode under ``run_dir`` (only those whose trajectory id
    is in ``episodes``, when given; none on ``skip_seeds``), one per imitated step."""
    if not callable(getattr(make_agent(), "imitate", None)):
        raise ValueError("this agent cannot learn from a teacher: it has no imitate(observation, action) method")
    records: list[dict[str, Any]] = []
    for path, traj in iter_run(run_dir):
        if ((only_success and not traj.success) or (episodes is not None and traj.id not in episodes)
                or traj.seed in skip_seeds):
            continue
        agent = make_agent()
        records += await _replay(path, traj, agent, action_set_for(traj.domain))
    return records


def imitation_dataset(run_dir: str | Path, make_agent: Callable[[], Agent], *, only_success: bool = True,
                      episodes: Collection[str] | None = None, skip_seeds: Collection[int] = ()):
    """:func:`imitation_records` as a Hugging Face ``datasets.Dataset`` (images as an Image sequence)."""
    import datasets

    records = asyncio.run(imitation_records(run_dir, make_agent, only_success=only_success, episodes=episodes,
                                            skip_seeds=skip_seeds))
    if not records:
        raise ValueError(f"no {'successful ' if only_success else ''}steps under {run_dir} that this agent can "
                         "imitate")
    features = datasets.Features({
        "trajectory_id": datasets.Value("string"), "task_id": datasets.Value("string"),
        "seed": datasets.Value("int64"), "domain": datasets.Value("string"), "step": datasets.Value("int32"),
        "instruction": datasets.Value("string"), "messages": datasets.Value("string"),
        "images": datasets.Sequence(datasets.Image()), "response": datasets.Value("string"),
        "response_token_ids": datasets.Sequence(datasets.Value("int64")), "action": datasets.Value("string"),
    })
    for record in records:  # as PIL images: datasets would pass arrays through int64 lists
        record["images"] = [Image.fromarray(image) for image in record["images"]]
    return datasets.Dataset.from_list(records, features=features)
