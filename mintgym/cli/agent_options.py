"""The agent and engine options that ``rollout`` and ``eval`` share, and the one place agents are built.

A command takes them by declaring an ``agent_choice: AgentChoice`` parameter and the decorator
:func:`with_agent_options`, which puts the options below into the command's signature (typer reads it)::

    @with_agent_options(default_agent="scripted")
    def rollout(task: str = typer.Option(...), agent_choice: AgentChoice = None) -> None:
        built = build_agent(agent_choice, concurrency=1, seed=0)

``--agent`` is a registered agent's name (the ``mintgym.agents`` entry points: scripted, random, vlm, answer,
an installed package's) or your own ``module:Class`` / ``module:factory`` (see :mod:`mintgym.agents` for the
Agent protocol); ``--agent-option KEY=VALUE`` passes keyword arguments to it. An agent class that says
``needs_engine`` always gets ``engine=`` (built from ``--engine``/``--model``/``--model-url``), any other that
takes an ``engine`` gets one when an engine option is given, and the shared flags it lists in ``cli_flags``
(``--temperature`` ...) are passed to it; nothing here names an agent. ``--model-option`` reshapes the openai
engine's request bodies (see :func:`model_options`). ``--packs module:function`` adds task packs (see
:func:`use_packs`).
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import typer


@dataclass
class AgentChoice:
    """What the shared options chose: the agent, its engine and the task packs to add."""

    agent: str = "scripted"
    agent_option: tuple[str, ...] = ()
    engine: str | None = None
    model: str | None = None
    model_url: str | None = None
    api_key: str | None = None
    token_ids: str = "auto"
    frame: str = "absolute"
    history: int = 1
    max_pixels: int | None = None
    max_new_tokens: int = 256
    temperature: float = 0.0
    retries: int = 0
    model_timeout: float = 600.0
    model_retries: int = 2
    model_option: tuple[str, ...] = ()
    packs: tuple[str, ...] = ()
    #: The observation channels the agent is given (:mod:`mintgym.observe`).
    observe: tuple[str, ...] = ("screenshot",)


def _options(default_agent: str, model_url_aliases: tuple[str, ...]) -> dict[str, tuple[Any, Any]]:
    """name -> (annotation, typer.Option) of every shared option (fresh objects for each command)."""
    o = typer.Option
    return {
        "agent": (str, o(default_agent, help="a registered agent (scripted, random, vlm, answer, or an installed "
                                             "package's) or your own as module:Class or module:factory (see "
                                             "`Bring your own agent` in the README)")),
        "agent_option": (list[str], o([], "--agent-option", help="KEY=VALUE keyword for the agent (JSON value; "
                                                                 "repeatable)")),
        "engine": (str | None, o(None, help="hf | openai | vllm (default: openai with --model-url, else hf)")),
        "model": (str | None, o(None, help="checkpoint path (hf, vllm) or model name (openai)")),
        "model_url": (str | None, o(None, "--model-url", *model_url_aliases,
                                       help="an OpenAI-compatible model server, e.g. http://127.0.0.1:8001/v1")),
        "api_key": (str | None, o(None, envvar="MINTGYM_MODEL_API_KEY", help="the model server's key")),
        "token_ids": (str, o("auto", help="openai: ask for token ids and logprobs: auto (drop them when the "
                                          "server refuses, saying so once) | on (a refusal is an error) | off")),
        "frame": (str, o("absolute", help="vlm: coordinate frame the model answers in (absolute, normalized_1000, "
                                          "relative, resized_absolute:WxH)")),
        "history": (int, o(1, min=1, help="vlm: screenshots shown (the current one and K-1 before it)")),
        "max_pixels": (int | None, o(None, help="vlm: resize screenshots to at most this many pixels")),
        "max_new_tokens": (int, o(256, min=1, help="vlm: most tokens per answer")),
        "temperature": (float, o(0.0, min=0.0, help="vlm: sampling temperature (0: greedy)")),
        "retries": (int, o(0, min=0, help="vlm: re-asks after an unparseable answer")),
        "model_timeout": (float, o(600.0, min=0.1, help="openai: seconds to wait for one model answer")),
        "model_retries": (int, o(2, min=0, help="openai: retries of a failed model request")),
        "model_option": (list[str], o([], "--model-option", help="openai: reshape each request body for an "
                                      "endpoint that refuses fields (repeatable): drop=FIELD[,FIELD...] leaves "
                                      "sampling fields out (drop=temperature,top_p), rename=OLD:NEW[,OLD:NEW...] "
                                      "sends one under another name (rename=max_tokens:max_completion_tokens), "
                                      "body.FIELD=VALUE adds a field (JSON value, else a string: "
                                      "body.reasoning_effort=low)")),
        "observe": (list[str], o([], "--observe", help="what the agent is given, comma-separated or repeated: "
                                 "screenshot (default), som (set-of-marks: numbered marks drawn on the screenshot, "
                                 "a11y is their legend), a11y (the grounded accessibility listing), dom (the page's "
                                 "pruned HTML), text (the domain's text output); each domain has some (web: all; "
                                 "desktop: som, a11y, text; android: a11y, text; pytool: text)")),
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
            values["model_option"] = tuple(values["model_option"])
            values["packs"] = tuple(values["packs"])
            values["observe"] = _observe(values["observe"])
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


def _observe(values: list[str]) -> tuple[str, ...]:
    """``--observe`` values as channel names (the screenshot alone when none is given)."""
    from mintgym import observe

    if not values:
        return observe.DEFAULT
    try:
        return observe.parse(values)
    except ValueError as err:
        raise fail(f"--observe: {err}") from None


def check_observe(choice: AgentChoice, domains: Any) -> None:
    """One ``error:`` line when a domain in ``domains`` lacks a channel ``--observe`` asks for."""
    from mintgym.env import declarations

    for domain in dict.fromkeys(domains):
        if problem := declarations.unsupported_channels(domain, choice.observe):
            raise fail(f"--observe: {problem}")


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``error: message`` (one line) and return the Exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def parse_agent_options(items: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``--agent-option KEY=VALUE`` items as keyword arguments (JSON values, else strings)."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise fail(f"--agent-option wants KEY=VALUE with KEY a Python name, got {item!r}")
        options[key] = _json_or_text(value)
    return options


def model_options(items: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``--model-option`` items as the openai engine's ``drop_fields``, ``rename_fields`` and ``extra_body``
    (only those given); one ``error:`` line (exit 2) for an item that does not parse or options that contradict
    each other.

        >>> model_options(["drop=temperature,top_p", "rename=max_tokens:max_completion_tokens",
        ...                "body.reasoning_effort=low"])  # doctest: +NORMALIZE_WHITESPACE
        {'drop_fields': ['temperature', 'top_p'], 'rename_fields': {'max_tokens': 'max_completion_tokens'},
         'extra_body': {'reasoning_effort': 'low'}}
    """
    from mintgym.inference.openai import check_body_options

    drop: list[str] = []
    rename: dict[str, str] = {}
    body: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        names = [n.strip() for n in value.split(",")]
        pairs = [(old.strip(), new.strip()) for old, _, new in (n.partition(":") for n in names)]
        if key == "drop" and sep and all(names):
            drop.extend(names)
        elif key == "rename" and sep and all(old and new for old, new in pairs):
            rename.update(pairs)
        elif key.startswith("body.") and key[len("body."):] and sep:
            body[key[len("body."):]] = _json_or_text(value)
        else:
            raise fail(f"--model-option wants drop=FIELD[,FIELD...], rename=OLD:NEW[,OLD:NEW...] or "
                       f"body.FIELD=VALUE, got {item!r}")
    try:
        check_body_options(drop, rename, body)
    except ValueError as err:
        raise fail(f"--model-option: {err}") from None
    given = {"drop_fields": drop, "rename_fields": rename, "extra_body": body}
    return {name: value for name, value in given.items() if value}


