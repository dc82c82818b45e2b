"""benchmarks/async_vs_sync.py's ceiling per lag."""

import pytest


def test_the_ceiling_at_a_lag_is_lag_plus_one_sync_periods_over_the_wait_after_the_answer(load_benchmark):
    bench = load_benchmark("async_vs_sync")
    # sync takes 10.3 s a step; a batch waits 8.1 s from its slowest sample's answer to that episode's end:
    # at lag 1 two steps must span 8.1 s, so a step takes at least 4.05 s: 10.3 / 4.05
    assert bench.lag_ceiling(1, 10.3, 8.1) == pytest.approx(2 * 10.3 / 8.1)
    assert bench.lag_ceiling(1, 10.3, 8.1) < 2.55
    assert bench.lag_ceiling(4, 10.0, 8.0) == pytest.approx(6.25)
