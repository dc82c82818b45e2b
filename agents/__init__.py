"""Agents: policies that turn observations into actions. All share :class:`mintgym.policy.Agent`.

``make_agent(name, **options)``: a registered agent (the ``mintgym.agents`` entry points: ``scripted``, which
plays the task oracle, ``random``, ``vlm``, a vision-language model through an inference engine, and
``answer``, the RL quickstarts' one-token policy; an installed package adds its own the same way), or your
own named ``module:Class`` or ``module:factory``.

An agent class may say how the entry points use it: ``needs_engine = True`` (the commands build it an
inference engine, passed as ``engine=``), ``cli_flags`` (the shared command-line options it takes, such as
``temperature``) and ``training_defaults`` (options a training rollout gives it unless the config sets them).

The Agent protocol (see :mod:`mintgym.policy`) is three members:

* ``name: str`` -- recorded in every trajectory;
* ``async start(context: AgentContext)`` -- a new episode begins: the task's instruction, the action set
  (``context.action_set.describe()`` is its prompt text), the screen size, the step limit, the seed;
* ``async act(observation: Observation) -> AgentStep`` -- the next action in screen pixels (an
  :class:`~mintgym.action_spaces.ActionModel`), or ``AgentStep(None, text=..., error=...)`` for an answer
  that did not parse (it counts as a step). Token ids and logprobs go into the AgentStep for training.

An agent may set ``needs_oracle = True`` (the scripted agent does): evaluations then skip tasks that ship
no oracle and report them as "no oracle" instead of running them.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

#: The entry-point group agents are registered under (``[project.entry-points."mintgym.agents"]`` in
#: pyproject.toml): a package of yours that registers its agent there is found by name, as a built-in is.
AGENT_GROUP = "mintgym.agents"


def registered_agents() -> dict[str, str]:
    """Every registered agent: name -> ``module:attr`` (MintGym's own and installed packages')."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=AGENT_GROUP)}


def agent_factory(name: str):
    """The class or factory behind an agent name: a registered one, or ``module:Class`` / ``module:factory``."""
    known = registered_agents()
    ref = known.get(name, name)
    module, sep, attr = ref.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"unknown agent {name!r}; choose one of {', '.join(sorted(known))}, or give your own as "
                         "module:Class or module:factory (or register it under the mintgym.agents entry points)")
    try:
        target: Any = importlib.import_module(module)
    except ImportError as err:
        raise ValueError(f"agent {name!r}: cannot import module {module!r} ({err}); is its folder on "
                         "PYTHONPATH or its package installed?") from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ValueError(f"agent {name!r}: module {module!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"agent {name!r}: {attr!r} is a {type(target).__name__}, not a class or factory")
    return target


def make_agent(name: str, **options: Any):
    """A new agent: ``name`` is a built-in agent or ``module:Class``/``module:factory``, called with ``options``."""
    factory = agent_factory(name)
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as err:
        raise ValueError(f"agent {name!r} does not take the options {sorted(options)}: {err}") from None
    except ValueError:
        pass  # no signature to check (a builtin): calling it will tell
    agent = factory(**options)
    check_agent(agent, name)
    return agent


def check_agent(agent: Any, name: str = "") -> None:
    """Raise ValueError naming what is missing unless ``agent`` follows the Agent protocol."""
    label = name or type(agent).__name__
    if not isinstance(getattr(agent, "name", None), str):
        raise ValueError(f"agent {label!r} has no `name` string (the Agent protocol: name, async start, async act)")
    for method in ("start", "act"):
        if not inspect.iscoroutinefunction(getattr(agent, method, None)):
            raise ValueError(f"agent {label!r} needs an `async def {method}(...)` method (the Agent protocol: "
                             "name, async start(context), async act(observation) -> AgentStep)")
