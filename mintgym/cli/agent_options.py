"""The agent and engine options that ``rollout`` and ``eval`` share, and the one place agents are built.

A command takes them by declaring an ``agent_choice: AgentChoice`` parameter and the decorator
:func:`with_agent_options`, which puts the options below into the command's signature (typer reads it)::

    @with_agent_options(default_agent="scripted")
    def rollout(task: str = typer.Option(...), agent_choice: AgentChoice = None) -> None:
        built = build_agent(agent_choice, concurrency=1, seed=0)

``--agent`` is a built-in name (scripted, random, vlm) or your own ``module:Class`` / ``module:factory``
(see :mod:`mintgym.agents` for the Agent protocol); ``--agent-option KEY=VALUE`` passes keyword arguments
to it, and a custom agent also gets ``engine=`` when an engine option is given. ``--packs module:function``
adds task packs (see :func:`use_packs`).
"""

from __future__ import annotations

import functools
import inspect
import json
from dataclasses import dataclass
from typing import Any, Callable, Optional

import typer

BUILTIN_AGENTS = ("scripted", "random", "vlm")


@dataclass
class AgentChoice:
    """What the shared options chose: the agent, its engine and the task packs to add."""

    agent: str = "scripted"
    agent_option: tuple[str, ...] = ()
    engine: Optional[str] = None
    model: Optional[str] = None
    model_url: Optional[str] = None
    api_key: Optional[str] = None
    token_ids: str = "auto"
    frame: str = "absolute"
    history: int = 1
    max_pixels: Optional[int] = None
    max_new_tokens: int = 256
    temperature: float = 0.0
    retries: int = 0
    model_timeout: float = 600.0
    model_retries: int = 2
    packs: tuple[str, ...] = ()


def _options(default_agent: str, model_url_aliases: tuple[str, ...]) -> dict[str, tuple[Any, Any]]:
    """name -> (annotation, typer.Option) of every shared option (fresh objects for each command)."""
    o = typer.Option
    return {
        "agent": (str, o(default_agent, help="scripted | random | vlm, or your own agent as module:Class or "
                                             "module:factory (see `Bring your own agent` in the README)")),
        "agent_option": (list[str], o([], "--agent-option", help="KEY=VALUE keyword for the agent (JSON value; "
                                                                 "repeatable)")),
        "engine": (Optional[str], o(None, help="hf | openai | vllm (default: openai with --model-url, else hf)")),
        "model": (Optional[str], o(None, help="checkpoint path (hf, vllm) or model name (openai)")),
        "model_url": (Optional[str], o(None, "--model-url", *model_url_aliases,
                                       help="an OpenAI-compatible model server, e.g. http://127.0.0.1:8001/v1")),
        "api_key": (Optional[str], o(None, envvar="MINTGYM_MODEL_API_KEY", help="the model server's key")),
        "token_ids": (str, o("auto", help="openai: ask for token ids and logprobs: auto (drop them when the "
                                          "server refuses, saying so once) | on (a refusal is an error) | off")),
        "frame": (str, o("absolute", help="vlm: coordinate frame the model answers in (absolute, normalized_1000, "
                                          "relative, resized_absolute:WxH)")),
        "history": (int, o(1, min=1, help="vlm: screenshots shown (the current one and K-1 before it)")),
        "max_pixels": (Optional[int], o(None, help="vlm: resize screenshots to at most this many pixels")),
        "max_new_tokens": (int, o(256, min=1, help="vlm: most tokens per answer")),
        "temperature": (float, o(0.0, min=0.0, help="vlm: sampling temperature (0: greedy)")),
        "retries": (int, o(0, min=0, help="vlm: re-asks after an unparseable answer")),
        "model_timeout": (float, o(600.0, min=0.1, help="openai: seconds to wait for one model answer")),
        "model_retries": (int, o(2, min=0, help="openai: retries of a failed model request")),
        "packs": (list[str], o([], "--packs", help="a task pack to add: module:function returning tasks, a task "
                                                   "file (.yaml/.yml/.json) or a folder of them (docs/task-files.md),"
                                                   " or NAME=...; repeatable, also reaches env servers")),
    }


def with_agent_options(default_agent: str = "scripted",
                       model_url_aliases: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """Decorate a command taking ``agent_choice``: the shared options join its signature (``--model-url``
    also answers to ``model_url_aliases``)."""

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "agent_choice"]
        added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
                 for name, (annotation, option) in _options(default_agent, model_url_aliases).items()]
        names = [p.name for p in added]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in names}
            values["agent_option"] = tuple(values["agent_option"])
            values["packs"] = tuple(values["packs"])
            return command(agent_choice=AgentChoice(**values), **kwargs)

        params = own + added
        wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        del wrapper.__wrapped__  # typer must see the new signature, not the command's
        return wrapper

    return decorate


