"""The authors' parsing rules, one literal behaviour each (the differential cases check them end to end)."""

from __future__ import annotations

import doctest

import pytest

from mintgym.evals.online_mind2web import rules
from mintgym.evals.online_mind2web.rules import (
    ScreenshotRating,
    key_points_of,
    numbered,
    predicted_label,
    rate_screenshot,
    select_screenshots,
)


def test_the_module_examples_hold():
    assert doctest.testmod(rules).failed == 0


@pytest.mark.parametrize(("response", "label"), [
    ("Status: failure\nStatus: success", 0), ("Status : success", 0), ("STATUS: Unsuccessful", 1),
    ("**Status**: success", 0), ("**Status:** success", 1), (None, 0), ("", 0),
])
def test_the_first_status_decides(response, label):
    assert predicted_label(response) == label


def test_scores_are_case_sensitive_and_read_between_the_first_two_score_words():
    assert rate_screenshot("score: 4") == ScreenshotRating(score=0, thought=None)
    assert rate_screenshot("**Reasoning**: a\n\nb\n**Score**: 10") == ScreenshotRating(score=1, thought="a")
    assert rate_screenshot("Score: none\nScore: 5").score == 0
    assert rate_screenshot(None) == ScreenshotRating(score=0, thought=None)


def test_selection_keeps_order_cuts_each_list_and_carries_a_stale_thought():
    r = [ScreenshotRating(score=4, thought="a"), ScreenshotRating(score=0, thought=None),
         ScreenshotRating(score=5, thought=""), ScreenshotRating(score=3, thought="d")]
    assert select_screenshots(r, 3, 50).model_dump() == {"kept": [0, 2, 3], "thoughts": ["a", "d"]}
    assert select_screenshots(r, 3, 2).model_dump() == {"kept": [0, 2], "thoughts": ["a", "d"]}
    assert select_screenshots(r, 0, 50).thoughts == ["a", "a", "d"]  # the unrated one carries the previous thought
    with pytest.raises(ValueError, match="screenshot 0 has no Score and no earlier screenshot has a thought"):
        select_screenshots(r[1:], -1, 50)


def test_key_points_and_numbering():
    assert key_points_of("**Key Points**:\n1. a\n\n2. b") == "\n1. a\n2. b"
    assert key_points_of("Key Points: a\nKey Points:  b") == "b"
    assert numbered(["x", None, {"k": 1}]) == "1. x\n2. None\n3. {'k': 1}" and numbered("ab") == "1. a\n2. b"
