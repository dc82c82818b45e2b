"""The one error an action can raise: it names what is wrong, for the agent and for the log."""

from __future__ import annotations


class InvalidAction(ValueError):
    """An action that cannot be parsed, is outside the action set, or does not fit the screen."""
