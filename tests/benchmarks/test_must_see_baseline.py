"""benchmarks/must_see_baseline.py: which options an instruction names, the blind policies scored from a reward
table, and one run through ``mintgym.make`` on the shipped must-see config."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "must_see_baseline.py"
LABELS = ["red", "green", "blue", "yellow"]


def test_named_options_in_the_order_named_and_as_whole_words(load_benchmark):
    baseline = load_benchmark("must_see_baseline")
    text = "Which colour is the largest? One of: blue, Red, greenish."
    assert baseline.named_options(text, LABELS) == [2, 0]


def test_a_blind_policy_that_reads_the_named_options_beats_any_fixed_answer(load_benchmark):
    """Two named colours a seed, the answer always the second one named: every fixed answer scores at most
    1/2, the policy 'named option #2' scores 1. The baseline must report it (the bug: only fixed answers)."""
    baseline = load_benchmark("must_see_baseline")
    instructions = ["one of: red, green", "one of: blue, yellow", "one of: green, blue", "one of: yellow, red"]
    answers = [1, 3, 2, 0]
    rewards = [[1.0 if k == a else 0.0 for k in range(4)] for a in answers]
    scores = baseline.blind_policies(rewards, instructions, LABELS, rewards, instructions)
    assert max(v for k, v in scores.items() if k.startswith("always")) == 0.25
    assert scores["named option #2"] == 1.0
    assert scores["named option #1"] == 0.0
    assert scores["uniform among the named"] == 0.5
    assert max(scores.values()) == 1.0


def test_the_preference_policy_is_fitted_on_other_seeds(load_benchmark):
    """Fitted where yellow is always right: on held-out seeds it picks yellow whenever it is named."""
    baseline = load_benchmark("must_see_baseline")
    fit = ["one of: red, yellow", "one of: yellow, blue"]
    fit_rewards = [[0, 0, 0, 1.0], [0, 0, 0, 1.0]]
    held = ["one of: yellow, green", "one of: red, blue"]
    held_rewards = [[0, 0, 0, 1.0], [0, 0, 1.0, 0]]  # ties rank by option order: red before blue
    scores = baseline.blind_policies(held_rewards, held, LABELS, fit_rewards, fit)
    assert scores["named option preferred on training seeds"] == 0.5


@pytest.mark.slow
def test_front_door_run_on_the_shipped_config():
    """The script through ``mintgym.make``: 8 held-out seeds of examples/must_see.yaml, 8 options each."""
    done = subprocess.run([sys.executable, str(SCRIPT), "--seeds", "8", "--fit-seeds", "8"], cwd=REPO,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    best = re.search(r"best blind policy: ([0-9.]+) \((.+)\); seeds some option solves: (\d+)/8", done.stdout)
    assert best, done.stdout
    assert int(best.group(3)) == 8  # every seed is solvable by some option: the table is real rewards
    assert "uniform among the named" in done.stdout
