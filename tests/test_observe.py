"""mintgym.observe: channel names read from flags, the side channels a session fills for them, and the one-line
refusal of a channel a domain does not declare (checked by the CLI, the run config, the server and the Episode)."""

from __future__ import annotations

import pytest

from mintgym import observe
from mintgym.config import ConfigError, RunConfig
from mintgym.env import declarations


def test_parse_reads_commas_and_repeats_once_each_in_order():
    assert observe.parse(["a11y,screenshot", " som ", "a11y"]) == ("a11y", "screenshot", "som")
    assert observe.parse("dom") == ("dom",)
    with pytest.raises(ValueError, match="unknown observation channel 'axtree' \\(known: screenshot, som, a11y"):
        observe.parse(["screenshot,axtree"])
    with pytest.raises(ValueError, match="no observation channel given"):
        observe.parse([" , "])


def test_set_of_marks_brings_its_legend_and_the_screenshot_is_no_side_channel():
    assert observe.session_channels(("screenshot",)) == ()
    assert observe.session_channels(("som",)) == ("som", "a11y")
    assert observe.session_channels(("dom", "a11y", "som")) == ("dom", "a11y", "som")


def test_each_domain_declares_its_channels_and_others_are_refused():
    assert declarations.unsupported_channels("web", observe.CHANNELS) is None
    assert declarations.unsupported_channels("desktop", ("som", "a11y", "text")) is None
    assert declarations.unsupported_channels("desktop", ("dom",)) == (
        "the desktop domain has no 'dom' observation channel (it has: screenshot, som, a11y, text)")
    assert declarations.unsupported_channels("android", ("som",)).startswith("the android domain has no 'som'")
    assert declarations.unsupported_channels("pytool", ("screenshot", "text")) is None
    # a domain that declares nothing is not checked (its environment decides)
    assert declarations.unsupported_channels("null", ("dom",)) is None


def _config(**agent) -> dict:
    return {"model": {"path": "/tmp/m"}, "tasks": [{"id": "pytool/count-shapes-0"}], "agent": agent}


def test_the_run_config_takes_agent_observe_and_checks_it_against_its_domains():
    assert RunConfig.from_dict(_config(observe=["screenshot", "text"])).agent.observe == ["screenshot", "text"]
    assert RunConfig.from_dict(_config()).agent.observe == ["screenshot"]
    with pytest.raises(ConfigError, match="agent.observe: the pytool domain has no 'a11y' observation channel"):
        RunConfig.from_dict(_config(observe=["a11y"]))
    with pytest.raises(ConfigError, match="unknown observation channel 'pixels'"):
        RunConfig.from_dict(_config(observe=["pixels"]))
