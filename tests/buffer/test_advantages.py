import math

import pytest

from mintgym.buffer.advantages import compute_advantages


def test_grpo_normalizes_by_group_mean_and_std():
    adv = compute_advantages([1.0, 0.0, 0.0, 1.0], "grpo", eps=0.0)
    assert adv == pytest.approx([1.0, -1.0, -1.0, 1.0])
    adv = compute_advantages([3.0, 1.0], "grpo", scale=False)
    assert adv == pytest.approx([1.0, -1.0])
    std = math.sqrt(((2 - 1) ** 2 + (0 - 1) ** 2 + (1 - 1) ** 2) / 3)
    assert compute_advantages([2.0, 0.0, 1.0], "grpo", eps=0.0) == pytest.approx([1 / std, -1 / std, 0.0])


def test_rloo_is_leave_one_out():
    assert compute_advantages([1.0, 0.0, 0.0], "rloo") == pytest.approx([1.0, -0.5, -0.5])
    assert compute_advantages([4.0, 2.0], "rloo") == pytest.approx([2.0, -2.0])


def test_equal_rewards_give_zero_advantages():
    assert compute_advantages([0.5] * 4, "grpo") == [0.0] * 4
    assert compute_advantages([0.5] * 4, "rloo") == [0.0] * 4


@pytest.mark.parametrize("kind,scale", [("grpo", True), ("grpo", False), ("rloo", True)])
def test_tied_rewards_that_floats_cannot_sum_exactly_give_exact_zeros(kind, scale):
    """16 x 0.3 sums to 4.799999999999999: the mean missed 0.3 and GRPO returned 5.6e-11 for every sample,
    a gradient Adam scales up to a full step (and the learner's no-signal skip never saw a zero)."""
    for rewards in ([0.3] * 16, [0.1] * 7, [0.7] * 5):
        assert compute_advantages(rewards, kind, scale=scale) == [0.0] * len(rewards)


@pytest.mark.parametrize("kind,scale", [("grpo", True), ("grpo", False), ("rloo", True)])
def test_rewards_one_float_step_apart_tie(kind, scale):
    """0.1 + 0.2 and 0.3 differ by one float step: GRPO gave -5.6e-11 to three samples, the learner counted it
    as a signal and Adam took a step of two thirds a real one's size on it."""
    assert compute_advantages([0.1 + 0.2, 0.3, 0.3, 0.3], kind, scale=scale) == [0.0] * 4
    assert compute_advantages([0.3, 0.3 + 1e-6], kind, scale=scale)[0] < 0  # a real difference still counts


def test_errors():
    with pytest.raises(ValueError, match="at least 2"):
        compute_advantages([1.0], "rloo")
    with pytest.raises(ValueError, match="grpo"):
        compute_advantages([1.0, 0.0], "ppo")
