"""`rollout` and `eval` take one set of agent and engine options, declared once (mintgym.cli.agent_options)."""

from __future__ import annotations

import pytest
import typer
from typer.main import get_command

from mintgym.cli import app, one_line
from mintgym.cli.agent_options import AgentChoice, _options, build_agent
from mintgym.errors import BackendError, RegistrationError


def _flags(command: str) -> dict[str, list[str]]:
    return {p.name: list(p.opts) for p in get_command(app).commands[command].params}


def test_rollout_and_eval_share_every_agent_and_engine_option():
    shared = set(_options("scripted", ()))
    rollout, evaluate = _flags("rollout"), _flags("eval")
    assert shared <= set(rollout) and shared <= set(evaluate)
    assert {"--agent", "--engine", "--model", "--model-url", "--token-ids", "--agent-option", "--packs"} <= {
        flag for name in shared for flag in rollout[name]}
    assert evaluate["model_url"] == ["--model-url", "--base-url"]  # eval's older spelling stays
    assert rollout["base_url"] == ["--base-url"]  # rollout's --base-url is the env server


def test_defaults_differ_only_in_the_agent():
    params = {c: {p.name: p.default for p in get_command(app).commands[c].params} for c in ("rollout", "eval")}
    assert params["rollout"]["agent"] == "scripted" and params["eval"]["agent"] == "vlm"
    assert params["rollout"]["token_ids"] == params["eval"]["token_ids"] == "auto"


@pytest.mark.parametrize("choice", [AgentChoice(agent="scripted", model="m"), AgentChoice(agent="no-such-agent"),
                                    AgentChoice(agent="vlm", engine="openai"), AgentChoice(agent="random",
                                                                                          agent_option=("=1",))])
def test_bad_choices_exit_2_before_anything_starts(choice, capsys):
    with pytest.raises(typer.Exit) as info:
        build_agent(choice)
    assert info.value.exit_code == 2 and capsys.readouterr().err.startswith("error: ")


def test_one_line_keeps_the_first_line_and_says_what_to_do():
    assert one_line(RegistrationError("unknown task id 'x'; did you mean y?")) == (
        "unknown task id 'x'; did you mean y?", 2)
    message, code = one_line(BackendError("server did not start\n--- server log ---\nTraceback ..."))
    assert message == "server did not start (run with --debug for the server log)" and code == 1
    assert one_line(FileNotFoundError(2, "No such file", "cfg.yaml"))[0].startswith("no such file or folder: cfg.yaml")
