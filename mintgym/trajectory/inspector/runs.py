"""Finding the episodes of a folder: an eval run, a training run's sampled episodes, or one trajectory.

A trajectory folder is one holding ``meta.json`` and ``steps.jsonl`` (see mintgym.trajectory.types); a run
is any folder with trajectory folders somewhere below it (``OUT/trajectories/*`` of ``mintgym eval``,
``OUT/episodes/step_<k>/*`` of training, ``OUT/*`` of ``mintgym rollout``). Other ``meta.json`` files (a
checkpoint's, say) are not trajectories and are passed over. A trajectory that cannot be read is reported
with why, and the rest still load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mintgym.errors import first_line
from mintgym.trajectory.store import load_trajectory
from mintgym.trajectory.types import Trajectory

#: The order of the index: what needs looking at first.
STATUS_ORDER = {"error": 0, "timeout": 1, "failure": 2, "running": 3, "success": 4}


class NotARun(ValueError):
    """The folder given is missing, empty or holds no trajectories (one line, saying what was expected)."""


@dataclass
class Episode:
    """One trajectory of a run and where it lives."""

    path: Path
    #: Its folder relative to the run's root, with ``/`` ("." for a run that is one trajectory).
    rel: str
    traj: Trajectory

    @property
    def group(self) -> str:
        """The folder it sits in below the run root ("step_40" for training samples; "" at the top)."""
        parent = Path(self.rel).parent.as_posix()
        return "" if parent == "." else parent

    @property
    def key(self) -> tuple[str, int | None]:
        """What pairs it with the same episode of another run: (task id, seed)."""
        return self.traj.task_id, self.traj.seed


@dataclass
class Run:
    root: Path
    #: "eval run", "training episodes", "rollout run" or "trajectory".
    kind: str
    episodes: list[Episode]
    #: Trajectory folders that could not be read: "path: why".
    problems: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.root.resolve().name

    @property
    def single(self) -> bool:
        return self.kind == "trajectory"


def _is_trajectory(folder: Path) -> bool:
    return (folder / "meta.json").is_file() and (folder / "steps.jsonl").is_file()


def _kind(root: Path, episodes: list[Episode]) -> str:
    if (root / "results.json").is_file():
        return "eval run"
    if root.name == "episodes" or (root / "episodes").is_dir() or any(
            e.group.split("/")[0].startswith("step_") for e in episodes):
        return "training episodes"
    return "rollout run"


def sort_key(episode: Episode) -> tuple:
    t = episode.traj
    return STATUS_ORDER.get(t.status, 5), t.task_id, t.seed if t.seed is not None else -1, episode.rel


def open_run(path: str | Path) -> Run:
    """The run (or single trajectory) at ``path``, episodes ordered failures first; NotARun when there is none."""
    root = Path(path)
    if not root.exists():
        raise NotARun(f"no such folder: {root}")
    if not root.is_dir():
        raise NotARun(f"{root} is a file; give the folder of a run, a training run's episodes or one trajectory")
    if (root / "meta.json").is_file():
        if not (root / "steps.jsonl").is_file():
            raise NotARun(f"{root} has meta.json but no steps.jsonl, so it is not a trajectory folder")
        return Run(root, "trajectory", [Episode(root, ".", load_trajectory(root))])
    if not any(root.iterdir()):
        raise NotARun(f"{root} is empty: no trajectories to show")
    episodes, problems = [], []
    for meta in sorted(root.rglob("meta.json")):
        folder = meta.parent
        if not _is_trajectory(folder):
            continue
        try:
            episodes.append(Episode(folder, folder.relative_to(root).as_posix(), load_trajectory(folder)))
        except (ValueError, KeyError, TypeError) as err:
            problems.append(f"{folder.relative_to(root).as_posix()}: {first_line(err)}")
    if not episodes:
        why = f"; {len(problems)} could not be read, first: {problems[0]}" if problems else ""
        raise NotARun(f"no trajectories under {root} (no folder with meta.json and steps.jsonl){why}; give an eval "
                      "or rollout run folder, a training run's episodes/ folder or one trajectory folder")
    episodes.sort(key=sort_key)
    return Run(root, _kind(root, episodes), episodes, problems)
