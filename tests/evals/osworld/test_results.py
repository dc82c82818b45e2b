"""OSWorld-shaped results: the per-domain table (hand-computed) and OSWorld-style result folders from a
real evaluation through the CLI."""

import json
import shutil
import subprocess
import sys

import pytest

from mintgym.environments.desktop.osworld.loader import examples_dir
from mintgym.evals.osworld.results import success_table

GIMP = "osworld/gimp/7b7617bd-57cc-468e-9c91-40c4ec2bcb3d"


def ep(task_id, reward, status="success", seed=0):
    return {"task_id": task_id, "reward": reward, "status": status, "seed": seed, "path": "x"}


def test_the_table_is_the_mean_score_per_osworld_domain_in_osworlds_order():
    episodes = [ep("osworld/vlc/a", 1.0), ep("osworld/vlc/b", 0.0, "failure"), ep("osworld/chrome/c", 0.5),
                ep("osworld/os/d", 0.0, "error"), ep("pytool/x", 1.0)]
    skipped = [{"task_id": "osworld/vlc/e", "reason": "r"}, {"task_id": "osworld/thunderbird/f", "reason": "r"}]
    table = success_table(episodes, skipped)
    assert list(table) == ["chrome", "os", "thunderbird", "vlc", "overall"]
    assert table["vlc"] == {"episodes": 2, "tasks": 2, "success_rate": 0.5, "errors": 0, "skipped_here": 1}
    assert table["thunderbird"]["success_rate"] is None and table["thunderbird"]["skipped_here"] == 1
    assert table["overall"]["success_rate"] == pytest.approx(1.5 / 4) and table["overall"]["errors"] == 1
    assert success_table([ep("pytool/x", 1.0)], []) is None


@pytest.mark.desktop
@pytest.mark.skipif(examples_dir() is None or shutil.which("gimp") is None, reason="OSWorld data and GIMP are needed")
def test_an_eval_writes_osworlds_table_and_result_folders(tmp_path):
    skipped = "osworld/chrome/7b6c7e24-c58a-49fc-a5bb-d57b80e5b4c3"
    done = subprocess.run([sys.executable, "-m", "mintgym.cli", "eval", "--tasks", f"{GIMP},{skipped}",
                           "--agent", "scripted", "--out", str(tmp_path)], capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["osworld"]["gimp"]["success_rate"] == 1.0
    assert results["osworld"]["chrome"]["skipped_here"] == 1
    assert "OSWorld, per domain" in (tmp_path / "report.html").read_text()
    folder = tmp_path / "osworld" / "gimp" / GIMP.rsplit("/", 1)[1]
    assert (folder / "result.txt").read_text().strip() == "1.0"
    lines = [json.loads(line) for line in (folder / "traj.jsonl").read_text().splitlines()]
    assert lines and all((folder / line["screenshot_file"]).exists() for line in lines)
    assert lines[0]["step_num"] == 1 and "response" in lines[0] and lines[-1]["done"]
    if shutil.which("ffmpeg"):
        assert (folder / "recording.mp4").stat().st_size > 0