def build_agent(choice: AgentChoice, *, concurrency: int = 1, seed: int = 0) -> BuiltAgent:
    """Build the engine (if any) and check one agent now, so a bad choice fails before a server starts.

    Every mistake is one ``error:`` line and exit status 2.
    """
    from mintgym.agents import make_agent
    from mintgym.errors import MintGymError, first_line

    options = _agent_kwargs(choice, seed)
    describe = agent_description(choice, seed)
    engine = None
    if _wants_engine(choice, _factory(choice)):
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


#: The shared flags an agent may list in ``cli_flags``, and the AgentChoice field each one comes from.
CLI_FLAGS = ("frame", "history", "max_pixels", "max_new_tokens", "temperature", "retries", "seed")


def _factory(choice: AgentChoice) -> Any:
    from mintgym.agents import agent_factory

    try:
        return agent_factory(choice.agent)
    except ValueError as err:
        raise fail(str(err)) from None


def _takes_engine(factory: Any) -> bool:
    """Whether the agent is given an engine: it says it needs one, or takes an ``engine`` (or ``**kwargs``)."""
    if getattr(factory, "needs_engine", False):
        return True
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "engine" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _wants_engine(choice: AgentChoice, factory: Any) -> bool:
    """Whether an engine is built for the agent; one ``error:`` line for engine options it cannot take."""
    given = any(v is not None for v in (choice.engine, choice.model, choice.model_url)) or bool(choice.model_option)
    if given and not _takes_engine(factory):
        raise fail(f"--engine/--model/--model-url/--model-option are options of agents that take an engine, not "
                   f"{choice.agent!r}")
    return getattr(factory, "needs_engine", False) or given


