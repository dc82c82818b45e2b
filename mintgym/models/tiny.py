"""A tiny Qwen2-VL with random weights, built locally: the test and quickstart model.

It is a real ``Qwen2VLForConditionalGeneration`` (the architecture of Qwen2-VL and UI-TARS) with a tiny
text and vision tower, a byte-level BPE tokenizer trained here on a small built-in corpus, the Qwen2-VL
special tokens and a chat template, and a ``Qwen2VLProcessor``. With ``architecture="idefics3"`` it is a tiny
``Idefics3ForConditionalGeneration`` instead (Llama text, SigLIP vision, 32x32 images of 4 tokens each), with
the same tokenizer plus Idefics3's image tokens and chat layout: the VLM that vLLM's CPU build loads (its
Qwen2-VL needs torchvision; docs/bring-your-model.md, "vLLM on CPU"). Everything is written with
``save_pretrained``, so the loading code that loads real checkpoints loads it too::

    >>> from mintgym.models.tiny import build_tiny_vlm  # doctest: +SKIP
    >>> path = build_tiny_vlm("/tmp/tiny-vlm")  # doctest: +SKIP
    >>> from transformers import AutoProcessor, AutoModelForImageTextToText  # doctest: +SKIP
    >>> processor = AutoProcessor.from_pretrained(path)  # doctest: +SKIP
    >>> model = AutoModelForImageTextToText.from_pretrained(path)  # doctest: +SKIP

No network is used: nothing is downloaded.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mintgym.models.loading import quiet_progress

#: The Qwen2-VL special tokens, in the order Qwen2-VL numbers them (after the BPE vocabulary).
SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
)

#: A chat template with Qwen2-VL's layout: ``<|im_start|>role\n...<|im_end|>\n``, each image as
#: ``<|vision_start|><|image_pad|><|vision_end|>`` (the processor expands the pad to the image's tokens).
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or 'image' in part or 'image_url' in part %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'video' or 'video' in part %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in part %}{{ part['text'] }}"
    "{% endif %}"
    "{% endfor %}{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_ACTIONS = (
    "click(x={x}, y={y})", "double_click(x={x}, y={y})", "move(x={x}, y={y})",
    "drag(x1={x}, y1={y}, x2={y}, y2={x})", "scroll(x={x}, y={y}, dx=0, dy={y})", "type(text=\"hello world\")",
    "key(keys=[\"ctrl\", \"c\"])", "key(keys=[\"enter\"])", "tap(x={x}, y={y})", "long_press(x={x}, y={y})",
    "swipe(x1={x}, y1={y}, x2={x}, y2=0, duration=0.3)", "back()", "home()", "open_app(app=\"Settings\")",
    "goto(url=\"http://127.0.0.1:8000/index.html\")", "python(code=\"print(1 + 2)\")",
    "zoom(x1={x}, y1={y}, x2={y}, y2={x})", "wait(seconds=1)", "done(answer=\"42\")",
    "pyautogui.click({x}, {y})", '{{"type": "click", "x": {x}, "y": {y}}}',
)

_PROMPTS = (
    "You control a computer through its screen. Look at the screenshot and choose the next action.",
    "Thought: the button is on the left of the page, so I will click it.",
    "Action:", "Task: open the settings app and turn on the wifi.",
    "Task: type the name of the largest city into the search box and press enter.",
    "Task: count the red shapes in the image and answer with a number.",
    "The answer is", "Instruction:", "Observation:", "Available actions:",
    "Respond with exactly one action in the form name(arg=value, ...).",
)


def _corpus() -> list[str]:
    lines = list(_PROMPTS)
    for i, action in enumerate(_ACTIONS):
        for x, y in ((12, 48), (120, 7), (640, 360), (999, 1000), (3 * i, 17 * i)):
            lines.append(action.format(x=x, y=y))
    lines.append("0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ .,;:!?()[]{}<>=+-*/\"'_\n")
    return lines


def build_tokenizer(vocab_size: int = 512):
    """A byte-level BPE tokenizer trained on the built-in corpus, with Qwen2-VL's special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=1, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(_corpus(), trainer=trainer)
    bpe.add_special_tokens(list(SPECIAL_TOKENS))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None,
        extra_special_tokens={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
                              "vision_bos_token": "<|vision_start|>", "vision_eos_token": "<|vision_end|>"},
        clean_up_tokenization_spaces=False, model_max_length=32768,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


#: The architectures :func:`build_tiny_vlm` builds.
ARCHITECTURES = ("qwen2_vl", "idefics3")

#: Idefics3's chat layout (``User:<image>text<end_of_utterance>\nAssistant:``), written for the tiny model.
IDEFICS3_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] | capitalize }}:"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or 'image' in part or 'image_url' in part %}<image>"
    "{% elif 'text' in part %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)
