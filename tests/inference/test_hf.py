"""The transformers engine on the tiny Qwen2-VL: batching, seeds, logprobs aligned with the trainer's."""

from __future__ import annotations

import asyncio
import math
import threading

import pytest
import torch

from mintgym.inference import GenerationRequest, SamplingParams, make_engine
from mintgym.inference.hf import HFEngine
from mintgym.inference.images import ImageTooLarge
from mintgym.inference.logprobs import (
    _mm_token_types,
    mask_logits,
    sequence_logprobs,
    sequence_logprobs_and_entropy,
    suppressed_token_ids,
)
from tests.inference.conftest import sampler_vs_recompute_gap


def test_single_generation_has_consistent_fields(hf_engine, make_request):
    [g] = hf_engine.generate([make_request(0)])
    assert g.finish_reason in ("stop", "length")
    assert 1 <= len(g.response_token_ids) <= 10
    assert len(g.response_logprobs) == len(g.response_token_ids)
    assert all(math.isfinite(lp) and lp <= 0 for lp in g.response_logprobs)
    assert g.policy_version == hf_engine.policy_version == 0
    assert g.logprobs_source == "aligned"
    pad = hf_engine.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert g.prompt_token_ids.count(pad) > 0
    assert g.text == hf_engine.tokenizer.decode(g.response_token_ids, skip_special_tokens=True)
    assert {"queue", "ttft", "total"} <= set(g.timings)


def test_batch_of_four_with_images_matches_each_request_alone(hf_engine, make_request):
    requests = [make_request(0, seed=1), make_request(1, seed=2, image=False), make_request(2, seed=3),
                make_request(3, seed=4)]
    batch = hf_engine.generate(requests)
    assert len(batch) == 4
    for request, g in zip(requests, batch, strict=True):
        [alone] = hf_engine.generate([request])
        assert alone.response_token_ids == g.response_token_ids
        assert alone.prompt_token_ids == g.prompt_token_ids
        assert alone.response_logprobs == g.response_logprobs  # aligned: independent of the batch
    assert len({tuple(g.response_token_ids) for g in batch}) == 4


def test_seed_makes_sampling_deterministic(hf_engine, make_request):
    a = hf_engine.generate([make_request(0, seed=7, max_new_tokens=16)])[0]
    b = hf_engine.generate([make_request(0, seed=7, max_new_tokens=16)])[0]
    c = hf_engine.generate([make_request(0, seed=8, max_new_tokens=16)])[0]
    assert a.response_token_ids == b.response_token_ids and a.text == b.text
    assert c.response_token_ids != a.response_token_ids


def test_greedy_ignores_the_seed_and_tiny_top_p_is_greedy(hf_engine, make_request):
    greedy = [hf_engine.generate([make_request(0, seed=s, temperature=0.0)])[0].response_token_ids for s in (1, 2)]
    assert greedy[0] == greedy[1]
    nucleus = hf_engine.generate([make_request(0, seed=5, top_p=1e-6)])[0]
    assert nucleus.response_token_ids == greedy[0]


def test_aligned_logprobs_equal_the_trainer_recompute_exactly(hf_engine, make_request):
    requests = [make_request(i, seed=10 + i, image=i != 2, temperature=t) for i, t in enumerate((1.0, 0.7, 1.3))]
    gens = hf_engine.generate(requests)
    seqs = [hf_engine.sequence_inputs(r.messages, g.response_token_ids) for r, g in zip(requests, gens, strict=True)]
    for seq, g in zip(seqs, gens, strict=True):
        assert seq.token_ids[:seq.prompt_length] == g.prompt_token_ids
    temps = [r.sampling.temperature for r in requests]
    with torch.no_grad():
        recomputed = sequence_logprobs(hf_engine.model, seqs, temperature=temps)
    assert [lp.tolist() for lp in recomputed] == [g.response_logprobs for g in gens]
    # the trainer computes them with grad enabled: still bit-identical
    with_grad = sequence_logprobs(hf_engine.model, seqs, temperature=temps)
    assert with_grad[0].requires_grad
    assert [lp.detach().tolist() for lp in with_grad] == [g.response_logprobs for g in gens]


