"""The vllm engine without a GPU: its import guard and the prompts and sampling params it builds."""

from __future__ import annotations

import importlib.util

import pytest
from PIL import Image

from mintgym.inference import make_engine
from mintgym.inference.vllm import build_prompt, sampling_kwargs

HAS_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.mark.skipif(HAS_VLLM, reason="vllm is installed here")
def test_missing_vllm_says_how_to_get_it(tiny_model_path):
    with pytest.raises(ImportError, match=r"mintgym\[vllm\].*make_engine\('hf'"):
        make_engine("vllm", model_path=tiny_model_path)


def test_prompt_is_the_hf_engines_chat_text_with_images_in_order(hf_engine, make_request, screenshot):
    request = make_request(0)
    request.messages[0]["content"].append({"type": "image", "image": screenshot[:60]})
    prompt = build_prompt(hf_engine.processor, request)
    images = prompt["multi_modal_data"]["image"]
    assert [im.size for im in images] == [(200, 120), (200, 60)] and all(isinstance(i, Image.Image) for i in images)
    assert prompt["prompt"].count("<|vision_start|><|image_pad|><|vision_end|>") == 2
    assert prompt["prompt"].endswith("<|im_start|>assistant\n")
    # the same text the hf engine tokenizes: same prompt token ids once the processor expands the pads
    enc = hf_engine.processor(text=[prompt["prompt"]], images=images, return_tensors="pt")
    [g] = hf_engine.generate([request])
    assert enc["input_ids"][0].tolist() == g.prompt_token_ids
    assert "multi_modal_data" not in build_prompt(hf_engine.processor, make_request(1, image=False))


def test_sampling_kwargs(make_request):
    kw = sampling_kwargs(make_request(0, seed=3, temperature=0.5, top_p=0.9, stop=("\n",), max_new_tokens=7).sampling)
    assert kw == {"n": 1, "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "logprobs": 0,
                  "skip_special_tokens": True, "seed": 3, "stop": ["\n"]}
    assert "seed" not in sampling_kwargs(make_request(0, seed=None).sampling)
    assert sampling_kwargs(make_request(0, top_logprobs=3).sampling)["logprobs"] == 3
