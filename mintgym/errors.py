"""Layer 0: infrastructure faults. Agent mistakes are observations (info["error"]); these are exceptions.

The one agent mistake that is an exception, :class:`ContextOverflow` (a model call whose prompt outgrew the
context), is deliberately not a :class:`MintGymError`."""

from __future__ import annotations


class MintGymError(Exception):
    """Base of every MintGym infrastructure error."""


class RegistrationError(MintGymError, KeyError):
    """An unknown or duplicate environment or task id."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class EnvironmentCrashed(MintGymError):
    """The environment's browser, display, emulator or sandbox died; the session must be replaced."""


class SessionFailed(MintGymError):
    """The server reported that a session failed (its environment crashed or a request timed out)."""


class SessionNotFound(MintGymError):
    """The server does not know this session id (closed, expired or never created)."""


class ServerError(MintGymError):
    """The env server answered with an error, or could not be reached."""

    def __init__(self, message: str, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.code = code


class BackendError(MintGymError):
    """A runtime backend could not start, reach or stop an env server."""


class TaskUnavailable(MintGymError):
    """The task cannot run on this machine (missing app, needs the internet); carries the reason."""


class TaskError(MintGymError):
    """A task's own code (its setup, evaluate, finished, oracle or teardown) raised: the message's first line
    names the task, the call, the exception and where in the task author's code it happened; the lines after
    it are the author's frames (``File "...", line N, in f``). The environment is not at fault."""


class ContextOverflow(ValueError):
    """A prompt longer than the model's context (``max_model_len``), raised by the inference engines.

    Not an infrastructure fault, so not a :class:`MintGymError`: the agent's own turns made its prompt outgrow
    the context, and the episode ends as the agent's failure (trained on, see ``mintgym.rollout.episode``).
    """


class EpisodeStateError(MintGymError, RuntimeError):
    """An episode call out of order: step() before reset() or after the episode ended."""


def first_line(error: BaseException | str, default: str | None = None) -> str:
    """The first line of an error's message, stripped: what a one-line report shows. An empty message gives
    ``default``, else the exception's type name ("" for an empty string)."""
    lines = str(error).strip().splitlines()
    if lines:
        return lines[0].strip()
    if default is not None:
        return default
    return "" if isinstance(error, str) else type(error).__name__


def error_line(error: BaseException) -> str:
    """``Type: first line`` of an exception (only ``Type`` when its message is empty)."""
    line = first_line(error, "")
    return f"{type(error).__name__}: {line}" if line else type(error).__name__
