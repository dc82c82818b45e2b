"""Layer 2: the request bodies and answer decoding shared by the sync and async clients."""

from __future__ import annotations

from typing import Any

from mintgym.action_spaces import ActionModel, ActionSet, action_set_for
from mintgym.client.transport import HttpResponse
from mintgym.errors import (
    EpisodeStateError,
    RegistrationError,
    ServerError,
    SessionFailed,
    SessionNotFound,
    TaskError,
    TaskUnavailable,
)
from mintgym.types import Observation
from mintgym.wire import BATCH_CONTENT_TYPE, FRAME_CONTENT_TYPE, MAGIC, FrameMeta, unpack_batch, unpack_frame


def headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def create_body(side_channels: tuple[str, ...], env_options: dict | None, task_id: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"side_channels": list(side_channels), "env_options": env_options or {}}
    if task_id is not None:  # the answer's screen_size is then the task's
        body["task_id"] = task_id
    return body


def action_set_named(name: str, domain: str) -> ActionSet | None:
    """The action set a server named (its domain's when the name is a custom set's), or None if unknown here."""
    for candidate in (name, domain):
        try:
            return action_set_for(candidate)
        except ValueError:
            continue
    return None


def episode_seed(seed: int | None, rng) -> int:
    """The seed an episode is reset with: the one given, else the next of the env's seeded generator, so that
    ``reset(seed=s)`` then ``reset()`` replays the same episodes (gymnasium's contract)."""
    return int(seed) if seed is not None else int(rng.integers(0, 2**31 - 1))


def step_body(action: ActionModel | dict | str, encoding: str, invalid: str = "count") -> dict[str, Any]:
    frame = {"encoding": encoding}
    if isinstance(action, str):
        return {"action_text": action, "frame": frame}
    if isinstance(action, ActionModel):
        action = action.to_json()
    if not isinstance(action, dict):
        raise TypeError(f"an action is a str, a dict or an ActionModel, not {type(action).__name__}")
    return {"action": action, "invalid": invalid, "frame": frame}


def reset_body(task_id: str | None, seed: int | None, encoding: str, max_steps: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"task_id": task_id, "seed": seed, "frame": {"encoding": encoding}}
    if max_steps is not None:
        body["max_steps"] = max_steps
    return body


def agent_error_body(reason: str, encoding: str) -> dict[str, Any]:
    """A step the agent could not express: counted with ``reason`` as its error, nothing executed."""
    return {"agent_error": reason or "the agent gave no action", "frame": {"encoding": encoding}}


def raise_for_error(resp) -> None:
    """Raise the typed error for an error answer (an httpx.Response or an HttpResponse)."""
    if resp.status_code < 400:
        return
    try:
        err = resp.json().get("error", {})
        code, message = err.get("code", "error"), err.get("message", resp.text)
    except ValueError:
        code, message = "error", resp.text[:500]
    if code == "task_error":  # the task author's code raised: its own message points at their file and line
        raise TaskError(message)
    text = f"env server answered {resp.status_code} ({code}): {message}"
    if code in ("session_failed", "timeout"):
        raise SessionFailed(text)
    if code in ("unknown_session", "session_closed"):  # closed before, or while, this request ran
        raise SessionNotFound(text)
    if code == "unknown_task":
        raise RegistrationError(text)
    if code == "task_unavailable":
        raise TaskUnavailable(text)
    if code == "episode_state":
        raise EpisodeStateError(text)
    raise ServerError(text, status=resp.status_code, code=code)


def decode_frame(resp) -> tuple[Observation, FrameMeta]:
    raise_for_error(resp)
    kind = resp.headers.get("content-type", "")
    if not kind.startswith(FRAME_CONTENT_TYPE):
        raise ServerError(f"expected a {FRAME_CONTENT_TYPE} answer, got {kind!r}", status=resp.status_code)
    return unpack_frame(resp.content)


def decode_batch(resp) -> list[tuple[Observation, FrameMeta]]:
    """The frames of a batch answer, in request order; the first failed item raises its typed error."""
    raise_for_error(resp)
    kind = resp.headers.get("content-type", "")
    if not kind.startswith(BATCH_CONTENT_TYPE):
        raise ServerError(f"expected a {BATCH_CONTENT_TYPE} answer, got {kind!r}", status=resp.status_code)
    frames = []
    for item in unpack_batch(resp.content):
        if item[:4] == MAGIC:
            frames.append(unpack_frame(item))
            continue
        failed = HttpResponse(500, {"content-type": "application/json"}, item)
        failed.status_code = int(failed.json().get("status", 500))
        raise_for_error(failed)
        raise ServerError(f"a batch item failed with status {failed.status_code} but no error")
    return frames
