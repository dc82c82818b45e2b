import pytest

from mintgym.rollout.answer_agent import AnswerAgent


class _NoEngine:
    policy_version = 0


def test_answer_mapping_digit_and_modulo():
    digit = AnswerAgent(_NoEngine(), choices={"null": ["no", "ok"]})
    assert digit.answer(" 1", "null") == "ok"
    assert digit.answer("7", "null") == "7"  # not an option: answered as typed
    assert digit.answer("42", "pytool") == "42"  # no menu for this domain
    modulo = AnswerAgent(_NoEngine(), choices={"null": ["no", "ok", "yes"]}, pick="modulo")
    assert modulo.answer("x", "null", [7]) == "ok" and modulo.answer("x", "null", [9]) == "no"
    with pytest.raises(ValueError, match="pick"):
        AnswerAgent(_NoEngine(), pick="argmax")
