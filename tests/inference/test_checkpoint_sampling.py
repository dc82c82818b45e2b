"""A checkpoint whose generation_config.json sets its own sampling (a repetition penalty, top_k, n-gram bans, a
minimum length): the hf engine samples from the unpenalized distribution the trainer recomputes, and the
logprobs it reports are that distribution's."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
import torch

from mintgym.inference.hf import HFEngine
from mintgym.inference.logprobs import _mm_token_types, mask_logits, suppressed_token_ids
from tests.inference.conftest import sampler_vs_recompute_gap

#: What a released checkpoint's generation_config.json may hold, beyond its special tokens.
CHECKPOINT_SAMPLING = {"do_sample": True, "temperature": 0.3, "top_k": 5, "top_p": 0.8, "repetition_penalty": 1.3,
                       "no_repeat_ngram_size": 2, "min_new_tokens": 8}


@pytest.fixture(scope="module")
def penalized_path(tiny_model_path, tmp_path_factory) -> str:
    """The tiny model's weights with a generation_config.json that sets :data:`CHECKPOINT_SAMPLING`."""
    path = tmp_path_factory.mktemp("penalized") / "tiny"
    shutil.copytree(tiny_model_path, path)
    config = json.loads((path / "generation_config.json").read_text())
    (path / "generation_config.json").write_text(json.dumps({**config, **CHECKPOINT_SAMPLING}))
    return str(path)


def requests_for(make_request, **sampling):
    return [make_request(i, seed=20 + i, image=i != 1, max_new_tokens=12, **sampling) for i in range(3)]


def test_sampler_logprobs_equal_the_trainer_recompute_under_a_checkpoint_penalty(penalized_path, make_request):
    diff = sampler_vs_recompute_gap(HFEngine(penalized_path, aligned_logprobs=False), requests_for(make_request))
    assert diff < 1e-4, diff  # 0.05 when the penalty acted before the sampler; ~5e-7 is float noise


def test_the_tokens_are_those_of_the_unpenalized_distribution(tiny_model_path, penalized_path, make_request,
                                                              hf_engine):
    penalized = HFEngine(penalized_path)
    for sampling in ({"temperature": 1.0}, {"temperature": 0.7, "top_p": 0.9}):
        requests = requests_for(make_request, **sampling)
        got, plain = penalized.generate(requests), hf_engine.generate(requests)
        # the same weights and seeds: the same tokens and logprobs as the checkpoint without the settings
        assert [g.response_token_ids for g in got] == [g.response_token_ids for g in plain]
        assert [g.response_logprobs for g in got] == [g.response_logprobs for g in plain]
    # greedy: every token is the argmax of the trainer's own logits (placeholders masked), repeats included
    requests = requests_for(make_request, temperature=0.0)
    suppressed = torch.tensor(suppressed_token_ids(penalized.model))
    for request, g in zip(requests, penalized.generate(requests), strict=True):
        seq = penalized.sequence_inputs(request.messages, g.response_token_ids)
        ids = torch.tensor([seq.token_ids])
        extra = {"pixel_values": seq.pixel_values, "image_grid_thw": seq.image_grid_thw} \
            if seq.pixel_values is not None else {}
        with torch.no_grad():
            logits = penalized.model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False,
                                     mm_token_type_ids=_mm_token_types(penalized.model, ids),
                                     **extra).logits[0, seq.prompt_length - 1:-1]
        assert g.response_token_ids == mask_logits(logits, suppressed).argmax(-1).tolist()
    # the model keeps its checkpoint's settings (a trainer sharing it saves them as they were)
    assert penalized.model.generation_config.repetition_penalty == 1.3
    assert penalized.model.generation_config.no_repeat_ngram_size == 2


def test_the_ignored_settings_are_named_once_at_load(penalized_path, tiny_model_path, caplog):
    with caplog.at_level(logging.WARNING, logger="mintgym.inference.checkpoint_sampling"):
        HFEngine(penalized_path)
    [record] = caplog.records
    assert "hf engine" in record.message and "repetition_penalty=1.3" in record.message
    assert "no_repeat_ngram_size=2" in record.message and "top_k=5" in record.message
    assert "eos_token_id" not in record.message
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mintgym.inference.checkpoint_sampling"):
        HFEngine(tiny_model_path)
    assert not caplog.records


def test_ignored_settings_leave_out_special_tokens_and_defaults():
    from transformers import GenerationConfig

    from mintgym.inference.checkpoint_sampling import ignored_settings

    config = GenerationConfig(repetition_penalty=1.05, top_k=1, top_p=1.0, eos_token_id=[2, 3], pad_token_id=0,
                              do_sample=False, output_attentions=False, suppress_tokens=[7])
    assert ignored_settings(config) == {"repetition_penalty": 1.05, "suppress_tokens": [7], "top_k": 1}
