"""benchmarks/async_vs_sync.py's ceiling per lag."""

import pytest


def test_the_ceiling_at_a_lag_is_lag_plus_one_sync_periods_over_the_wait_after_the_answer(load_benchmark):
    bench = load_benchmark("async_vs_sync")
    # sync takes 10.3 s a step; a batch waits 8.1 s from its slowest sample's answer to that episode's end:
    # at lag 1 two steps must span 8.1 s, so a step takes at least 4.05 s: 10.3 / 4.05
    assert bench.lag_ceiling(1, 10.3, 8.1) == pytest.approx(2 * 10.3 / 8.1)
    assert bench.lag_ceiling(1, 10.3, 8.1) < 2.55
    assert bench.lag_ceiling(4, 10.0, 8.0) == pytest.approx(6.25)


def test_timed_steps_begin_once_the_stock_played_during_the_start_is_gone(load_benchmark):
    bench = load_benchmark("async_vs_sync")
    # at lag L the workers may fill L + 1 batches with version-0 groups while the first step waits
    assert [bench.warmup_steps("async", lag) for lag in (1, 2, 4, 16)] == [2, 3, 5, 17]
    assert bench.warmup_steps("sync", 0) == 1
    history = [{"time/step": t, "samples": 64, "time/wait_batch": t - 0.5, "time/train": 0.5, "lag/mean": 1.0,
                "time/after_answer_max": 8.0} for t in (50.0, 2.0, 6.0, 4.0)]
    steady = bench.window(history[2:])
    assert steady["samples_per_s"] == pytest.approx(128 / 10.0) and steady["steps_per_s"] == pytest.approx(0.2)
    assert bench.window(history[1:])["steps_per_s"] > steady["steps_per_s"]  # the short stock-fed step flatters
