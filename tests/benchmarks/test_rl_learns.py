"""benchmarks/rl_learns.py: the table and the exit status from finished run folders (what a training run leaves:
metrics.jsonl with the held-out curve, final_eval.json), and one real run of the shipped config (slow)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "rl_learns.py"


def finished_run(out: Path, curve: list[tuple[int, float]], final: float, seconds: float = 600.0) -> None:
    """A run folder as ``mintgym train`` leaves it, with only the files the benchmark reads."""
    out.mkdir(parents=True)
    rows = [{"step": step, "eval/mean": score, "reward/mean": 0.5} for step, score in curve]
    (out / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (out / "final_eval.json").write_text(json.dumps({"domains": {"pytool": {"mean_reward": final, "episodes": 128}}}))
    (out / "wall_seconds").write_text(str(seconds))


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--multi-turn", "", *args],
                          capture_output=True, text=True, timeout=60)


def test_a_gain_over_the_bar_passes_and_the_table_shows_the_curve(tmp_path):
    finished_run(tmp_path / "seed0", [(0, 0.40), (20, 0.70), (40, 0.90)], final=0.88)
    finished_run(tmp_path / "seed0-blind", [(0, 0.25), (40, 0.27)], final=0.24)
    finished_run(tmp_path / "seed0-rl-free", [(0, 0.41), (40, 0.41)], final=0.43)
    done = bench(tmp_path, "--seeds", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.strip().startswith("0 "))
    assert row.split()[:7] == ["0", "0.400", "0.880", "+0.480", "10m00s", "0.240", "0.430"]
    assert "0:0.40 20:0.70 40:0.90" in row and "RL earns its keep" in done.stdout


@pytest.mark.parametrize(("main", "blind", "free", "why"), [
    ((0.40, 0.70), 0.24, 0.42, "gain +0.300"),          # final 0.70: under 0.85 and under +0.35
    ((0.60, 0.90), 0.24, 0.62, "gain +0.300"),          # final over 0.85 but the warm start already did most
    ((0.40, 0.88), 0.60, 0.42, "image-blanked run scored 0.600"),
    ((0.40, 0.88), 0.24, 0.80, "RL-free run rose +0.390"),
])
def test_each_bar_missed_exits_1_naming_it(tmp_path, main, blind, free, why):
    finished_run(tmp_path / "seed0", [(0, main[0]), (40, main[1])], final=main[1])
    finished_run(tmp_path / "seed0-blind", [(0, 0.25)], final=blind)
    finished_run(tmp_path / "seed0-rl-free", [(0, 0.41)], final=free)
    done = bench(tmp_path, "--seeds", "0")
    assert done.returncode == 1 and why in done.stdout, done.stdout + done.stderr


def test_a_run_over_the_time_limit_fails(tmp_path):
    finished_run(tmp_path / "seed0", [(0, 0.40), (40, 0.90)], final=0.90, seconds=16 * 60)
    done = bench(tmp_path, "--seeds", "0", "--no-ablations")
    assert done.returncode == 1 and "16m00s, over 15 minutes" in done.stdout, done.stdout


def test_a_missing_multi_turn_config_fails_the_benchmark_naming_it(tmp_path):
    finished_run(tmp_path / "seed0", [(0, 0.40), (40, 0.90)], final=0.90)
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--seeds", "0", "--no-ablations",
                           "--multi-turn", str(tmp_path / "absent.yaml")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and f"multi-turn: no config at {tmp_path / 'absent.yaml'}" in done.stdout


def test_a_run_without_the_held_out_curve_is_refused_in_one_line(tmp_path):
    finished_run(tmp_path / "seed0", [], final=0.90)
    done = bench(tmp_path, "--seeds", "0", "--no-ablations")
    assert done.returncode == 1 and "no held-out point at step 0" in done.stderr


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_shipped_config_earns_its_keep_on_one_seed(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--seeds", "0", "--no-ablations",
                           "--multi-turn", ""], capture_output=True, text=True, timeout=1800, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_ablation_starts_from_its_seeds_demonstrations_hard_linked_not_from_its_dataset(tmp_path, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("rl_learns", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "rl_learns", module)  # its dataclass looks its module up
    spec.loader.exec_module(module)
    source = tmp_path / "seed0"
    frame = source / "warm_start" / "demos-mistaken-oracle-1234" / "ep0" / "frames" / "0000.png"
    frame.parent.mkdir(parents=True)
    frame.write_bytes(b"png")
    (source / "warm_start" / "dataset").mkdir()
    (source / "config.json").write_text("{}")
    module.share_demonstrations(source, tmp_path / "seed0-blind")
    linked = tmp_path / "seed0-blind" / frame.relative_to(source)
    assert linked.stat().st_ino == frame.stat().st_ino  # the same file, not a copy
    assert (tmp_path / "seed0-blind" / "config.json").is_file()
    assert not (tmp_path / "seed0-blind" / "warm_start" / "dataset").exists()  # the agent's own export differs
    (source / "warm_start" / "demos-scripted-5678").mkdir()
    module.share_demonstrations(source, tmp_path / "seed0-blind")  # an ablation folder already there is left as is
    assert sorted(p.name for p in (tmp_path / "seed0-blind" / "warm_start").iterdir()) == [
        "demos-mistaken-oracle-1234"]
