"""Layer 2: the request bodies and answer decoding shared by the sync and async clients."""

from __future__ import annotations

from typing import Any

from mintgym.action_spaces import ActionModel
from mintgym.errors import EpisodeStateError, RegistrationError, ServerError, SessionFailed, SessionNotFound, TaskUnavailable
from mintgym.types import Observation
from mintgym.wire import FRAME_CONTENT_TYPE, FrameMeta, unpack_frame


def headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


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
