"""The learner's optimizer step: a batch without learning signal leaves the weights alone; a batch fed in
parts as its groups arrive trains exactly as the whole batch at once."""

import numpy as np
import pytest
import torch

from mintgym.buffer.types import Batch, Group, Sample, Turn
from mintgym.config import TrainConfig
from mintgym.inference import GenerationRequest, SamplingParams
from mintgym.inference.hf import HFEngine
from mintgym.models.loading import load_model, load_processor
from mintgym.trainer.learner import Learner


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from mintgym.models.tiny import build_tiny_vlm

    torch.set_num_threads(1)
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256)


def _batch(engine, rewards: list[float], version: int) -> Batch:
    """One group of one-turn episodes with ``rewards``, sampled by ``engine`` at ``version``."""
    rng = np.random.default_rng(len(rewards))
    samples = []
    for i, reward in enumerate(rewards):
        image = rng.integers(0, 256, (56, 56, 3), dtype=np.uint8)
        prompt = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Go"}]}]
        [gen] = engine.generate([GenerationRequest(prompt, SamplingParams(max_new_tokens=3, seed=i))])
        turn = Turn(gen.prompt_token_ids, gen.response_token_ids, gen.response_logprobs, version, [image])
        samples.append(Sample("null/echo", "null", 0, reward, [turn]))
    return Batch([Group("g", "null/echo", "null", 0, samples)], trainer_version=version)


def _gradients_at_step(learner: Learner) -> dict[str, torch.Tensor]:
    """Filled with every parameter's gradient as the learner's optimizer steps."""
    seen: dict[str, torch.Tensor] = {}
    step = learner.optimizer.step

    def recording_step(*args, **kwargs):
        seen.update({n: p.grad.clone() for n, p in learner.model.named_parameters() if p.grad is not None})
        return step(*args, **kwargs)

    learner.optimizer.step = recording_step
    return seen


def _weights(learner: Learner) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in learner.state_dict().items()}


@pytest.mark.parametrize("skip", [True, False])
def test_a_step_whose_groups_all_tie_moves_no_weight_unless_told_to(tiny, skip):
    """Every group's rewards equal: every advantage is 0, so is the gradient. Adam would still move the weights
    on the momentum of the step before (the drift that collapsed a two-step run from success 1.0 to 0)."""
    engine = HFEngine(tiny, aligned_logprobs=True)
    learner = Learner(load_model(tiny), load_processor(tiny),
                      TrainConfig(lr=1e-2, micro_batch=8, skip_no_signal=skip))
    learned = learner.step(_batch(engine, [1.0, 0.0, 0.0, 1.0], 0))
    assert learned["optimizer/skipped_no_signal"] == 0.0 and learned["grad_norm"] > 0
    before = _weights(learner)
    tied = learner.step(_batch(engine, [1.0, 1.0, 1.0, 1.0], 1))
    assert tied["grad_norm"] == 0.0 and learner.version == 2
    moved = [k for k, v in _weights(learner).items() if not torch.equal(v, before[k])]
    if skip:
        assert tied["optimizer/skipped_no_signal"] == 1.0 and moved == []
    else:
        assert tied["optimizer/skipped_no_signal"] == 0.0 and len(moved) > 10  # momentum alone moved them


@pytest.mark.parametrize("skip", [True, False])
def test_an_entropy_bonus_moves_the_policy_towards_a_flatter_one_only_on_a_step_with_signal(tiny, skip):
    """Steps whose groups all tie: with ``skip_no_signal`` they stay skipped under an entropy bonus (the bonus
    alone, which Adam scales to full-size steps, flipped a converged quickstart policy onto a wrong answer);
    without it the bonus's own gradient trains them and the policy's entropy rises step after step."""
    engine = HFEngine(tiny, aligned_logprobs=True)
    learner = Learner(load_model(tiny), load_processor(tiny),
                      TrainConfig(lr=1e-4, micro_batch=8, entropy_coef=0.5, skip_no_signal=skip))
    batch = _batch(engine, [1.0, 1.0, 1.0, 1.0], 0)
    before = _weights(learner)
    entropies = []
    for version in range(3):
        batch.trainer_version = version
        for group in batch.groups:
            for sample in group.samples:
                sample.turns[0].policy_version = version
        metrics = learner.step(batch)
        assert metrics["optimizer/skipped_no_signal"] == float(skip)
        entropies.append(metrics["entropy"])
    moved = [k for k, v in _weights(learner).items() if not torch.equal(v, before[k])]
    if skip:
        assert moved == [] and entropies[0] == entropies[1] == entropies[2]
    else:
        assert len(moved) > 10 and entropies[0] < entropies[1] < entropies[2], entropies