@dataclass
class BuiltAgent:
    """A factory of fresh agents (one per episode), what to record about them, and the engine to close."""

    make: Callable[[], Any]
    describe: dict[str, Any]
    engine: Any = None
    needs_oracle: bool = False

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``error: message`` (one line) and return the Exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def parse_agent_options(items: tuple[str, ...] | list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise fail(f"--agent-option wants KEY=VALUE with KEY a Python name, got {item!r}")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def build_agent(choice: AgentChoice, *, concurrency: int = 1, seed: int = 0) -> BuiltAgent:
    """Build the engine (if any) and check one agent now, so a bad choice fails before a server starts.

    Every mistake is one ``error:`` line and exit status 2.
    """
    from mintgym.agents import make_agent
    from mintgym.errors import MintGymError, first_line

    options = _agent_kwargs(choice, seed)
    describe = agent_description(choice, seed)
    engine = None
    if "engine" in describe:
        engine, _ = _build_engine(choice, concurrency)
        options["engine"] = engine
    try:
        first = make_agent(choice.agent, **options)
    except (ValueError, TypeError, ImportError, MintGymError) as err:
        if engine is not None:
            engine.close()
        raise fail(first_line(err)) from None
    return BuiltAgent(lambda: make_agent(choice.agent, **options), describe, engine,
                      needs_oracle=bool(getattr(first, "needs_oracle", False)))


def _agent_kwargs(choice: AgentChoice, seed: int) -> dict[str, Any]:
    """The keyword arguments the agent is made with, but its engine; one ``error:`` line for a wrong mix."""
    options = parse_agent_options(choice.agent_option)
    wants_engine = any(v is not None for v in (choice.engine, choice.model, choice.model_url))
    if choice.agent == "vlm":
        options.update(frame=choice.frame, history=choice.history, max_pixels=choice.max_pixels,
                       max_new_tokens=choice.max_new_tokens, temperature=choice.temperature,
                       retries=choice.retries, seed=seed)
    elif wants_engine and choice.agent in BUILTIN_AGENTS:
        raise fail(f"--engine/--model/--model-url are options of the vlm agent or your own, not {choice.agent!r}")
    return options


def agent_description(choice: AgentChoice, seed: int = 0) -> dict[str, Any]:
    """What the run records about its agent (results.json ``config``, and the run folder's key): the agent,
    and where it has one its engine, model and sampling options, and any ``--agent-option``. Builds nothing.
    """
    options = _agent_kwargs(choice, seed)
    describe: dict[str, Any] = {"agent": choice.agent}
    if choice.agent == "vlm" or (choice.agent not in BUILTIN_AGENTS
                                 and any(v is not None for v in (choice.engine, choice.model, choice.model_url))):
        describe.update(engine=_engine_name(choice), model=choice.model, model_url=choice.model_url)
        if choice.agent == "vlm":
            describe.update(frame=choice.frame, history=choice.history, max_pixels=choice.max_pixels,
                            max_new_tokens=choice.max_new_tokens, temperature=choice.temperature,
                            retries=choice.retries)
    if choice.agent_option:
        describe["agent_options"] = options
    return describe


def _engine_name(choice: AgentChoice) -> str:
    return choice.engine or ("openai" if choice.model_url else "hf")


def _build_engine(choice: AgentChoice, concurrency: int) -> tuple[Any, str]:
    from mintgym.errors import MintGymError, first_line
    from mintgym.inference import make_engine

    name = _engine_name(choice)
    if name == "openai":
        if not choice.model_url:
            raise fail("the openai engine needs --model-url (an OpenAI-compatible server, e.g. "
                       "http://127.0.0.1:8001/v1)")
        config: dict[str, Any] = {"base_url": choice.model_url, "model": choice.model, "api_key": choice.api_key,
                                  "timeout_s": choice.model_timeout, "max_retries": choice.model_retries,
                                  "token_ids": choice.token_ids}
    else:
        if choice.model_url:
            raise fail(f"--model-url is for the openai engine, not {name!r}")
        if not choice.model:
            raise fail(f"the {name} engine needs --model PATH (a checkpoint directory)")
        if choice.token_ids != "auto":
            raise fail(f"--token-ids is an option of the openai engine, not {name!r}")
        config = {"model_path": choice.model}
    try:
        engine = make_engine(name, **config)
    except (ValueError, OSError, ImportError, MintGymError) as err:
        raise fail(f"cannot start the {name} engine: {first_line(err, repr(err))}") from None
    if name == "openai" and not choice.model:
        try:
            engine.ensure_model()  # the model's name, and proof the server answers, before any episode
        except MintGymError as err:
            engine.close()
            raise fail(f"cannot use the model server at {choice.model_url}: {err}; is it running, is the URL "
                       "right (it ends in /v1), or give --model NAME") from None
    if name == "hf" and concurrency > 1:  # one in-process model: batch the concurrent agents' requests
        from mintgym.agents.batched import BatchedEngine

        engine = BatchedEngine(engine, max_batch_size=min(concurrency, 16))
    return engine, name


def use_packs(specs: tuple[str, ...] | list[str]) -> list[str]:
    """Register each ``module:function`` or task-file (or ``NAME=...``) task pack here and for the env servers
    started from here; one ``error:`` line (exit 2) for a pack that does not import, parse or load."""
    from mintgym.env import registration
    from mintgym.errors import RegistrationError

    names = []
    for spec in specs:
        try:
            names.append(registration.add_pack(spec))
        except RegistrationError as err:
            raise fail(str(err)) from None
    return names
