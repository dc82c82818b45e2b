"""OSWorld-shaped results: OSWorld's per-domain success table, and a result folder per task like the
ones OSWorld's runner writes (``<domain>/<example id>/`` with a screenshot per step, ``traj.jsonl``
holding the full model response, ``result.txt`` with the score, and ``recording.mp4`` where ffmpeg
exists), so a user can put MintGym's numbers and folders beside OSWorld's."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

PREFIX = "osworld/"
#: OSWorld's domains in the order its result tables list them.
DOMAINS = ("chrome", "gimp", "libreoffice_calc", "libreoffice_impress", "libreoffice_writer", "multi_apps", "os",
           "thunderbird", "vlc", "vs_code")


def _domain(task_id: str) -> str:
    return task_id.split("/")[1]


def success_table(episodes: list[dict[str, Any]], skipped: list[dict[str, str]]) -> dict[str, Any] | None:
    """Per OSWorld domain and overall: episodes run, success rate (OSWorld's: the mean score), and how many
    of the domain's tasks were skipped here. None when the run held no OSWorld task."""
    ours = [e for e in episodes if e["task_id"].startswith(PREFIX)]
    skipped_here = [s for s in skipped if s["task_id"].startswith(PREFIX)]
    if not ours and not skipped_here:
        return None
    rows: dict[str, dict[str, Any]] = {}
    for domain in sorted({_domain(e["task_id"]) for e in ours} | {_domain(s["task_id"]) for s in skipped_here},
                         key=lambda d: (DOMAINS.index(d) if d in DOMAINS else len(DOMAINS), d)):
        runs = [e for e in ours if _domain(e["task_id"]) == domain]
        rows[domain] = _row(runs, sum(1 for s in skipped_here if _domain(s["task_id"]) == domain))
    rows["overall"] = _row(ours, len(skipped_here))
    return rows


def _row(runs: list[dict[str, Any]], skipped: int) -> dict[str, Any]:
    scores = [float(e["reward"]) for e in runs]
    return {"episodes": len(runs), "tasks": len({e["task_id"] for e in runs}),
            "success_rate": sum(scores) / len(scores) if scores else None,
            "errors": sum(1 for e in runs if e["status"] == "error"), "skipped_here": skipped}


def render_table(table: dict[str, Any]) -> str:
    """The table as HTML rows for the eval report."""
    from html import escape

    rows = []
    for domain, row in table.items():
        rate = "-" if row["success_rate"] is None else f"{100 * row['success_rate']:.1f}%"
        rows.append(f"<tr><td>{escape(domain)}</td><td class=num>{row['tasks']}</td><td class=num>{row['episodes']}"
                    f"</td><td class=num>{rate}</td><td class=num>{row['errors']}</td>"
                    f"<td class=num>{row['skipped_here']}</td></tr>")
    return ("<h2>OSWorld, per domain</h2><table><tr><th>domain</th><th>tasks</th><th>episodes</th>"
            "<th>success rate (mean score)</th><th>errors</th><th>skipped here</th></tr>" + "".join(rows) + "</table>")


def write_folders(out: Path, episodes: list[dict[str, Any]]) -> list[Path]:
    """``out/osworld/<domain>/<example id>[-seed<n>]/`` for every OSWorld episode, from its trajectory."""
    written = []
    ours = [e for e in episodes if e["task_id"].startswith(PREFIX)]
    seeds_per_task: dict[str, int] = {}
    for e in ours:
        seeds_per_task[e["task_id"]] = seeds_per_task.get(e["task_id"], 0) + 1
    for e in ours:
        source = out / e["path"]
        example = e["task_id"].split("/")[2]
        name = example if seeds_per_task[e["task_id"]] == 1 else f"{example}-seed{e['seed']}"
        folder = out / "osworld" / _domain(e["task_id"]) / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        _write_episode(source, folder, e)
        written.append(folder)
    return written


def _write_episode(source: Path, folder: Path, episode: dict[str, Any]) -> None:
    steps_file = source / "steps.jsonl"
    steps = [json.loads(line) for line in steps_file.read_text().splitlines()
             if line.strip()] if steps_file.exists() else []
    meta = json.loads((source / "meta.json").read_text()) if (source / "meta.json").exists() else {}
    clock = float(meta.get("started") or 0.0)
    frames = []
    with open(folder / "traj.jsonl", "w") as traj:
        for step in steps:
            clock += float((step.get("timings") or {}).get("total") or 0.0)
            stamp = _stamp(clock)
            shot = None
            if step.get("screenshot") and (source / step["screenshot"]).exists():
                shot = f"step_{step['index'] + 1}_{stamp}.png"
                shutil.copyfile(source / step["screenshot"], folder / shot)
                frames.append(folder / shot)
            traj.write(json.dumps({
                "step_num": step["index"] + 1, "action_timestamp": stamp, "action": step.get("action"),
                "response": step.get("text"), "reward": step.get("reward", 0.0),
                "done": bool(step.get("terminated") or step.get("truncated")),
                "info": {"error": step.get("error")} if step.get("error") else {}, "screenshot_file": shot,
            }) + "\n")
    (folder / "result.txt").write_text(f"{float(episode['reward'])}\n")
    if frames and shutil.which("ffmpeg"):
        _record(frames, folder / "recording.mp4")


def _stamp(seconds: float) -> str:
    import time

    return time.strftime("%Y%m%d@%H%M%S", time.gmtime(seconds))


def _record(frames: list[Path], target: Path) -> None:
    """A video of the screenshots at one frame a second (OSWorld records the screen; steps are what we keep)."""
    listing = target.with_suffix(".txt")
    listing.write_text("".join(f"file '{f.name}'\nduration 1\n" for f in frames) + f"file '{frames[-1].name}'\n")
    try:
        subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-f", "concat", "-safe", "0", "-i", listing.name,
                        "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-pix_fmt", "yuv420p", target.name],
                       cwd=target.parent, check=True, capture_output=True, timeout=300)
    except (subprocess.SubprocessError, OSError):
        target.unlink(missing_ok=True)
    finally:
        listing.unlink(missing_ok=True)
