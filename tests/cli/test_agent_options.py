"""`rollout` and `eval` take one set of agent and engine options, declared once (mintgym.cli.agent_options)."""

from __future__ import annotations

import pytest
import typer
from typer.main import get_command

from mintgym.cli import app, one_line
from mintgym.cli.agent_options import AgentChoice, _options, build_agent, model_options
from mintgym.errors import BackendError, RegistrationError


def _flags(command: str) -> dict[str, list[str]]:
    return {p.name: list(p.opts) for p in get_command(app).commands[command].params}


def test_rollout_and_eval_share_every_agent_and_engine_option():
    shared = set(_options("scripted", ()))
    rollout, evaluate = _flags("rollout"), _flags("eval")
    assert shared <= set(rollout) and shared <= set(evaluate)
    assert {"--agent", "--engine", "--model", "--model-url", "--token-ids", "--agent-option", "--model-option",
            "--packs"} <= {
        flag for name in shared for flag in rollout[name]}
    assert evaluate["model_url"] == ["--model-url", "--base-url"]  # eval's older spelling stays
    assert rollout["base_url"] == ["--base-url"]  # rollout's --base-url is the env server


def test_defaults_differ_only_in_the_agent():
    params = {c: {p.name: p.default for p in get_command(app).commands[c].params} for c in ("rollout", "eval")}
    assert params["rollout"]["agent"] == "scripted" and params["eval"]["agent"] == "vlm"
    assert params["rollout"]["token_ids"] == params["eval"]["token_ids"] == "auto"


@pytest.mark.parametrize("choice", [AgentChoice(agent="scripted", model="m"), AgentChoice(agent="no-such-agent"),
                                    AgentChoice(agent="vlm", engine="openai"), AgentChoice(agent="random",
                                                                                          agent_option=("=1",)),
                                    AgentChoice(agent="scripted", model_option=("drop=temperature",)),
                                    AgentChoice(agent="vlm", model="m", model_option=("drop=temperature",)),
                                    AgentChoice(agent="vlm", model_url="http://127.0.0.1:9/v1",
                                                model_option=("drop=messages",))])
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


def test_model_options_parse_into_the_openai_engine_options():
    assert model_options(["drop=temperature", "drop=top_p, seed", "rename=max_tokens:max_completion_tokens,stop:halt",
                          "body.reasoning_effort=low", "body.metadata={\"a\": 1}", "body.n_ctx=4096"]) == {
        "drop_fields": ["temperature", "top_p", "seed"],
        "rename_fields": {"max_tokens": "max_completion_tokens", "stop": "halt"},
        "extra_body": {"reasoning_effort": "low", "metadata": {"a": 1}, "n_ctx": 4096}}
    assert model_options([]) == {}


@pytest.mark.parametrize("items, message", [
    (["temperature"],
     "--model-option wants drop=FIELD[,FIELD...], rename=OLD:NEW[,OLD:NEW...] or body.FIELD=VALUE, got 'temperature'"),
    (["drop="], "--model-option wants drop=FIELD"),
    (["drop=temperature,"], "--model-option wants drop=FIELD"),
    (["rename=max_tokens"], "--model-option wants drop=FIELD"),
    (["rename=max_tokens:"], "--model-option wants drop=FIELD"),
    (["body.=1"], "--model-option wants drop=FIELD"),
    (["top_p=1"], "--model-option wants drop=FIELD"),
    (["drop=messages"], "--model-option: cannot drop 'messages': every request needs model and messages"),
    (["rename=max_tokens:temperature"], "--model-option: cannot rename 'max_tokens' onto 'temperature'"),
    (["drop=seed", "body.seed=1"], "--model-option: extra body field 'seed' is also dropped or renamed"),
])
def test_bad_model_options_are_one_error_line(items, message, capsys):
    with pytest.raises(typer.Exit) as info:
        model_options(items)
    err = capsys.readouterr().err
    assert info.value.exit_code == 2 and err.startswith(f"error: {message}") and err.count("\n") == 1
