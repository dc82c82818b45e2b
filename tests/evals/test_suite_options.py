import pytest
from pydantic import BaseModel, ConfigDict

from mintgym.evals.suite_options import parse_suite_options


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")
    protocol: str = "official"
    top_k: int = 50


def test_values_are_converted_by_the_model():
    assert parse_suite_options(Options, {"top_k": "10"}, "s").top_k == 10
    assert parse_suite_options(Options, None, "s") == Options()


def test_unknown_key_names_the_known_ones():
    with pytest.raises(ValueError, match=r"s has no suite option 'protcol'; its options: protocol, top_k"):
        parse_suite_options(Options, {"protcol": "x"}, "s")


def test_bad_value_is_one_line():
    with pytest.raises(ValueError) as err:
        parse_suite_options(Options, {"top_k": "many"}, "s")
    assert "\n" not in str(err.value) and "top_k" in str(err.value)