#: Idefics3's image tokens, added to the tiny tokenizer.
IDEFICS3_TOKENS = ("<image>", "<fake_token_around_image>", "<global-img>", "<end_of_utterance>")
#: The tiny Idefics3's image side (pixels) and patch size: each image is one 32x32 crop of 4x4 patches, which
#: the connector's pixel shuffle (scale factor 2) turns into 4 image tokens.
IDEFICS3_IMAGE_SIZE, IDEFICS3_PATCH_SIZE, IDEFICS3_SCALE_FACTOR = 32, 8, 2

#: Options whose default depends on the architecture (None in the signature).
_DEFAULTS = {
    # head size 16 on Qwen2-VL; 32 on Idefics3, the smallest vLLM's CPU attention takes
    "qwen2_vl": {"hidden_size": 64, "min_pixels": 28 * 28 * 4, "max_pixels": 28 * 28 * 64},
    "idefics3": {"hidden_size": 128},
}


def build_tiny_vlm(
    path: str | os.PathLike,
    seed: int = 0,
    *,
    architecture: str = "qwen2_vl",
    hidden_size: int | None = None,
    num_layers: int = 2,
    num_heads: int = 4,
    vision_depth: int = 1,
    vision_embed_dim: int = 32,
    vision_num_heads: int | None = None,
    vocab_size: int = 512,
    min_pixels: int | None = None,
    max_pixels: int | None = None,
    initializer_range: float = 0.02,
) -> str:
    """Build and save a tiny random-weight Qwen2-VL (or Idefics3) (model, tokenizer, processor) under ``path``.

    Args:
        path: directory to write (created if missing).
        seed: seed of the random weights; the same seed gives the same weights.
        architecture: ``qwen2_vl`` (default) or ``idefics3``.
        hidden_size, num_layers, num_heads: the text decoder's size (hidden size 64 for Qwen2-VL, 128 for
            Idefics3 by default).
        vision_depth, vision_embed_dim, vision_num_heads: the vision tower's size (Qwen2-VL: patch 14,
            spatial merge 2); heads default to one per 16 dims.
        vocab_size: BPE vocabulary size before the special tokens.
        min_pixels, max_pixels: Qwen2-VL's image processor's resize bounds (default: images become 4 to 64
            tokens); Idefics3's images are resized to one 32x32 crop, and these may not be given.
        initializer_range: the std of the random weights (Qwen2-VL's 0.02 by default). Tiny towers start
            nearly blind at 0.02: what an image adds to the last token's logits is too small for gradient
            descent to find in minutes; about 1/sqrt(hidden_size) lets a tiny model learn from pixels.

    Returns:
        ``path`` as a string.
    """
    options = build_options(seed, **{k: v for k, v in locals().items() if k not in ("path", "seed")})
    hidden_size = options["hidden_size"]
    if hidden_size % num_heads or (hidden_size // num_heads) % 4:
        raise ValueError(f"hidden_size {hidden_size} must split into {num_heads} heads of a size divisible by 4")
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    build = _build_idefics3 if options.get("architecture") == "idefics3" else _build_qwen2_vl
    build(out, **{k: v for k, v in options.items() if k != "architecture"})
    (out / BUILD_FILE).write_text(json.dumps(options, sort_keys=True))
    return str(out)


def _build_qwen2_vl(out: Path, *, seed: int, hidden_size: int, num_layers: int, num_heads: int, vision_depth: int,
                    vision_embed_dim: int, vision_num_heads: int | None, vocab_size: int, min_pixels: int,
                    max_pixels: int, initializer_range: float) -> None:
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    from mintgym.models.loading import _image_only_processor_class, save_processor

    tokenizer = build_tokenizer(vocab_size)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    half = hidden_size // num_heads // 2
    mrope = [half - 2 * (half // 3), half // 3, half // 3]
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": len(tokenizer), "hidden_size": hidden_size, "intermediate_size": 2 * hidden_size,
            "num_hidden_layers": num_layers, "num_attention_heads": num_heads,
            "num_key_value_heads": max(1, num_heads // 2), "max_position_embeddings": 4096,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": mrope},
            "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"], "initializer_range": initializer_range,
        },
        vision_config={
            "depth": vision_depth, "embed_dim": vision_embed_dim, "hidden_size": hidden_size,
            "num_heads": vision_num_heads or max(1, vision_embed_dim // 16), "mlp_ratio": 2, "patch_size": 14,
            "spatial_merge_size": 2, "temporal_patch_size": 2, "initializer_range": initializer_range,
        },
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False, initializer_range=initializer_range,
    )
    torch.manual_seed(seed)
    model = Qwen2VLForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = [ids["<|im_end|>"], ids["<|endoftext|>"]]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.bos_token_id = ids["<|endoftext|>"]
    model.generation_config.do_sample = False
    with quiet_progress():  # no bar among a training run's start-up lines (it builds the model on first use)
        model.save_pretrained(out)

    image_processor = Qwen2VLImageProcessorPil(min_pixels=min_pixels, max_pixels=max_pixels,
                                               patch_size=14, merge_size=2, temporal_patch_size=2)
    # No video processor: it needs torchvision, and these models see screenshots only.
    processor = _image_only_processor_class(Qwen2VLProcessor)(
        image_processor=image_processor, tokenizer=tokenizer, video_processor=None, chat_template=CHAT_TEMPLATE)
    save_processor(processor, out)


def _build_idefics3(out: Path, *, seed: int, hidden_size: int, num_layers: int, num_heads: int, vision_depth: int,
                    vision_embed_dim: int, vision_num_heads: int | None, vocab_size: int,
                    initializer_range: float) -> None:
    import torch
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    tokenizer = build_tokenizer(vocab_size)
    tokenizer.add_special_tokens({"additional_special_tokens": list(IDEFICS3_TOKENS)})
    tokenizer.eos_token = "<end_of_utterance>"
    image, end, pad = tokenizer.convert_tokens_to_ids(["<image>", "<end_of_utterance>", "<|endoftext|>"])
    config = Idefics3Config(
        text_config={"model_type": "llama", "vocab_size": len(tokenizer), "hidden_size": hidden_size,
                     "intermediate_size": 2 * hidden_size, "num_hidden_layers": num_layers,
                     "num_attention_heads": num_heads, "num_key_value_heads": max(1, num_heads // 2),
                     "max_position_embeddings": 4096, "pad_token_id": pad, "eos_token_id": end, "bos_token_id": pad,
                     "initializer_range": initializer_range},
        vision_config={"hidden_size": vision_embed_dim, "intermediate_size": 2 * vision_embed_dim,
                       "num_hidden_layers": vision_depth,
                       "num_attention_heads": vision_num_heads or max(1, vision_embed_dim // 16),
                       "image_size": IDEFICS3_IMAGE_SIZE, "patch_size": IDEFICS3_PATCH_SIZE,
                       "initializer_range": initializer_range},
        scale_factor=IDEFICS3_SCALE_FACTOR, image_token_id=image, tie_word_embeddings=False,
        initializer_range=initializer_range, pad_token_id=pad)
    torch.manual_seed(seed)
    model = Idefics3ForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = [end, pad]
    model.generation_config.pad_token_id = pad
    model.generation_config.bos_token_id = pad
    model.generation_config.do_sample = False
    with quiet_progress():
        model.save_pretrained(out)
    side = {"longest_edge": IDEFICS3_IMAGE_SIZE}
    images = Idefics3ImageProcessorPil(do_image_splitting=False, size=side, max_image_size=side)
    tokens = (IDEFICS3_IMAGE_SIZE // IDEFICS3_PATCH_SIZE) ** 2 // IDEFICS3_SCALE_FACTOR ** 2
    # Idefics3's processor has no video processor: its own save_pretrained keeps image_seq_len.
    Idefics3Processor(image_processor=images, tokenizer=tokenizer, image_seq_len=tokens,
                      chat_template=IDEFICS3_CHAT_TEMPLATE).save_pretrained(out)


#: What a tiny model was built with, next to its weights: a run can tell a cached model from another one.
BUILD_FILE = "mintgym_tiny.json"


def build_options(seed: int = 0, **options: Any) -> dict[str, Any]:
    """The seed and every option of :func:`build_tiny_vlm` that applies to its architecture, defaults filled in
    (what ``BUILD_FILE`` holds). A Qwen2-VL's record names no architecture, as before the option existed, so
    that tiny models built then still match."""
    import inspect

    defaults = {name: p.default for name, p in inspect.signature(build_tiny_vlm).parameters.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY}
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise TypeError(f"build_tiny_vlm got unknown option(s) {unknown}")
    chosen = {**defaults, **options}
    architecture = chosen.pop("architecture")
    if architecture not in ARCHITECTURES:
        raise ValueError(f"build_tiny_vlm: architecture {architecture!r} is not one of {list(ARCHITECTURES)}")
    if architecture != "qwen2_vl":
        given = sorted(k for k in ("min_pixels", "max_pixels") if chosen.pop(k) is not None)
        if given:
            raise ValueError(f"build_tiny_vlm: {', '.join(given)} apply to qwen2_vl only, not {architecture}")
        chosen["architecture"] = architecture
    for name, value in _DEFAULTS[architecture].items():
        if chosen[name] is None:
            chosen[name] = value
    return {"seed": seed, **chosen}


def main(path: str, seed: int = 0) -> None:
    """CLI body of ``mintgym build-tiny-model PATH``: build and print where it went."""
    written = build_tiny_vlm(path, seed=seed)
    size = sum(f.stat().st_size for f in Path(written).rglob("*") if f.is_file())
    print(f"tiny Qwen2-VL written to {written} ({size / 1e6:.1f} MB)")
