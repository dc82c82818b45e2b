"""AndroidWorld's task metadata (names, templates, difficulty, tags), read at run time, never copied.

Looked up in ``$MINTGYM_DATA/androidworld/`` or ``<repo>/../shared/data/androidworld/``; when neither
exists the pack still lists, with MintGym's own descriptions.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class AwMeta:
    name: str
    template: str
    difficulty: str
    optimal_steps: int | None
    tags: tuple[str, ...] = field(default=())
    app_family: str = ""


def data_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("MINTGYM_DATA"):
        dirs.append(Path(os.environ["MINTGYM_DATA"]) / "androidworld")
    repo_root = Path(__file__).resolve().parents[2]
    dirs.append(repo_root.parent / "shared" / "data" / "androidworld")
    return dirs


@functools.lru_cache(maxsize=1)
def androidworld() -> dict[str, AwMeta]:
    """task_name -> metadata, or {} when the files are not on this machine."""
    for d in data_dirs():
        meta_file = d / "task_metadata.json"
        if not meta_file.is_file():
            continue
        families: dict[str, str] = {}
        fam_file = d / "task_app_family_derived.json"
        if fam_file.is_file():
            families = {row["task_name"]: row.get("app_family", "") for row in json.loads(fam_file.read_text())}
        table = {}
        for row in json.loads(meta_file.read_text()):
            steps = str(row.get("optimal_steps", "")).strip()
            table[row["task_name"]] = AwMeta(
                name=row["task_name"],
                template=row.get("task_template", ""),
                difficulty=row.get("difficulty", ""),
                optimal_steps=int(steps) if steps.isdigit() else None,
                tags=tuple(t for t in row.get("tags", ()) if t),
                app_family=families.get(row["task_name"], ""),
            )
        return table
    return {}