def _agent_kwargs(choice: AgentChoice, seed: int) -> dict[str, Any]:
    """The keyword arguments the agent is made with, but its engine: its ``--agent-option``s and the shared flags
    it lists in ``cli_flags`` (the flags win)."""
    options = parse_agent_options(choice.agent_option)
    values = {**{name: getattr(choice, name) for name in CLI_FLAGS if name != "seed"}, "seed": seed}
    options.update({name: values[name] for name in getattr(_factory(choice), "cli_flags", ()) if name in values})
    return options


def agent_description(choice: AgentChoice, seed: int = 0) -> dict[str, Any]:
    """What the run records about its agent (results.json ``config``, and the run folder's key): the agent,
    and where it has one its engine, model and the shared flags it takes, and any ``--agent-option``. Builds
    nothing."""
    factory = _factory(choice)
    options = _agent_kwargs(choice, seed)
    describe: dict[str, Any] = {"agent": choice.agent}
    if _wants_engine(choice, factory):
        describe.update(engine=_engine_name(choice), model=choice.model, model_url=choice.model_url)
        describe.update({k: v for k, v in options.items() if k in getattr(factory, "cli_flags", ()) and k != "seed"})
    if choice.agent_option:
        describe["agent_options"] = options
    if choice.model_option:
        describe["model_options"] = model_options(choice.model_option)
    if choice.observe != ("screenshot",):
        describe["observe"] = list(choice.observe)
    return describe


def _engine_name(choice: AgentChoice) -> str:
    return choice.engine or ("openai" if choice.model_url else "hf")


def _build_engine(choice: AgentChoice, concurrency: int) -> tuple[Any, str]:
    from mintgym.errors import MintGymError, first_line
    from mintgym.rollout.engines import open_engine

    name = _engine_name(choice)
    if name == "openai":
        if not choice.model_url:
            raise fail("the openai engine needs --model-url (an OpenAI-compatible server, e.g. "
                       "http://127.0.0.1:8001/v1)")
        config: dict[str, Any] = {"base_url": choice.model_url, "model": choice.model, "api_key": choice.api_key,
                                  "timeout_s": choice.model_timeout, "max_retries": choice.model_retries,
                                  "token_ids": choice.token_ids, **model_options(choice.model_option)}
    else:
        if choice.model_url:
            raise fail(f"--model-url is for the openai engine, not {name!r}")
        if choice.model_option:
            raise fail(f"--model-option is an option of the openai engine, not {name!r}")
        if not choice.model:
            raise fail(f"the {name} engine needs --model PATH (a checkpoint directory)")
        if choice.token_ids != "auto":
            raise fail(f"--token-ids is an option of the openai engine, not {name!r}")
        config = {"model_path": choice.model}
    try:
        _, engine = open_engine(name, batch=min(concurrency, 16), **config)
    except (ValueError, OSError, ImportError, MintGymError) as err:
        raise fail(f"cannot start the {name} engine: {first_line(err, repr(err))}") from None
    if name == "openai" and not choice.model:
        try:
            engine.ensure_model()  # the model's name, and proof the server answers, before any episode
        except MintGymError as err:
            engine.close()
            raise fail(f"cannot use the model server at {choice.model_url}: {err}; is it running, is the URL "
                       "right (it ends in /v1), or give --model NAME") from None
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
