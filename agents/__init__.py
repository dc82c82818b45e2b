"""Agents: policies that turn observations into actions. All share :class:`mintgym.policy.Agent`.

``make_agent(name, **options)``: ``scripted`` (plays the task oracle; a test agent), ``random``, and
``vlm`` (a vision-language model through an inference engine).
"""

from __future__ import annotations

from typing import Any

AGENTS = {
    "scripted": "mintgym.agents.scripted:ScriptedAgent",
    "random": "mintgym.agents.scripted:RandomAgent",
    "vlm": "mintgym.agents.vlm:VLMAgent",
}


def make_agent(name: str, **options: Any):
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; choose one of {', '.join(AGENTS)}")
    import importlib

    module, _, cls = AGENTS[name].partition(":")
    return getattr(importlib.import_module(module), cls)(**options)