def test_right_padded_layout_is_exact_for_the_same_grouping(tiny_model_path, hf_engine, make_request):
    engine = make_engine("hf", model_path=tiny_model_path, logprob_layout="right_padded")
    requests = [make_request(i, seed=i, max_new_tokens=4 + 3 * i) for i in range(3)]
    gens = engine.generate(requests)
    seqs = [engine.sequence_inputs(r.messages, g.response_token_ids) for r, g in zip(requests, gens, strict=True)]
    with torch.no_grad():
        padded = sequence_logprobs(engine.model, seqs, layout="right_padded")
        alone = sequence_logprobs(engine.model, seqs, layout="per_sequence")
    assert [lp.tolist() for lp in padded] == [g.response_logprobs for g in gens]
    for a, b in zip(padded, alone, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


def test_the_entropy_is_that_of_the_whole_next_token_distribution(hf_engine, make_request):
    """The trainer's entropy bonus reads, beside each response token's logprob, the entropy of the model's
    distribution at that position (at the sampling temperature, vision placeholders at p = 0), computed here
    again from the model's raw logits; its logprobs are sequence_logprobs' own."""
    requests = [make_request(0, seed=1, max_new_tokens=5, temperature=0.7), make_request(1, seed=2, max_new_tokens=3)]
    gens = hf_engine.generate(requests)
    seqs = [hf_engine.sequence_inputs(r.messages, g.response_token_ids) for r, g in zip(requests, gens, strict=True)]
    temps = [r.sampling.temperature for r in requests]
    scored = sequence_logprobs_and_entropy(hf_engine.model, seqs, temperature=temps)
    assert scored[0][1].requires_grad
    suppressed = torch.tensor(suppressed_token_ids(hf_engine.model))
    for (lp, entropy), seq, t, g in zip(scored, seqs, temps, gens, strict=True):
        assert lp.detach().tolist() == g.response_logprobs
        ids = torch.tensor([seq.token_ids])
        with torch.no_grad():
            extra = {"pixel_values": seq.pixel_values, "image_grid_thw": seq.image_grid_thw} \
                if seq.pixel_values is not None else {}
            logits = hf_engine.model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False,
                                     mm_token_type_ids=_mm_token_types(hf_engine.model, ids),
                                     **extra).logits[0, seq.prompt_length - 1:-1]
        probs = torch.softmax(mask_logits(logits, suppressed) / t, dim=-1).double()
        manual = -(probs * torch.log(probs.clamp(min=1e-300))).sum(-1)
        assert entropy.shape == lp.shape
        torch.testing.assert_close(entropy.detach().double(), manual, atol=1e-4, rtol=1e-4)
        assert bool(((entropy > 0) & (entropy < math.log(probs.shape[-1]))).all())


def test_sampler_logprobs_are_close_to_the_recompute(tiny_model_path, make_request):
    engine = make_engine("hf", model_path=tiny_model_path, aligned_logprobs=False)
    diff = sampler_vs_recompute_gap(engine, [make_request(i, seed=i, max_new_tokens=12) for i in range(4)])
    assert diff < 1e-4  # left padding + KV cache: float noise, not zero (measured ~5e-7 on CPU)


def test_per_request_max_new_tokens_in_one_batch(hf_engine, make_request):
    short, long_ = hf_engine.generate([make_request(0, max_new_tokens=3), make_request(1, max_new_tokens=9)])
    for g, n in ((short, 3), (long_, 9)):
        assert g.finish_reason == "stop" or (g.finish_reason == "length" and len(g.response_token_ids) == n)


