"""The conversation a VLM agent shows its model: the task, earlier steps, and the current screenshot.

The last ``images`` screenshots (the current one included) are shown as images, each followed by the
model's answer to it; older steps are summarized as the text of the model's answers, so long episodes
keep a bounded prompt. Notes (why an answer could not be used) are told to the model on the next turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Turn:
    """One earlier step: the image the model saw, what it answered, and any feedback for the next turn."""

    image: np.ndarray | None
    response: str
    note: str | None = None


class History:
    """Earlier turns of one episode, and the chat messages for the next request."""

    def __init__(self, images: int = 1, max_actions: int | None = 30, max_response_chars: int = 400):
        if images < 1:
            raise ValueError(f"history must show at least the current screenshot (images >= 1), got {images}")
        if max_actions is not None and max_actions < 0:
            raise ValueError(f"max_actions must be >= 0 or None, got {max_actions}")
        self.images = images
        self.max_actions = max_actions
        self.max_response_chars = max_response_chars
        self.turns: list[Turn] = []

    def clear(self) -> None:
        self.turns = []

    def add(self, turn: Turn) -> None:
        self.turns.append(turn)
        # Images that will never be shown again are dropped, so memory stays bounded.
        for old in self.turns[: max(0, len(self.turns) - (self.images - 1))]:
            old.image = None

    def _short(self, text: str) -> str:
        text = text.strip() or "(empty answer)"
        limit = self.max_response_chars
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def messages(self, system: str, instruction: str, image: np.ndarray | None, current: str) -> list[dict[str, Any]]:
        """Chat messages for the current step: ``current`` is the text shown with the current screenshot
        (``image``; None: an agent not shown the screen, whose turns carry text only)."""
        shown = self.images - 1
        recent = self.turns[len(self.turns) - shown:] if shown else []
        older = self.turns[: len(self.turns) - len(recent)]
        intro = f"Task: {instruction}"
        if older:
            if self.max_actions is None:
                listed = older
            else:
                listed = older[len(older) - self.max_actions:] if self.max_actions else []
            first = len(older) - len(listed) + 1
            lines = [f"{first + i}. {self._short(t.response)}" + (f"  [not used: {t.note}]" if t.note else "")
                     for i, t in enumerate(listed)]
            omitted = len(older) - len(listed)
            head = f"Earlier actions ({omitted} older ones omitted):" if omitted else "Earlier actions:"
            intro += "\n\n" + "\n".join([head, *lines])
        if not recent and self.turns and self.turns[-1].note:
            intro += f"\n\nYour last answer could not be used: {self.turns[-1].note}"
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        pending_text = intro
        for i, turn in enumerate(recent):
            number = len(older) + i + 1
            label = f"Screenshot before step {number}:" if turn.image is not None else f"Before step {number}:"
            parts: list[dict[str, Any]] = [{"type": "text", "text": _join(pending_text, label)}]
            if turn.image is not None:
                parts.append({"type": "image", "image": turn.image})
            messages.append({"role": "user", "content": parts})
            messages.append({"role": "assistant", "content": turn.response.strip() or "(empty answer)"})
            pending_text = f"Your answer could not be used: {turn.note}" if turn.note else ""
        number = len(self.turns) + 1
        if image is None:
            messages.append({"role": "user", "content": [
                {"type": "text", "text": _join(pending_text, f"Step {number}:", current)}]})
            return messages
        messages.append({"role": "user", "content": [
            {"type": "text", "text": _join(pending_text, f"Current screenshot (step {number}):")},
            {"type": "image", "image": image},
            {"type": "text", "text": current},
        ]})
        return messages


def _join(*texts: str) -> str:
    return "\n\n".join(t for t in texts if t)
