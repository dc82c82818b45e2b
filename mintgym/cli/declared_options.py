"""The flags domains and packs declare for MintGym's commands, merged into each command by one decorator.

A domain or pack lists :class:`~mintgym.env.declarations.CommandOption` records in its declaration (the
osworld pack's ``--osworld-root``, android's ``serve --serial``); :func:`with_declared_options` puts them into
a command's signature (typer reads it), calls each one's ``apply`` with the given value before the command
runs and its undo after, and hands ``serve`` the values meant as host options::

    @with_declared_options("serve")
    def serve(domain: str, declared: Declared = None) -> None:
        host_options.update(declared.host_options)

A flag the command already has (``eval --allow-internet``) is not added twice: the declaration's ``apply``
gets that flag's value, and its help joins the flag's help.
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from mintgym.env import declarations
from mintgym.env.declarations import CommandOption

_TYPES: dict[str, tuple[Any, Any]] = {"text": (str | None, None), "path": (Path | None, None), "switch": (bool, False)}


@dataclass
class Declared:
    """What the declared flags gave a command: the host options they set (``serve``)."""

    host_options: dict[str, Any] = field(default_factory=dict)


def _flags_of(parameter: inspect.Parameter) -> tuple[str, ...]:
    info = parameter.default
    decls = tuple(getattr(info, "param_decls", None) or ())
    return decls or ("--" + parameter.name.replace("_", "-"),)


def with_declared_options(command_name: str) -> Callable[[Callable], Callable]:
    """Decorate command ``command_name``: every flag declared for it joins its signature and takes effect."""

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "declared"]
        by_flag: dict[str, list[tuple[str, CommandOption]]] = {}
        for name, option in declarations.options(command_name):
            by_flag.setdefault(option.flag, []).append((name, option))
        params, added, bound = list(own), [], {}  # bound: flag -> the parameter carrying its value
        for flag, declared in by_flag.items():
            existing = next((i for i, p in enumerate(params) if flag in _flags_of(p)), None)
            if existing is not None:
                shared = params[existing]
                info = copy.copy(shared.default)
                info.help = "; ".join([info.help or ""] + [f"{name}: {opt.help}" for name, opt in declared]).strip("; ")
                params[existing] = shared.replace(default=info)
                bound[flag] = shared.name
                continue
            first = declared[0][1]
            annotation, default = _TYPES[first.kind]
            param = flag[2:].replace("-", "_")
            if any(p.name == param for p in params):
                raise ValueError(f"declared flag {flag} of {declared[0][0]} clashes with {command_name}'s {param!r}")
            help_text = "; ".join(opt.help for _, opt in declared)
            params.append(inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                                            default=typer.Option(default, flag, help=help_text)))
            added.append(param)
            bound[flag] = param
        wants_declared = len(own) != len(signature.parameters)

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            values = {flag: kwargs[param] for flag, param in bound.items()}
            for param in added:
                kwargs.pop(param)
            result = Declared()
            with ExitStack() as undo:
                for flag, declared in by_flag.items():
                    for _, option in declared:
                        _apply(option, values[flag], undo, result)
                if wants_declared:
                    kwargs["declared"] = result
                return command(**kwargs)

        wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        del wrapper.__wrapped__  # typer must see the new signature, not the command's
        return wrapper

    return decorate


def _apply(option: CommandOption, value: Any, undo: ExitStack, result: Declared) -> None:
    if option.host_option is not None and value not in (None, False, ""):
        result.host_options[option.host_option] = str(value) if isinstance(value, Path) else value
    if option.apply is None:
        return
    try:
        done = option.apply(value)
    except ValueError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    if callable(done):
        undo.callback(done)