def test_an_entropy_bonus_adds_its_gradient_to_a_step_with_signal(tiny):
    """The same batch with and without the bonus: both steps are taken and their gradients differ."""
    engine = HFEngine(tiny, aligned_logprobs=True)
    batch = _batch(engine, [1.0, 0.0, 0.0, 1.0], 0)
    grads = {}
    for coef in (0.0, 0.5):
        config = TrainConfig(lr=1e-4, micro_batch=8, entropy_coef=coef)
        learner = Learner(load_model(tiny), load_processor(tiny), config)
        grads[coef] = _gradients_at_step(learner)
        metrics = learner.step(batch)
        assert metrics["optimizer/skipped_no_signal"] == 0.0
        assert ("entropy" in metrics) == (coef > 0)
    assert grads[0.0].keys() == grads[0.5].keys()
    assert any(not torch.allclose(grads[0.0][k], grads[0.5][k]) for k in grads[0.0])


@pytest.mark.parametrize("correction,micro_batch", [("unclipped_token_is", 3), ("ppo_clip", 4)])
def test_a_step_fed_group_by_group_trains_as_the_whole_batch_at_once(tiny, correction, micro_batch):
    """The run streams a batch into the learner as its groups arrive: the gradients are token sums divided by
    the whole step's token count at the end, so the parts must give the one-shot step's weights and metrics
    (a per-part token mean would weight a short group's tokens more). The tied group's chunk (micro_batch 4)
    is scored without a backward pass."""
    engine = HFEngine(tiny, aligned_logprobs=True)
    groups = [_batch(engine, rewards, 0).groups[0]
              for rewards in ([1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0])]
    config = TrainConfig(lr=1e-2, micro_batch=micro_batch, correction=correction)
    whole = Learner(load_model(tiny), load_processor(tiny), config)
    parts = Learner(load_model(tiny), load_processor(tiny), config)
    grads = {"whole": _gradients_at_step(whole), "parts": _gradients_at_step(parts)}
    at_once = whole.step(Batch(groups, trainer_version=0))
    parts.begin()
    for g in groups:
        parts.add([g])
    streamed = parts.finish(Batch(groups, trainer_version=0))
    assert parts.version == whole.version == 1
    want, got = grads["whole"], grads["parts"]
    assert len(want) > 10 and want.keys() == got.keys()
    scale = max(g.abs().max().item() for g in want.values())
    for k, g in want.items():  # the clipped gradients Adam was given
        diff = (got[k] - g).abs().max().item()
        assert diff <= 1e-5 * scale, (k, diff, scale)
    for key in ("loss", "grad_norm", "tokens", "sequences", "is/ratio_mean", "reward/mean"):
        assert streamed[key] == pytest.approx(at_once[key], rel=1e-5, abs=1e-7), key


def test_parts_outside_an_open_step_are_an_error(tiny):
    learner = Learner(load_model(tiny), load_processor(tiny), TrainConfig())
    with pytest.raises(RuntimeError, match=r"call begin\(\) first"):
        learner.add([])
    with pytest.raises(RuntimeError, match=r"call begin\(\) first"):
        learner.finish(Batch([], trainer_version=0))


def test_a_step_reports_how_long_its_samples_episodes_ran_after_their_first_answer(tiny):
    """The slowest sample's wait from its first model answer to its episode's end bounds how soon after its
    weights a batch can be full (benchmarks/async_vs_sync.py turns it into the ceiling at each lag)."""
    from mintgym.trajectory.types import Trajectory

    engine = HFEngine(tiny, aligned_logprobs=True)
    learner = Learner(load_model(tiny), load_processor(tiny), TrainConfig(lr=1e-3, micro_batch=8))
    bare = learner.step(_batch(engine, [1.0, 0.0], 0))
    assert "time/after_answer_max" not in bare  # samples without an episode record: nothing measured
    batch = _batch(engine, [1.0, 0.0, 0.0], 1)
    for sample, (answered, ended) in zip(batch.samples, [(0.5, 3.0), (1.0, 9.0), (0.2, 2.2)], strict=True):
        [turn] = sample.turns
        turn.step.timings["answered"] = answered
        sample.episode = Trajectory(id="e", task_id=sample.task_id, domain="null", instruction="", agent="answer",
                                    steps=[turn.step], started=50.0, ended=50.0 + ended)
    metrics = learner.step(batch)
    assert metrics["time/after_answer_max"] == pytest.approx(8.0)
    assert metrics["time/after_answer_mean"] == pytest.approx((2.5 + 8.0 + 2.0) / 3)


