"""The warm start's supervised steps: a batch run in micro-batches trains as the whole batch at once (a real
checkpoint's batch of 16 long prompts does not fit one forward pass), and a bfloat16 model's float32 masters
train under bfloat16 autocast."""

import copy

import pytest
import torch

from mintgym.inference.logprobs import SequenceInput
from mintgym.models.loading import load_model
from mintgym.trainer.precision import Precision
from mintgym.trainer.sft import batch_gradient, supervised_steps


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from mintgym.models.tiny import build_tiny_vlm

    torch.set_num_threads(1)
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256)


def _sequences() -> list[SequenceInput]:
    """Four text-only sequences of different lengths (plain BPE ids, no special token)."""
    rng = torch.Generator().manual_seed(0)
    return [SequenceInput(torch.randint(0, 250, (n,), generator=rng).tolist(), n - k) for n, k in
            ((9, 3), (14, 5), (6, 2), (11, 4))]


def test_micro_batches_give_the_gradient_of_the_whole_batch(tiny):
    whole, split = load_model(tiny), load_model(tiny)
    loss = batch_gradient(whole, _sequences())
    assert batch_gradient(split, _sequences(), micro_batch=1) == pytest.approx(loss, rel=1e-6)
    grads = [(name, p.grad, q.grad) for (name, p), q in zip(whole.named_parameters(), split.parameters(), strict=True)]
    assert sum(a is not None for _, a, _ in grads) > 10
    for name, a, b in grads:
        assert (a is None) == (b is None), name
        assert a is None or torch.allclose(a, b, rtol=1e-4, atol=1e-6 * float(a.abs().max())), name


def test_float32_masters_of_a_bfloat16_model_train_under_bfloat16_autocast(tiny):
    """The loss is the bfloat16 compute's (close to float32's, not equal); the weights stay float32 masters."""
    model = load_model(tiny)
    reference = supervised_steps(copy.deepcopy(model), _sequences(), steps=1, lr=1e-6, batch_size=4)
    mixed = supervised_steps(model, _sequences(), steps=1, lr=1e-6, batch_size=4,
                             precision=Precision.of(torch.bfloat16, "mixed"))
    assert mixed != reference and mixed == pytest.approx(reference, rel=0.02)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
