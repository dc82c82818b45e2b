"""mintgym.plugin_options: a plug-in's options checked against its own constructor."""

from __future__ import annotations

import pytest

from mintgym.plugin_options import check_options


class Engine:
    def __init__(self, model_path: str, *, max_batch_size: int = 16, dtype: str | None = None):
        pass


class Loose:
    def __init__(self, engine=None, *, name: str = "x", **extra):
        pass


def test_known_options_are_converted_to_their_types_and_unknown_ones_named():
    assert check_options(Engine, {"max_batch_size": "8"}, "engine.options") == {"max_batch_size": 8}
    with pytest.raises(ValueError, match=r"^engine.options.max_batch: unknown key \(known: "
                                         r"model_path, max_batch_size, dtype\)$"):
        check_options(Engine, {"max_batch": 8}, "engine.options")


def test_a_wrong_type_is_one_line_with_the_value():
    with pytest.raises(ValueError) as err:
        check_options(Engine, {"max_batch_size": "many"}, "engine.options")
    assert str(err.value).startswith("engine.options.max_batch_size: ") and "'many'" in str(err.value)
    assert "\n" not in str(err.value)


def test_skipped_and_required_parameters_and_kwargs():
    with pytest.raises(ValueError, match=r"^engine.options.model_path: unknown key \(known: max_batch_size, dtype\)$"):
        check_options(Engine, {"model_path": "m"}, "engine.options", skip=("model_path",))
    assert check_options(Engine, {}, "engine.options") == {}  # model_path is the caller's to give
    assert check_options(Loose, {"anything": 1}, "agent.options", skip=("engine",)) == {"anything": 1}


def test_the_built_in_agents_and_engines_are_checked_by_their_constructors():
    from mintgym.agents.answer import AnswerAgent
    from mintgym.inference.hf import HFEngine

    with pytest.raises(ValueError, match=r"^agent.options.blnd: unknown key \(known: choices, "):
        check_options(AnswerAgent, {"blnd": True}, "agent.options", skip=("engine",))
    with pytest.raises(ValueError, match=r"engine.options.max_batch_size: "):
        check_options(HFEngine, {"max_batch_size": "lots"}, "engine.options", skip=("model_path",))
