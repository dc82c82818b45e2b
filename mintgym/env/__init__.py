"""Layer 1: Environment, EnvironmentHost and Task contracts, the episode semantics, the registry."""

from mintgym.env.core import Environment, EnvironmentHost, SimpleHost, Task
from mintgym.env.episode import Episode, StepOutcome

__all__ = ["Environment", "EnvironmentHost", "SimpleHost", "Task", "Episode", "StepOutcome"]
