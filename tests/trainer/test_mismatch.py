"""The mismatch metric, the exact-zero guarantee of aligned hf logprobs, and the image-token check."""

import math

import numpy as np
import pytest
import torch

from mintgym.buffer.types import Batch, Group, Sample, Turn
from mintgym.config import TrainConfig
from mintgym.inference import GenerationRequest, SamplingParams
from mintgym.inference.hf import HFEngine
from mintgym.models.loading import load_model, load_processor
from mintgym.trainer.learner import Learner
from mintgym.trainer.mismatch import mismatch_metrics


def test_metric_hand_values():
    d = math.log(2.0)
    out = mismatch_metrics([torch.tensor([0.0, d])], [torch.tensor([0.0, 0.0])],
                           [{"domain": "web", "turn": 0, "images": 1}])
    assert out["mismatch/kl_mean"] == pytest.approx((2 - 1 - d) / 2)
    assert out["mismatch/max_abs"] == pytest.approx(d)
    assert out["mismatch/domain=web/max_abs"] == pytest.approx(d)
    assert out["mismatch/images=1/tokens"] == 2


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from mintgym.models.tiny import build_tiny_vlm

    torch.set_num_threads(1)
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256)


def _batch(engine, images, prompts, version=0):
    reqs = [GenerationRequest([{"role": "user", "content": [{"type": "image", "image": img},
                                                             {"type": "text", "text": p}]}],
                              SamplingParams(max_new_tokens=4, seed=i))
            for i, (img, p) in enumerate(zip(images, prompts, strict=True))]
    gens = engine.generate(reqs)
    samples = [Sample("null/echo", "null", 0, float(i % 2), [Turn(g.prompt_token_ids, g.response_token_ids,
                                                                  g.response_logprobs, version, [img])])
               for i, (g, img) in enumerate(zip(gens, images, strict=True))]
    return Batch([Group("g", "null/echo", "null", 0, samples)], trainer_version=version)


def _images(n):
    rng = np.random.default_rng(0)
    sizes = [(112, 112), (56, 168), (84, 84), (140, 56)]
    return [rng.integers(0, 256, (sizes[i % 4][1], sizes[i % 4][0], 3), dtype=np.uint8) for i in range(n)]


def test_aligned_logprobs_give_exactly_zero_mismatch(tiny):
    engine = HFEngine(tiny, aligned_logprobs=True)
    prompts = ["Task: a", "Task: a longer prompt here", "Option:", "x y z w"]
    batch = _batch(engine, _images(4), prompts)
    learner = Learner(load_model(tiny), load_processor(tiny), TrainConfig(lr=1e-3, micro_batch=3))
    m = learner.step(batch)
    assert m["mismatch/sequences"] == 4
    assert m["mismatch/kl_mean"] == 0.0 and m["mismatch/max_abs"] == 0.0  # exact, not approximate
    assert m["mismatch/turn=0/max_abs"] == 0.0 and "mismatch/images=1/kl_mean" in m
    assert learner.version == 1


def test_unaligned_logprobs_mismatch_is_measured(tiny):
    engine = HFEngine(tiny, aligned_logprobs=False)
    prompts = ["Task: a", "Task: a much longer prompt than the first one", "Option:", "x"]
    batch = _batch(engine, _images(4), prompts)
    learner = Learner(load_model(tiny), load_processor(tiny), TrainConfig(lr=1e-3))
    m = learner.step(batch)
    assert m["mismatch/tokens"] == sum(len(s.turns[0].response_token_ids) for s in batch.samples)
    assert math.isfinite(m["mismatch/kl_mean"]) and m["mismatch/kl_mean"] >= 0.0
    assert m["mismatch/max_abs"] >= 0.0  # measured (on this CPU build the cached decode happens to agree)


def test_image_tokens_must_match_the_image_features(tiny):
    engine = HFEngine(tiny)
    batch = _batch(engine, _images(1), ["Task: a"])
    turn = batch.samples[0].turns[0]
    learner = Learner(load_model(tiny), load_processor(tiny), TrainConfig())
    learner.sequence_input(turn)  # consistent: fine
    wrong = Turn(turn.prompt_token_ids, turn.response_token_ids, turn.logprobs, 0, [_images(2)[1]])  # other size
    with pytest.raises(ValueError, match="image tokens in the prompt"):
        learner.sequence_input(wrong, "sequence 0")
    with pytest.raises(ValueError, match="image tokens"):
        learner.sequence_input(Turn(turn.prompt_token_ids, turn.response_token_ids, turn.logprobs, 0, []))


def test_group_with_a_lost_image_is_left_out_and_counted(tiny):
    from mintgym.trainer.learner import ImageLost

    engine = HFEngine(tiny, aligned_logprobs=True)
    good = _batch(engine, _images(2), ["Task: a", "Task: b"])
    bad = _batch(engine, _images(2), ["Task: c", "Task: d"])
    lost_marker = object()
    bad.groups[0].samples[1].turns[0].images = [lost_marker]
    for sample in bad.groups[0].samples:
        sample.reward = 1.0  # the left-out group must not count in the step's reward either

    def resolve(image):
        if image is lost_marker:
            raise ImageLost("owner died")
        return image

    learner = Learner(load_model(tiny), load_processor(tiny), TrainConfig(lr=1e-3), resolve_image=resolve)
    m = learner.step(Batch(good.groups + bad.groups, trainer_version=0))
    assert m["groups/images_lost"] == 1.0
    assert m["mismatch/sequences"] == 2 and m["sequences"] == 2  # only the intact group trained
    assert m["samples"] == 2 and m["reward/mean"] == 0.5  # its rewards are 0 and 1; the lost group's were 1, 1
    assert learner.version == 1


def test_group_whose_response_holds_an_unscorable_token_is_left_out_and_counted(tiny):
    """An engine that does not suppress the vision tokens may sample one; the trainer scores it at -inf, which
    made the step's loss and IS ratio NaN. Such a group is left out of the step and counted."""
    from mintgym.inference.logprobs import suppressed_token_ids

    engine = HFEngine(tiny, aligned_logprobs=True)
    good = _batch(engine, _images(2), ["Task: a", "Task: b"])
    bad = _batch(engine, _images(2), ["Task: c", "Task: d"])
    model = load_model(tiny)
    vision_start = max(suppressed_token_ids(model))
    turn = bad.groups[0].samples[0].turns[0]
    turn.response_token_ids = [*turn.response_token_ids[:-1], vision_start]
    learner = Learner(model, load_processor(tiny), TrainConfig(lr=1e-3))
    m = learner.step(Batch(good.groups + bad.groups, trainer_version=0))
    assert m["groups/unscorable"] == 1.0 and m["groups/images_lost"] == 0.0
    assert m["sequences"] == 2 and m["samples"] == 2
    assert all(np.isfinite(v) for k, v in m.items() if k.startswith(("loss", "is/", "mismatch/"))), m
