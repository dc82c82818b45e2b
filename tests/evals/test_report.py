"""Statistics (Wilson and bootstrap intervals, grouping) and the HTML report built from results alone."""

from __future__ import annotations

import math

import pytest

from mintgym.evals.harness import EvalConfig, build_results
from mintgym.evals.report import render_report, success_bars_svg
from mintgym.evals.stats import EpisodeOutcome, bootstrap_mean_interval, group_by, reason_of, summarize, wilson_interval
from mintgym.evals.suites import Benchmark


def outcome(task: str, status: str, reward: float, *, family: str = "f", error: str | None = None,
            seed: int = 0) -> EpisodeOutcome:
    return EpisodeOutcome(key=f"{task}-{seed}", task_id=task, domain="null", family=family, seed=seed, status=status,
                          reward=reward, steps=2, invalid_steps=1, logprob_steps=2, error=error, wall_seconds=1.5,
                          path=f"trajectories/{task}-{seed}")


def test_wilson_interval_matches_known_values():
    lo, hi = wilson_interval(5, 10)
    assert math.isclose(lo, 0.2366, abs_tol=1e-4) and math.isclose(hi, 0.7634, abs_tol=1e-4)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and math.isclose(hi, 0.2775, abs_tol=1e-4)
    lo, hi = wilson_interval(10, 10)
    assert hi == 1.0 and math.isclose(lo, 0.7225, abs_tol=1e-4)
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_bootstrap_interval_is_deterministic_and_brackets_the_mean():
    values = [0.0, 0.2, 0.5, 0.9, 1.0, 1.0, 0.3]
    first = bootstrap_mean_interval(values)
    assert first == bootstrap_mean_interval(values)
    mean = sum(values) / len(values)
    assert first[0] < mean < first[1] and 0.0 <= first[0] and first[1] <= 1.0
    assert bootstrap_mean_interval([0.5]) is None


def test_summary_counts_errors_by_reason():
    eps = [outcome("a", "success", 1.0), outcome("a", "failure", 0.2, seed=1),
           outcome("b", "error", 0.0, error="ServerError: HTTP 500\ntraceback..."),
           outcome("b", "timeout", 0.0, error="episode exceeded its budget of 5s", seed=1),
           outcome("b", "error", 0.0, error="ServerError: HTTP 500\nother", seed=2)]
    s = summarize(eps)
    assert s["episodes"] == 5 and s["successes"] == 1 and s["success_rate"] == 0.2
    assert math.isclose(s["mean_reward"], 0.24) and s["mean_steps"] == 2 and s["invalid_steps"] == 5
    assert s["errors"] == {"count": 3, "reasons": {"ServerError: HTTP 500": 2, "episode exceeded its budget of 5s": 1}}
    assert s["statuses"] == {"error": 2, "success": 1, "failure": 1, "timeout": 1}
    groups = group_by(eps, "task_id")
    assert list(groups) == ["a", "b"] and groups["a"]["success_rate"] == 0.5
    assert reason_of(None) == "(no reason given)" and len(reason_of("x" * 500)) == 160


def test_results_document_and_report_escape_everything():
    evil = "<script>alert(1)</script>"
    eps = [outcome("t/one", "success", 1.0, family=evil), outcome("t/two", "error", 0.0, error=evil)]
    bench = Benchmark(name="b", task_ids=("t/one", "t/two", "t/three"), skipped=(("t/three", evil),))
    results = build_results(bench, eps, EvalConfig(out=None, describe={"agent": "x"}), started=0.0, ended=10.0)
    assert results["overall"]["wall_seconds"] == 10.0
    assert set(results["families"]) == {evil, "f"} and results["tasks"]["t/two"]["errors"]["count"] == 1
    page = render_report(results)
    assert evil not in page and "&lt;script&gt;" in page
    assert 'href="trajectories/t/one-0/index.html"' in page
    assert page.count("<rect") == 2  # one bar per family


def test_bar_plot_draws_interval_whiskers():
    svg = success_bars_svg({"fam": summarize([outcome("a", "success", 1.0), outcome("a", "failure", 0.0, seed=1)])})
    assert svg.startswith("<svg") and "50.0% (n=2)" in svg and svg.count("<line") >= 5 + 3
    assert success_bars_svg({}) == ""
