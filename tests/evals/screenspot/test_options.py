"""ScreenSpot's suite options: the official script's switches for Pro, none for v1/v2."""

from __future__ import annotations

import pytest

from mintgym.evals.screenspot.options import GT_TYPES, INSTRUCTION_STYLES, ProOptions, SeeClickOptions
from mintgym.evals.suite_options import parse_suite_options


def test_pro_options_take_one_value_a_list_or_all():
    default = parse_suite_options(ProOptions, {}, "screenspot-pro")
    assert (default.inst_style, default.gt_type, default.language) == (("instruction",), ("positive",), ("en",))
    every = parse_suite_options(ProOptions, {"inst_style": "all", "gt_type": "all"}, "screenspot-pro")
    assert every.inst_style == INSTRUCTION_STYLES and every.gt_type == GT_TYPES
    assert parse_suite_options(ProOptions, {"gt_type": "negative, positive"}, "screenspot-pro").gt_type == (
        "negative", "positive")
    assert parse_suite_options(ProOptions, {"language": "cn"}, "screenspot-pro").language == ("cn",)


@pytest.mark.parametrize("options,message", [
    ({"gt_type": "maybe"}, "suite option gt_type: Value error, maybe is not one of positive, negative or 'all'"),
    ({"inst_style": "action,action"}, "action,action names a value twice"),
    ({"language": ""}, "is not one of en, cn or 'all'"),
    ({"language": "cn", "gt_type": "all"}, "language cn goes only with inst_style=instruction and gt_type=positive"),
    ({"lang": "cn"}, "screenspot-pro has no suite option 'lang'; its options: inst_style, gt_type, language"),
])
def test_bad_pro_options_are_one_line(options, message):
    with pytest.raises(ValueError, match="^[^\n]*$") as err:
        parse_suite_options(ProOptions, options, "screenspot-pro")
    assert message in str(err.value)


def test_v1_and_v2_take_no_options():
    assert parse_suite_options(SeeClickOptions, {}, "screenspot-v2") == SeeClickOptions()
    with pytest.raises(ValueError, match="screenspot-v2 has no suite option 'gt_type'; its options: none"):
        parse_suite_options(SeeClickOptions, {"gt_type": "negative"}, "screenspot-v2")
