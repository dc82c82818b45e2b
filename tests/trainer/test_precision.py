"""Mixed precision: a model configured in bfloat16 trains as a float32 one does (float32 master weights and Adam
state, bfloat16 compute), its samplers still get bfloat16 weights, and a checkpoint keeps the float32 masters.
On bfloat16 weights stepped directly, 50 Adam steps at lr 1e-6 changed 1% of them, by a mean 35 times smaller."""

import pytest
import torch

from mintgym.buffer.types import Batch, Group, Sample, Turn
from mintgym.config import TrainConfig
from mintgym.inference import GenerationRequest, SamplingParams
from mintgym.inference.hf import HFEngine
from mintgym.models.loading import load_model, load_processor
from mintgym.trainer.ckpt import load_latest, save_checkpoint
from mintgym.trainer.learner import Learner
from mintgym.weights.base import from_wire_state, to_wire_state


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from mintgym.models.tiny import build_tiny_vlm

    torch.set_num_threads(1)
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256)


@pytest.fixture(scope="module")
def batch(tiny) -> Batch:
    """One group of four text-only one-turn episodes, two rewarded."""
    engine = HFEngine(tiny, aligned_logprobs=True)
    samples = []
    for i, reward in enumerate([1.0, 0.0, 0.0, 1.0]):
        prompt = [{"role": "user", "content": [{"type": "text", "text": "Pick a colour"}]}]
        [gen] = engine.generate([GenerationRequest(prompt, SamplingParams(max_new_tokens=4, seed=i))])
        turn = Turn(gen.prompt_token_ids, gen.response_token_ids, gen.response_logprobs, 0, [])
        samples.append(Sample("null/echo", "null", 0, reward, [turn]))
    return Batch([Group("g", "null/echo", "null", 0, samples)], trainer_version=0)


def _learner(tiny, dtype: torch.dtype) -> Learner:
    """A learner on the tiny model given in ``dtype``, from the same (bfloat16-exact) weights whatever ``dtype``."""
    model = load_model(tiny).to(torch.bfloat16).to(dtype)
    return Learner(model, load_processor(tiny), TrainConfig(lr=1e-6, micro_batch=8, correction="none"))


def _train(learner: Learner, batch: Batch, steps: int) -> None:
    for _ in range(steps):
        batch.trainer_version = learner.version
        learner.step(batch)


def _trained_deltas(learner: Learner, batch: Batch, steps: int) -> torch.Tensor:
    """Every floating weight's movement over ``steps`` steps, in the trainer's own (master) weights."""
    before = {k: v.float().clone() for k, v in learner.model.state_dict().items() if v.is_floating_point()}
    _train(learner, batch, steps)
    return torch.cat([(v.float() - before[k]).flatten() for k, v in learner.model.state_dict().items()
                      if k in before])


def test_fifty_steps_at_lr_1e_6_move_a_bfloat16_model_as_they_move_a_float32_one(tiny, batch):
    """Tolerances: the same weights move (within 2 points: 52% of them, the vision tower has no gradient here),
    the mean movement within 5% of float32's and the deltas within 15% of float32's in L2 (measured: the same 52%,
    0.02% and 5%: the gradients of bfloat16 compute differ a little). Stepped in bfloat16 itself, 1.1% of the
    weights moved and the mean movement was 2.9% of float32's. The weights published to the samplers are
    bfloat16: the masters rounded."""
    reference = _trained_deltas(_learner(tiny, torch.float32), batch, 50)
    mixed = _learner(tiny, torch.bfloat16)
    deltas = _trained_deltas(mixed, batch, 50)
    moved, moved_ref = (deltas != 0).float().mean(), (reference != 0).float().mean()
    assert moved == pytest.approx(float(moved_ref), abs=0.02), f"{moved:.1%} moved, {moved_ref:.1%} in float32"
    assert float(deltas.abs().mean() / reference.abs().mean()) == pytest.approx(1.0, abs=0.05)
    assert float((deltas - reference).norm() / reference.norm()) < 0.15
    published = mixed.state_dict()
    masters = mixed.model.state_dict()
    assert {v.dtype for v in published.values() if v.is_floating_point()} == {torch.bfloat16}
    assert all(torch.equal(published[k], v.to(torch.bfloat16)) for k, v in masters.items())
    wire = from_wire_state(to_wire_state(published))  # what the ray and filesystem transports carry
    assert all(wire[k].dtype == torch.bfloat16 and torch.equal(wire[k], v) for k, v in published.items()
               if v.is_floating_point())


def test_a_checkpoint_keeps_the_float32_master_weights_and_adam_state_of_a_bfloat16_model(tiny, batch, tmp_path):
    """Rounded to bfloat16 at each checkpoint, the masters would lose the small updates they gathered since."""
    learner = _learner(tiny, torch.bfloat16)
    _train(learner, batch, 3)
    save_checkpoint(tmp_path, 3, learner.model, learner.optimizer, {"version": learner.version, "buffer": {}})
    resumed = _learner(tiny, torch.bfloat16)
    load_latest(tmp_path, resumed.model, resumed.optimizer, log=lambda _: None)
    saved, loaded = learner.model.state_dict(), resumed.model.state_dict()
    assert {v.dtype for v in saved.values() if v.is_floating_point()} == {torch.float32}
    assert any(not torch.equal(v, v.to(torch.bfloat16).float()) for v in saved.values())  # finer than bfloat16
    assert all(loaded[k].dtype == v.dtype and torch.equal(loaded[k], v) for k, v in saved.items())
    moments = [s["exp_avg_sq"] for s in resumed.optimizer.state.values()]
    assert moments and {m.dtype for m in moments} == {torch.float32}
