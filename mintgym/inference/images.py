"""Images in prompts: numpy arrays, PIL images and data URLs, checked and converted one way."""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

import numpy as np
from PIL import Image

#: Largest image accepted by default (pixels); larger ones are refused, not silently shrunk.
DEFAULT_MAX_IMAGE_PIXELS = 20_000_000


class ImageError(ValueError):
    """An image in a prompt that cannot be decoded or is not an image."""


class ImageTooLarge(ImageError):
    """An image with more pixels than allowed."""


def _check_size(width: int, height: int, max_pixels: int | None) -> None:
    if max_pixels is not None and width * height > max_pixels:
        raise ImageTooLarge(
            f"image of {width}x{height} = {width * height / 1e6:.1f} MP exceeds the limit of "
            f"{max_pixels / 1e6:.1f} MP"
        )


def load_image(image: Any, max_pixels: int | None = DEFAULT_MAX_IMAGE_PIXELS) -> Image.Image:
    """An RGB PIL image from a numpy array (H, W, 3) uint8, a PIL image or a ``data:image/...;base64,`` URL."""
    if isinstance(image, Image.Image):
        _check_size(*image.size, max_pixels)
        return image if image.mode == "RGB" else image.convert("RGB")
    if isinstance(image, np.ndarray):
        if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in (3, 4):
            raise ImageError(f"an image array must be uint8 (H, W, 3), got {image.dtype} {image.shape}")
        _check_size(image.shape[1], image.shape[0], max_pixels)
        return Image.fromarray(np.ascontiguousarray(image[..., :3]), mode="RGB")
    if isinstance(image, str):
        return _load_data_url(image, max_pixels)
    raise ImageError(f"cannot read an image from {type(image).__name__}: pass a numpy array, PIL image or data URL")


def _load_data_url(url: str, max_pixels: int | None) -> Image.Image:
    if not url.startswith("data:"):
        shown = url[:60] + ("..." if len(url) > 60 else "")
        raise ImageError(f"only data URLs (data:image/png;base64,...) are accepted, got {shown!r}")
    header, sep, payload = url.partition(",")
    if not sep or ";base64" not in header:
        raise ImageError("an image data URL must be base64: data:image/<format>;base64,<data>")
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ImageError("the image data URL holds invalid base64") from None
    try:
        image = Image.open(io.BytesIO(raw))
    except (Image.UnidentifiedImageError, OSError) as err:
        raise ImageError(f"the image data URL does not hold a readable image: {err}") from None
    _check_size(*image.size, max_pixels)  # from the header, before decoding the pixels
    try:
        image.load()
    except (OSError, Image.DecompressionBombError) as err:
        raise ImageError(f"the image in the data URL is corrupt: {err}") from None
    return image if image.mode == "RGB" else image.convert("RGB")


def to_data_url(image: Any, fmt: str = "PNG", quality: int = 90) -> str:
    """Encode an image (array, PIL or data URL, passed through) as a base64 PNG or JPEG data URL."""
    if isinstance(image, str) and image.startswith("data:"):
        return image
    pil = load_image(image, max_pixels=None)
    fmt = fmt.upper()
    if fmt not in ("PNG", "JPEG"):
        raise ValueError(f"image format must be PNG or JPEG, got {fmt!r}")
    buf = io.BytesIO()
    pil.save(buf, format=fmt, **({"quality": quality} if fmt == "JPEG" else {}))
    return f"data:image/{fmt.lower()};base64," + base64.b64encode(buf.getvalue()).decode("ascii")
