"""A saved processor loads back as its own class: a Qwen2.5-VL processor was saved as a Qwen2-VL one."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def tiny_processor(tmp_path_factory):
    from mintgym.models.loading import load_processor
    from mintgym.models.tiny import build_tiny_vlm

    return load_processor(build_tiny_vlm(tmp_path_factory.mktemp("tiny"), vocab_size=256))


def _as(base: type, processor):
    """``processor``'s tokenizer, image processor and chat template in a processor of class ``base``."""
    from mintgym.models.loading import _image_only_processor_class

    return _image_only_processor_class(base)(image_processor=processor.image_processor,
                                             tokenizer=processor.tokenizer, video_processor=None,
                                             chat_template=processor.chat_template)


def test_a_qwen2_5_vl_processor_loads_back_as_a_qwen2_5_vl_processor(tiny_processor, tmp_path):
    from transformers import Qwen2_5_VLProcessor

    from mintgym.models.loading import load_processor, save_processor

    save_processor(_as(Qwen2_5_VLProcessor, tiny_processor), tmp_path)
    loaded = load_processor(tmp_path)
    assert isinstance(loaded, Qwen2_5_VLProcessor), type(loaded).__mro__
    assert loaded.chat_template == tiny_processor.chat_template


def test_a_processor_class_transformers_does_not_know_is_refused_in_one_line(tiny_processor, tmp_path):
    from transformers import Qwen2VLProcessor

    from mintgym.models.loading import save_processor

    class HomeMadeProcessor(_as(Qwen2VLProcessor, tiny_processor).__class__):
        pass

    with pytest.raises(TypeError, match=r"^save_processor: .*HomeMadeProcessor is not a transformers processor "
                                        r"class, so AutoProcessor could not load it back$"):
        save_processor(_as(HomeMadeProcessor, tiny_processor), tmp_path)
    assert not (tmp_path / "processor_config.json").exists()