def test_stop_string_cuts_the_text(hf_engine, make_request):
    free = hf_engine.generate([make_request(0, temperature=0.0, max_new_tokens=16)])[0]
    stop = next((ch for ch in free.text[1:] if ch.isascii() and ch.isalnum()), None)
    if stop is None:
        pytest.skip("the random model produced no ASCII letter to stop on")
    stopped = hf_engine.generate([make_request(0, temperature=0.0, max_new_tokens=16, stop=(stop,))])[0]
    assert stopped.finish_reason == "stop"
    assert stopped.text == free.text[:free.text.find(stop)]
    assert stopped.response_token_ids == free.response_token_ids[:len(stopped.response_token_ids)]
    assert len(stopped.response_token_ids) < len(free.response_token_ids)


def test_update_weights_changes_outputs_and_version(tiny_model_path, make_request):
    engine = make_engine("hf", model_path=tiny_model_path)
    request = make_request(0, temperature=0.0, max_new_tokens=12)
    before = engine.generate([request])[0]
    state = {k: v.clone() for k, v in engine.model.state_dict().items()}
    generator = torch.Generator().manual_seed(0)
    perturbed = {k: v + 0.5 * torch.randn(v.shape, generator=generator) if v.is_floating_point() else v
                 for k, v in state.items()}
    engine.update_weights(1, perturbed)
    after = engine.generate([request])[0]
    assert engine.policy_version == after.policy_version == 1
    assert after.response_token_ids != before.response_token_ids
    engine.update_weights(2, state)
    assert engine.generate([request])[0].response_token_ids == before.response_token_ids
    with pytest.raises(ValueError, match="lacks 'lm_head.weight'"):
        engine.update_weights(3, {k: v for k, v in state.items() if k != "lm_head.weight"})
    assert engine.policy_version == 2


@pytest.mark.parametrize("change, problem", [
    (lambda s: s.update({"extra.weight": torch.zeros(1)}), r"has 'extra.weight', which the model has not"),
    (lambda s: s.pop("lm_head.weight"), r"lacks 'lm_head.weight'"),
    (lambda s: s.update({"lm_head.weight": s["lm_head.weight"][:, :-1]}), r"'lm_head.weight' has shape"),
    (lambda s: s.update({"lm_head.weight": "not a tensor"}), r"'lm_head.weight'"),
])
def test_a_failed_update_leaves_the_engine_exactly_as_it_was(tiny_model_path, change, problem):
    """The reviewer's s3: a strict load_state_dict copies every matching tensor before it raises, which left
    new weights in the model under the old version. Names and shapes are checked before any copy."""
    engine = make_engine("hf", model_path=tiny_model_path)
    before = {k: v.clone() for k, v in engine.model.state_dict().items()}
    state = {k: v + 1.0 for k, v in before.items()}
    change(state)
    with pytest.raises(ValueError, match=problem) as raised:
        engine.update_weights(1, state)
    assert "\n" not in str(raised.value) and "keeps version 0" in str(raised.value)
    assert engine.policy_version == 0
    assert all(torch.equal(v, before[k]) for k, v in engine.model.state_dict().items())


def test_concurrent_callers_get_the_same_answers(hf_engine, make_request):
    requests = [make_request(i, seed=i) for i in range(4)]
    expected = [g.response_token_ids for g in hf_engine.generate(requests)]
    results: dict[int, list[int]] = {}

    def call(i: int) -> None:
        results[i] = hf_engine.generate([requests[i]])[0].response_token_ids

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [results[i] for i in range(4)] == expected


async def test_agenerate(hf_engine, make_request):
    [g] = await hf_engine.agenerate([make_request(0, seed=3)])
    assert g.response_token_ids == hf_engine.generate([make_request(0, seed=3)])[0].response_token_ids


