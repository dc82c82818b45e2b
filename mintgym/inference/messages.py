"""Check OpenAI-style chat messages and split them into chat-template messages and images."""

from __future__ import annotations

from typing import Any

from PIL import Image

from mintgym.inference.images import DEFAULT_MAX_IMAGE_PIXELS, load_image

ROLES = ("system", "user", "assistant")


def _image_of(part: dict[str, Any]) -> Any:
    if part.get("type") == "image_url" or "image_url" in part:
        ref = part.get("image_url")
        url = ref.get("url") if isinstance(ref, dict) else ref
        if not isinstance(url, str):
            raise ValueError("an image_url part needs image_url.url, a data URL string")
        return url
    if "image" not in part:
        raise ValueError("an image part needs an 'image' field (array, PIL image or data URL)")
    return part["image"]


def split_messages(
    messages: Any, max_image_pixels: int | None = DEFAULT_MAX_IMAGE_PIXELS
) -> tuple[list[dict[str, Any]], list[Image.Image]]:
    """Validate ``messages``; return them with each image as ``{"type": "image"}`` and the images in order.

    Raises:
        ValueError: (or :class:`~mintgym.inference.images.ImageError`) naming what is wrong.
    """
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list of {'role': ..., 'content': ...}")
    out: list[dict[str, Any]] = []
    images: list[Image.Image] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ValueError(f"messages[{i}] must be an object, got {type(message).__name__}")
        role = message.get("role")
        if role not in ROLES:
            raise ValueError(f"messages[{i}].role must be one of {', '.join(ROLES)}, got {role!r}")
        content = message.get("content")
        if isinstance(content, str):
            out.append({"role": role, "content": [{"type": "text", "text": content}]})
            continue
        if not isinstance(content, list):
            raise ValueError(f"messages[{i}].content must be a string or a list of parts")
        parts = []
        for j, part in enumerate(content):
            if not isinstance(part, dict):
                raise ValueError(f"messages[{i}].content[{j}] must be an object")
            kind = part.get("type")
            if kind == "text" or (kind is None and "text" in part):
                if not isinstance(part.get("text"), str):
                    raise ValueError(f"messages[{i}].content[{j}].text must be a string")
                parts.append({"type": "text", "text": part["text"]})
            elif kind in ("image", "image_url") or (kind is None and ("image" in part or "image_url" in part)):
                try:
                    images.append(load_image(_image_of(part), max_image_pixels))
                except ValueError as err:
                    raise type(err)(f"messages[{i}].content[{j}]: {err}") from None
                parts.append({"type": "image"})
            else:
                raise ValueError(f"messages[{i}].content[{j}] has unsupported type {kind!r} (text, image_url, image)")
        out.append({"role": role, "content": parts})
    return out, images
