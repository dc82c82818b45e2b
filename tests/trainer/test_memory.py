"""What a learner step holds in memory: logits of response positions only, a chunk at a time; activation
checkpointing; micro-batch graphs freed by their backward; the memory model of mintgym.trainer.memory."""

import weakref

import pytest
import torch

from mintgym.config import TrainConfig
from mintgym.inference.logprobs import (
    ResponseScorer,
    SequenceInput,
    _mm_token_types,
    mask_logits,
    sequence_logprobs,
    suppressed_token_ids,
)
from mintgym.models.loading import load_model, load_processor
from mintgym.trainer.learner import Learner
from mintgym.trainer.memory import (
    Architecture,
    Step,
    count_params,
    estimate,
    qwen25_vl_config,
    use_activation_checkpointing,
)
from tests.trainer.sharded_worker import fixed_batch
from tests.trainer.test_learner import _gradients_at_step


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from mintgym.models.tiny import build_tiny_vlm

    torch.set_num_threads(1)
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256)


class SavedTensors:
    """Bytes of the activations autograd keeps for backward passes (parameters left out; a storage saved twice
    counts once): ``live`` now, ``peak`` the most at once since entering."""

    def __init__(self, model: torch.nn.Module):
        self.params = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.counts: dict[int, int] = {}
        self.live = self.peak = 0

    def __enter__(self):
        self.hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda box: box.tensor)
        self.hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self.hooks.__exit__(*exc)

    def _pack(self, tensor: torch.Tensor):
        box = type("Box", (), {})()
        box.tensor = tensor.detach()  # not the tensor: an output saved by its own node would make a cycle
        ptr = tensor.untyped_storage().data_ptr()
        if ptr not in self.params:
            if not self.counts.get(ptr):
                self.live += tensor.untyped_storage().nbytes()
                self.peak = max(self.peak, self.live)
            self.counts[ptr] = self.counts.get(ptr, 0) + 1
            weakref.finalize(box, self._freed, ptr, tensor.untyped_storage().nbytes())
        return box

    def _freed(self, ptr: int, nbytes: int) -> None:
        self.counts[ptr] -= 1
        if not self.counts[ptr]:
            self.live -= nbytes


def _step_gradients(learner: Learner, batch) -> tuple[dict[str, torch.Tensor], SavedTensors]:
    """Every parameter's gradient as the optimizer steps on ``batch``, and the saved activations of the step."""
    grads = _gradients_at_step(learner)
    with SavedTensors(learner.model) as saved:
        learner.step(batch)
    return grads, saved


def _head_rows(model) -> list[int]:
    """Filled with the number of positions of every call of ``model``'s vocabulary projection."""
    rows: list[int] = []
    model.get_output_embeddings().register_forward_hook(lambda _m, _i, out: rows.append(out.shape[-2]))
    return rows


def _sequence(processor, response: int) -> SequenceInput:
    turn = fixed_batch(processor, sizes=(1,)).groups[0].samples[0].turns[0]
    vocab = len(processor.tokenizer) - 20
    ids = list(turn.prompt_token_ids) + [(7 * i) % vocab for i in range(response)]
    enc = processor.image_processor(images=[turn.images[0]], return_tensors="pt")
    return SequenceInput(ids, len(turn.prompt_token_ids), enc["pixel_values"], enc["image_grid_thw"])


def test_only_response_positions_meet_the_vocabulary_a_chunk_at_a_time(tiny):
    """The prompt (image tokens and all) never gets logits; the response gets them ``chunk`` positions at a time,
    in the forward and again in the backward's recompute; logprobs and gradients equal the full-logits ones."""
    model = load_model(tiny)
    seq = _sequence(load_processor(tiny), response=40)
    assert seq.prompt_length > 40  # the image alone is 16 tokens; the chat template adds the rest
    ids = torch.tensor([seq.token_ids])
    full = model(input_ids=ids, pixel_values=seq.pixel_values, image_grid_thw=seq.image_grid_thw,
                 mm_token_type_ids=_mm_token_types(model, ids)).logits[0]
    logp = torch.log_softmax(mask_logits(full, torch.tensor(suppressed_token_ids(model))), -1)
    expected = logp[seq.prompt_length - 1:-1].gather(-1, ids[0, seq.prompt_length:, None])[:, 0]
    expected.sum().backward()
    expected_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()

    rows = _head_rows(model)
    [chunked] = sequence_logprobs(ResponseScorer(model, chunk=16), [seq])
    assert rows == [16, 16, 8]  # the 40 response positions, never the prompt's
    chunked.sum().backward()
    assert rows[3:] == [8, 16, 16]  # rebuilt a chunk at a time in the backward (checkpointed)
    torch.testing.assert_close(chunked, expected, rtol=0, atol=1e-5)
    for name, param in model.named_parameters():
        torch.testing.assert_close(param.grad, expected_grads[name], rtol=1e-4, atol=1e-6, msg=name)


