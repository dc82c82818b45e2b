"""The tiny Qwen2-VL builds locally and loads with the loaders that load real checkpoints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> str:
    from mintgym.models.tiny import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny"), seed=0)


def test_loads_with_auto_classes_as_a_qwen2_vl(built):
    from transformers import AutoConfig, AutoModelForImageTextToText, Qwen2VLForConditionalGeneration

    assert AutoConfig.from_pretrained(built).model_type == "qwen2_vl"
    model = AutoModelForImageTextToText.from_pretrained(built)
    assert isinstance(model, Qwen2VLForConditionalGeneration)
    direct = Qwen2VLForConditionalGeneration.from_pretrained(built)
    for (name, a), (_, b) in zip(model.state_dict().items(), direct.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    size = sum(f.stat().st_size for f in Path(built).iterdir())
    assert size < 5_000_000


def test_processor_loads_and_expands_image_tokens(built):
    from transformers import AutoProcessor, Qwen2VLProcessor

    from mintgym.models.loading import load_processor

    processor = load_processor(built)
    assert isinstance(processor, Qwen2VLProcessor)
    try:  # with torchvision AutoProcessor itself works; without it, it fails only for the video processor
        assert isinstance(AutoProcessor.from_pretrained(built), Qwen2VLProcessor)
    except ImportError as err:
        assert "torchvision" in str(err).lower()
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "click OK"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text.endswith("<|im_start|>assistant\n")
    assert "<|vision_start|><|image_pad|><|vision_end|>click OK<|im_end|>" in text
    image = np.zeros((120, 200, 3), dtype=np.uint8)
    enc = processor(text=[text], images=[image], return_tensors="pt")
    grid = enc["image_grid_thw"][0]
    pad_id = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert int((enc["input_ids"][0] == pad_id).sum()) == int(grid.prod()) // 4
    assert 4 <= int(grid.prod()) // 4 <= 64  # min/max pixels keep images small


def test_tokenizer_has_qwen_special_tokens_and_round_trips_actions(built):
    from mintgym.models.loading import load_processor
    from mintgym.models.tiny import SPECIAL_TOKENS

    tok = load_processor(built).tokenizer
    ids = [tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS]
    assert len(set(ids)) == len(SPECIAL_TOKENS) and tok.unk_token_id not in ids
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    for text in ('click(x=120, y=48)', 'type(text="héllo wörld")', "pyautogui.click(3, 4)"):
        assert tok.decode(tok(text)["input_ids"]) == text
    assert len(tok("click(x=120, y=48)")["input_ids"]) < len("click(x=120, y=48)")  # merges were learned


def test_same_seed_same_weights_other_seed_other_weights(built, tmp_path):
    from safetensors.torch import load_file

    from mintgym.models.tiny import build_tiny_vlm

    again = load_file(Path(build_tiny_vlm(tmp_path / "a", seed=0)) / "model.safetensors")
    other = load_file(Path(build_tiny_vlm(tmp_path / "b", seed=1)) / "model.safetensors")
    first = load_file(Path(built) / "model.safetensors")
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)


def test_build_tiny_model_command(tmp_path):
    import typer

    from mintgym.cli.serve_model import register

    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["build-tiny-model", str(tmp_path / "m"), "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert "tiny Qwen2-VL written to" in result.output
    assert (tmp_path / "m" / "model.safetensors").exists()


def test_rejects_heads_that_do_not_split(tmp_path):
    from mintgym.models.tiny import build_tiny_vlm

    with pytest.raises(ValueError, match="heads"):
        build_tiny_vlm(tmp_path, hidden_size=60, num_heads=4)


def test_the_tiny_idefics3_loads_and_expands_each_image_to_four_tokens(tmp_path):
    """``architecture="idefics3"``: an Idefics3 whose processor loads through ``load_processor`` (no torchvision:
    its PIL image processor) and keeps ``image_seq_len``; its record names the architecture."""
    import json

    from transformers import AutoConfig, Idefics3ForConditionalGeneration, Idefics3Processor

    from mintgym.models.loading import load_model, load_processor
    from mintgym.models.tiny import BUILD_FILE, build_tiny_vlm

    path = build_tiny_vlm(tmp_path / "m", architecture="idefics3", vocab_size=256)
    config = AutoConfig.from_pretrained(path)
    text = config.text_config
    assert config.model_type == "idefics3" and text.hidden_size // text.num_attention_heads == 32
    assert isinstance(load_model(path), Idefics3ForConditionalGeneration)
    processor = load_processor(path)
    assert isinstance(processor, Idefics3Processor) and processor.tokenizer.eos_token == "<end_of_utterance>"
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "click OK"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text == "User:<image>click OK<end_of_utterance>\nAssistant:"
    images = [np.zeros((120, 200, 3), dtype=np.uint8), np.full((30, 20, 3), 200, dtype=np.uint8)]
    enc = processor(text=[text.replace("<image>", "<image><image>")], images=[images], return_tensors="pt")
    assert int((enc["input_ids"][0] == config.image_token_id).sum()) == 2 * 4
    assert tuple(enc["pixel_values"].shape) == (1, 2, 3, 32, 32)
    record = json.loads((Path(path) / BUILD_FILE).read_text())
    assert record["architecture"] == "idefics3" and record["hidden_size"] == 128 and "min_pixels" not in record


def test_a_qwen2_vl_record_names_no_architecture_as_before():
    """Tiny Qwen2-VLs built before the option existed still match the options a run asks for."""
    from mintgym.models.tiny import build_options

    assert build_options(0, vocab_size=256) == build_options(0, architecture="qwen2_vl", vocab_size=256) == {
        "seed": 0, "hidden_size": 64, "num_layers": 2, "num_heads": 4, "vision_depth": 1, "vision_embed_dim": 32,
        "vision_num_heads": None, "vocab_size": 256, "min_pixels": 28 * 28 * 4, "max_pixels": 28 * 28 * 64,
        "initializer_range": 0.02}


def test_rejects_an_unknown_architecture_and_qwen_options_on_idefics3(tmp_path):
    from mintgym.models.tiny import build_tiny_vlm

    with pytest.raises(ValueError, match=r"^build_tiny_vlm: architecture 'llava' is not one of \['qwen2_vl', "
                                         r"'idefics3'\]$"):
        build_tiny_vlm(tmp_path, architecture="llava")
    with pytest.raises(ValueError, match="^build_tiny_vlm: max_pixels apply to qwen2_vl only, not idefics3$"):
        build_tiny_vlm(tmp_path, architecture="idefics3", max_pixels=1000)
    assert not any(tmp_path.iterdir())


def test_building_shows_no_progress_bar(tmp_path, capfd):
    """`mintgym train` builds the tiny model on first use: transformers' "Writing model shards" bar would land
    among the run's start-up lines."""
    from mintgym.models.tiny import build_tiny_vlm

    build_tiny_vlm(tmp_path / "m", seed=0)
    assert "Writing model shards" not in capfd.readouterr().err