def test_bad_requests_raise_clear_errors(hf_engine, screenshot):
    import numpy as np

    with pytest.raises(ValueError, match="non-empty list"):
        hf_engine.generate([GenerationRequest([])])
    with pytest.raises(ValueError, match="role"):
        hf_engine.generate([GenerationRequest([{"role": "robot", "content": "hi"}])])
    huge = np.zeros((5000, 4100, 3), dtype=np.uint8)
    with pytest.raises(ImageTooLarge, match="20.5 MP"):
        hf_engine.generate([GenerationRequest([{"role": "user", "content": [{"type": "image", "image": huge}]}])])
    with pytest.raises(ValueError, match="data URLs"):
        hf_engine.generate([GenerationRequest([{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "http://example.com/a.png"}}]}])])
    with pytest.raises(ValueError, match="max_new_tokens"):
        SamplingParams(max_new_tokens=0)
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0)


def test_make_engine_names_the_known_engines():
    with pytest.raises(ValueError, match="hf, openai, vllm"):
        make_engine("tgi")


def test_vision_placeholders_are_never_sampled(tiny_model_path, make_request):
    from mintgym.inference.logprobs import suppressed_token_ids

    engine = make_engine("hf", model_path=tiny_model_path)
    state = {k: v.clone() for k, v in engine.model.state_dict().items()}
    norm = next(k for k in state if k.endswith("language_model.norm.weight"))
    state[norm].zero_()
    state[norm][0] = 1.0  # the final hidden state keeps one coordinate, of either sign
    head = state["lm_head.weight"]
    head.zero_()
    pad, start = engine.tokenizer.convert_tokens_to_ids(["<|image_pad|>", "<|vision_start|>"])
    head[pad, 0], head[start, 0] = 100.0, -100.0  # so a placeholder is always the model's favourite
    engine.update_weights(1, state)
    suppressed = set(suppressed_token_ids(engine.model))
    assert {pad, start} <= suppressed
    for temperature in (0.0, 1.0):
        [g] = engine.generate([make_request(0, temperature=temperature, max_new_tokens=6)])
        assert not suppressed & set(g.response_token_ids)
        assert all(math.isfinite(lp) for lp in g.response_logprobs)


async def test_a_prompt_over_max_model_len_overflows_alone_and_responses_stop_at_the_context(hf_engine,
                                                                                             make_request):
    """A prompt with no room left in ``max_model_len`` raises ContextOverflow (the agent's failure, as vLLM's
    refusal is), and only for its own caller: the requests batched with it are answered, each response
    stopping where the context ends."""
    from mintgym.errors import ContextOverflow
    from mintgym.inference.batching import RequestBatcher

    short = make_request(0, image=False, max_new_tokens=10)
    prompt = len(hf_engine.generate([short])[0].prompt_token_ids)
    engine = HFEngine(model=hf_engine.model, processor=hf_engine.processor, max_model_len=prompt + 3)
    long_ = GenerationRequest([{"role": "user", "content": "Task 0: click the OK button, twice over, now."}],
                              SamplingParams(max_new_tokens=10, seed=1))
    with pytest.raises(ContextOverflow, match=rf"request 0: its prompt of \d+ tokens leaves no room for a "
                                              rf"response in max_model_len={prompt + 3}"):
        engine.generate([long_])
    batcher = RequestBatcher(engine, max_batch_size=4, window_s=0.05)
    await batcher.start()
    try:
        results = await asyncio.gather(*(batcher.submit(r) for r in (short, long_, make_request(1, image=False))),
                                       return_exceptions=True)
    finally:
        await batcher.stop()
    assert list(batcher.batch_sizes) == [3]  # one shared call, which the long prompt failed
    assert isinstance(results[1], ContextOverflow)
    for g in (results[0], results[2]):
        assert len(g.prompt_token_ids) + len(g.response_token_ids) <= prompt + 3 and g.response_token_ids
    with pytest.raises(ValueError, match="max_model_len must be an integer >= 2, got 1"):
        HFEngine(model=hf_engine.model, processor=hf_engine.processor, max_model_len=1)