def test_a_chunk_below_one_position_is_refused(tiny):
    with pytest.raises(ValueError, match="logits chunk must be >= 1"):
        ResponseScorer(load_model(tiny), chunk=0)


def test_activation_checkpointing_keeps_the_gradient_and_saves_a_fraction_of_the_activations(tiny):
    batch = fixed_batch(load_processor(tiny))
    grads, saved = {}, {}
    for on in (False, True):
        learner = Learner(load_model(tiny), load_processor(tiny), TrainConfig(lr=1e-3, activation_checkpointing=on))
        assert learner.checkpointing is on
        grads[on], saved[on] = _step_gradients(learner, batch)
    assert grads[True].keys() == grads[False].keys() and len(grads[True]) > 40
    for name, grad in grads[False].items():
        torch.testing.assert_close(grads[True][name], grad, rtol=1e-5, atol=1e-7, msg=name)
    assert saved[True].peak < 0.35 * saved[False].peak, (saved[True].peak, saved[False].peak)


def test_activation_checkpointing_is_on_by_default_for_models_of_100m_parameters_only(tiny):
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    assert use_activation_checkpointing(load_model(tiny), None) is False
    config = Qwen2VLConfig(text_config={"hidden_size": 1024, "num_hidden_layers": 8, "vocab_size": 32000,
                                        "intermediate_size": 2816, "num_attention_heads": 8, "num_key_value_heads": 8},
                           vision_config={"depth": 2, "embed_dim": 256, "hidden_size": 1024, "num_heads": 4})
    with torch.device("meta"):
        big = Qwen2VLForConditionalGeneration(config)
    assert use_activation_checkpointing(big, None) is True
    assert all(layer.gradient_checkpointing for layer in big.model.language_model.layers)
    with torch.device("meta"):
        off = Qwen2VLForConditionalGeneration(config)
    assert use_activation_checkpointing(off, False) is False
    assert not any(layer.gradient_checkpointing for layer in off.model.language_model.layers)


def test_micro_batches_free_their_graphs_as_they_go_and_sum_to_the_batch_gradient(tiny):
    """One sequence per micro-batch: the same gradient as all five in one, a fifth or so of the saved activations
    at the peak, and nothing saved left once the step is done."""
    batch = fixed_batch(load_processor(tiny))
    grads, saved = {}, {}
    for micro_batch in (1, 5):
        learner = Learner(load_model(tiny), load_processor(tiny), TrainConfig(lr=1e-3, micro_batch=micro_batch))
        grads[micro_batch], saved[micro_batch] = _step_gradients(learner, batch)
        assert saved[micro_batch].live == 0
    for name, grad in grads[5].items():
        torch.testing.assert_close(grads[1][name], grad, rtol=1e-5, atol=1e-7, msg=name)
    assert saved[1].peak < 0.4 * saved[5].peak, (saved[1].peak, saved[5].peak)


def test_the_memory_model_counts_qwen25_vl_parameters_and_fits_3b_but_not_7b_on_one_80gb_gpu():
    """Parameter counts of Qwen2.5-VL-3B and -7B as published (3.75B, 8.29B); with float32 masters and Adam, 3B
    fits one 80 GB GPU only with checkpointing and chunked logits, 7B needs four GPUs sharded."""
    three, seven = (Architecture.of(qwen25_vl_config(n)) for n in ("Qwen2.5-VL-3B", "Qwen2.5-VL-7B"))
    assert round(three.params / 1e9, 2) == 3.75 and round(seven.params / 1e9, 2) == 8.29
    screen = {"prompt": 1700, "response": 100, "image_tokens": 1196}
    gb80 = 80 * 10**9
    assert estimate(three, Step(**screen)).total < gb80 < estimate(three, Step(**screen, checkpointing=False,
                                                                               chunked=False)).total
    assert estimate(seven, Step(**screen)).total > gb80 > estimate(seven, Step(**screen, gpus=4)).total


def test_the_memory_model_predicts_the_saved_activations_of_a_step(tiny):
    """The activation term against the saved tensors autograd actually holds for one sequence of the tiny model
    (float32, no checkpointing), within 35%."""
    model = load_model(tiny).train()
    seq = _sequence(load_processor(tiny), response=24)
    with SavedTensors(model) as saved:
        sequence_logprobs(ResponseScorer(model), [seq])
    step = Step(prompt=seq.prompt_length, response=24, image_tokens=int(seq.image_grid_thw.prod()) // 4,
                compute_bytes=4, checkpointing=False)
    predicted = estimate(Architecture.of(model.config, count_params(model.config)), step)
    assert 0.65 < saved.peak / (predicted.activations + predicted.logits) < 1.35, (saved.peak, predicted)
