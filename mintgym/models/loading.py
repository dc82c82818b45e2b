"""Load a transformers VLM and its processor from a local directory (a real checkpoint or the tiny one).

``AutoProcessor`` builds a Qwen2-VL processor's *video* processor too, which in transformers 5 needs
torchvision. Where torchvision is missing (the CPU test machines: PyPI's torchvision wheels are CUDA
builds), :func:`load_processor` falls back to the same processor class without a video processor; images
and text are processed by the very same code either way.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def quiet_progress() -> Iterator[None]:
    """Transformers' progress bars off meanwhile (a run's log gets no bar per checkpoint loaded or written)."""
    from transformers.utils import logging

    was = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            logging.enable_progress_bar()


def _image_only_processor_class(base: type) -> type:
    class ImageOnlyProcessor(base):  # type: ignore[misc, valid-type]
        """``base`` with no video processor (torchvision is not installed)."""

        def check_argument_for_proper_class(self, argument_name, argument):
            if argument is None and argument_name == "video_processor":
                return None
            return super().check_argument_for_proper_class(argument_name, argument)

    ImageOnlyProcessor.__name__ = base.__name__
    ImageOnlyProcessor.__qualname__ = base.__qualname__
    return ImageOnlyProcessor


def load_processor(path: str | os.PathLike) -> Any:
    """The checkpoint's processor (tokenizer + image processor + chat template)."""
    import transformers
    from transformers import AutoImageProcessor, AutoProcessor, AutoTokenizer

    try:
        return AutoProcessor.from_pretrained(path)
    except ImportError as err:
        if "torchvision" not in str(err).lower():
            raise
    config_file = Path(path) / "processor_config.json"
    name = json.loads(config_file.read_text()).get("processor_class") if config_file.exists() else None
    base = getattr(transformers, name or "", None)
    if base is None:
        raise ImportError(f"cannot load the processor of {path} without torchvision (processor_class={name!r})")
    template_file = Path(path) / "chat_template.jinja"
    template = template_file.read_text() if template_file.exists() else None
    tokenizer = AutoTokenizer.from_pretrained(path)
    image_processor = AutoImageProcessor.from_pretrained(path)
    return _image_only_processor_class(base)(image_processor=image_processor, tokenizer=tokenizer,
                                              video_processor=None, chat_template=template)


def load_model(path: str | os.PathLike, dtype: Any = None, device: str = "cpu") -> Any:
    """The checkpoint's image-text-to-text model, in eval mode, float32 on CPU by default."""
    import torch
    from transformers import AutoModelForImageTextToText

    with quiet_progress():
        model = AutoModelForImageTextToText.from_pretrained(path, dtype=dtype or torch.float32)
    return model.to(device).eval()


def save_processor(processor: Any, path: str | os.PathLike) -> None:
    """Save a processor so that ``AutoProcessor.from_pretrained`` (and :func:`load_processor`) read it back as its
    own class (``Qwen2VLProcessor``, ``Qwen2_5_VLProcessor`` ...)."""
    import transformers

    name = type(processor).__name__  # the class wrapped by _image_only_processor_class keeps its base's name
    if not isinstance(processor, getattr(transformers, name, ())):
        raise TypeError(f"save_processor: {type(processor).__qualname__} is not a transformers processor class, so "
                        "AutoProcessor could not load it back")
    out = Path(path)
    processor.tokenizer.save_pretrained(out)
    processor.image_processor.save_pretrained(out)
    (out / "processor_config.json").write_text(json.dumps({"processor_class": name}, indent=2) + "\n")
    if processor.chat_template:
        (out / "chat_template.jinja").write_text(processor.chat_template)