def test_an_empty_step_moves_the_version_on_like_the_buffer_and_keeps_the_weights(tiny):
    """The buffer counts a closed batch as built even when nothing arrived; a learner whose version stayed
    behind made sync mode (max_lag 0) deny every later group: the run could never train again."""
    from mintgym.buffer.store import TrajectoryBuffer

    learner = Learner(load_model(tiny), load_processor(tiny), TrainConfig(lr=1e-2))
    buffer = TrajectoryBuffer(["null"], groups_per_step=1, max_lag=0)
    before = _weights(learner)
    learner.begin()
    metrics = learner.finish(Batch([], trainer_version=0, domains=buffer.close_batch(1, 0)))
    assert metrics["skipped"] == 1.0 and learner.version == 1
    assert all(torch.equal(v, before[k]) for k, v in _weights(learner).items())
    buffer.set_trainer_version(learner.version)
    assert buffer._reserve(0, learner.version, "null") is not None  # a group at the new version is admitted


def test_every_step_logs_the_fraction_of_tokens_whose_ratio_was_capped(tiny):
    """By default (truncated_is, cap 2) a token whose sampler logprob is far below the trainer's is capped; the
    step's metrics say which fraction of its response tokens were."""
    engine = HFEngine(tiny, aligned_logprobs=True)  # the trainer's own logprobs: every ratio is 1
    batch = _batch(engine, [1.0, 0.0, 0.0, 1.0], 0)
    turns = [turn for sample in batch.samples for turn in sample.turns]
    for turn in turns[:2]:  # as a bfloat16 sampler's tail would: ratio e^3 on one token of each
        turn.logprobs = [turn.logprobs[0] - 3.0, *turn.logprobs[1:]]
    tokens = sum(len(turn.response_token_ids) for turn in turns)
    config = TrainConfig(lr=1e-3, micro_batch=8)
    assert (config.correction, config.is_cap) == ("truncated_is", 2.0)
    metrics = Learner(load_model(tiny), load_processor(tiny), config).step(batch)
    assert metrics["is/capped_fraction"] == pytest.approx(2 / tokens)
    assert metrics["is/ratio_max"] == pytest.approx(np.exp(3.0), rel=1e-4)


def test_a_step_given_a_learning_rate_takes_it_and_logs_it(tiny):
    """``finish(batch, lr)``: the run's schedule (``train.lr_schedule``) sets each step's rate; a step at 0
    moves no weight, one at the configured rate does."""
    engine = HFEngine(tiny, aligned_logprobs=True)
    learner = Learner(load_model(tiny), load_processor(tiny), TrainConfig(lr=1e-2, micro_batch=8))
    before = _weights(learner)
    learner.begin()
    learner.add(_batch(engine, [1.0, 0.0, 0.0, 1.0], 0).groups)
    still = learner.finish(_batch(engine, [1.0, 0.0, 0.0, 1.0], 0), lr=0.0)
    assert still["optimizer/lr"] == 0.0 and still["grad_norm"] > 0
    assert all(torch.equal(v, before[k]) for k, v in _weights(learner).items())
    moved = learner.step(_batch(engine, [1.0, 0.0, 0.0, 1.0], 1))  # no rate given: the one it has
    assert moved["optimizer/lr"] == 0.0
    learner.begin()
    learner.add(_batch(engine, [1.0, 0.0, 0.0, 1.0], 2).groups)
    assert learner.finish(_batch(engine, [1.0, 0.0, 0.0, 1.0], 2), lr=1e-2)["optimizer/lr"] == 1e-2
    assert any(not torch.equal(v, before[k]) for k, v in _weights(learner).items())
