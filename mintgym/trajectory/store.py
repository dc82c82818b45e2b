"""Writing and reading trajectory directories (JSONL + PNG), and export to a ``datasets`` dataset.

The writer appends each step as it happens (``steps.jsonl`` is flushed per line and ``meta.json`` is
rewritten atomically), so a crash mid-episode loses at most the step in flight. A step's prompt images are
stored as frames too (an array already stored, such as the step's screenshot, is not stored twice), so a
training episode read back gives the learner the same pixels (:func:`write_trajectory`, ``load_trajectory``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from mintgym.trajectory.types import StepRecord, Trajectory


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def save_png(path: Path, pixels: np.ndarray) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.asarray(pixels, dtype=np.uint8)).save(path, format="PNG", compress_level=3)


class TrajectoryWriter:
    """Records one trajectory into ``run_dir/<trajectory id>/``."""

    def __init__(self, run_dir: str | Path, trajectory: Trajectory):
        self.trajectory = trajectory
        self.dir = Path(run_dir) / trajectory.id
        (self.dir / "frames").mkdir(parents=True, exist_ok=True)
        self._steps = open(self.dir / "steps.jsonl", "w")
        self._frames = 0
        #: The last frames stored, by array identity (arrays kept alive so the ids stay theirs).
        self._stored: dict[int, tuple[np.ndarray, str]] = {}
        self.write_meta()

    def frame(self, pixels: np.ndarray) -> str:
        """Store a screenshot once and return its path relative to the trajectory directory."""
        known = self._stored.get(id(pixels))
        if known is not None and known[0] is pixels:
            return known[1]
        rel = f"frames/{self._frames:04d}.png"
        save_png(self.dir / rel, pixels)
        self._frames += 1
        if len(self._stored) >= 8:
            self._stored.pop(next(iter(self._stored)))
        self._stored[id(pixels)] = (pixels, rel)
        return rel

    def step(self, record: StepRecord) -> None:
        """Append ``record``; its prompt images (arrays) are written as frames, their paths in the file."""
        self.trajectory.steps.append(record)
        on_disk = record
        if record.prompt_images is not None:
            paths = [img if isinstance(img, str) else self.frame(_pixels(img, record.index))
                     for img in record.prompt_images]
            on_disk = replace(record, prompt_images=paths)
        self._steps.write(json.dumps(on_disk.to_json()) + "\n")
        self._steps.flush()

    def write_meta(self) -> None:
        _atomic_write(self.dir / "meta.json", json.dumps(self.trajectory.meta_json(), indent=1))

    def close(self) -> Path:
        if not self._steps.closed:
            self._steps.close()
        self.write_meta()
        return self.dir


def _pixels(image: Any, index: int) -> np.ndarray:
    if not isinstance(image, np.ndarray):
        raise ValueError(f"step {index}: a prompt image is a {type(image).__name__}, not pixels or a frame path "
                         "(fetch object-store references before writing)")
    return image


def write_trajectory(run_dir: str | Path, trajectory: Trajectory) -> Path:
    """Write a finished trajectory (steps, their prompt images as frames, meta); returns its directory."""
    steps, trajectory.steps = trajectory.steps, []
    writer = TrajectoryWriter(run_dir, trajectory)
    try:
        for record in steps:
            writer.step(record)
    finally:
        trajectory.steps = steps
    return writer.close()


def load_trajectory(path: str | Path) -> Trajectory:
    path = Path(path)
    meta_path = path / "meta.json"
    if not meta_path.is_file():
        raise FileNotFoundError(f"{path} is not a trajectory directory (no meta.json)")
    meta = json.loads(meta_path.read_text())
    steps: list[StepRecord] = []
    steps_path = path / "steps.jsonl"
    if steps_path.exists():
        for number, line in enumerate(steps_path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                steps.append(StepRecord.from_json(json.loads(line)))
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(f"{steps_path}:{number}: bad step record: {err}") from None
    return Trajectory.from_meta(meta, steps)


def iter_run(run_dir: str | Path) -> Iterator[tuple[Path, Trajectory]]:
    """Every trajectory directory under ``run_dir`` (recursively), sorted by path."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"no run directory {run_dir}")
    for meta in sorted(run_dir.rglob("meta.json")):
        yield meta.parent, load_trajectory(meta.parent)


def load_run(run_dir: str | Path) -> list[Trajectory]:
    return [t for _, t in iter_run(run_dir)]


def to_sft_records(run_dir: str | Path, only_success: bool = True,
                   skip_seeds: Collection[int] = ()) -> list[dict[str, Any]]:
    """One record per step: image path, instruction, the action text, for supervised fine-tuning (none from
    episodes on ``skip_seeds``, e.g. a training run's held-out ones)."""
    records = []
    for path, traj in iter_run(run_dir):
        if (only_success and not traj.success) or traj.seed in skip_seeds:
            continue
        for step in traj.steps:
            if step.action is None or step.error:
                continue
            records.append({"trajectory_id": traj.id, "task_id": traj.task_id, "seed": traj.seed,
                            "domain": traj.domain, "instruction": traj.instruction, "step": step.index,
                            "image": str(path / step.screenshot), "screen_size": list(step.screen_size),
                            "action": json.dumps(step.action), "response": step.text})
    return records


def export_dataset(run_dir: str | Path, only_success: bool = True, skip_seeds: Collection[int] = ()):
    """A Hugging Face ``datasets.Dataset`` of the run's steps (images decoded by the Image feature)."""
    import datasets

    records = to_sft_records(run_dir, only_success, skip_seeds)
    if not records:
        raise ValueError(f"no {'successful ' if only_success else ''}steps to export under {run_dir}")
    features = datasets.Features({
        "trajectory_id": datasets.Value("string"), "task_id": datasets.Value("string"),
        "seed": datasets.Value("int64"), "domain": datasets.Value("string"), "instruction": datasets.Value("string"),
        "step": datasets.Value("int32"),
        "image": datasets.Image(), "screen_size": datasets.Sequence(datasets.Value("int32")),
        "action": datasets.Value("string"), "response": datasets.Value("string"),
    })
    return datasets.Dataset.from_list(records, features=features)
