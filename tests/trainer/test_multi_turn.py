"""Multi-turn credit by hand: every turn of an episode carries the episode's group-relative advantage, only
response tokens count (prompt and padding masked), the IS ratio is per token across turns, and the
gradient reaches the vision tower (the policy can learn from pixels)."""

import math

import numpy as np
import pytest
import torch

from mintgym.buffer.types import Batch, Group, Sample, Turn
from mintgym.config import TrainConfig
from mintgym.inference import GenerationRequest, SamplingParams
from mintgym.inference.hf import HFEngine
from mintgym.inference.logprobs import sequence_logprobs
from mintgym.models.loading import load_model, load_processor
from mintgym.trainer.learner import Learner


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from mintgym.models.tiny import build_tiny_vlm

    torch.set_num_threads(1)
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256)


def _turns(engine, n: int, seed: int) -> list[Turn]:
    """``n`` turns of one episode: each its own screenshot and prompt, responses of 1..4 tokens."""
    rng = np.random.default_rng(seed)
    turns = []
    for t in range(n):
        image = rng.integers(0, 256, (112, 112, 3), dtype=np.uint8)
        prompt = [{"role": "user", "content": [{"type": "image", "image": image},
                                                {"type": "text", "text": f"Turn {t}: where next?"}]}]
        [gen] = engine.generate([GenerationRequest(prompt, SamplingParams(max_new_tokens=1 + (t + seed) % 4,
                                                                          seed=seed * 10 + t))])
        turns.append(Turn(gen.prompt_token_ids, gen.response_token_ids, gen.response_logprobs, 0, [image]))
    return turns


def test_every_turn_gets_its_episodes_advantage_and_only_response_tokens_count(tiny):
    engine = HFEngine(tiny, aligned_logprobs=True)
    episodes = [(_turns(engine, 3, 1), 1.0), (_turns(engine, 1, 2), 0.0), (_turns(engine, 2, 3), 0.0)]
    lagged = episodes[0][0][1]  # the second turn was sampled by other weights: its ratio is not 1
    lagged.logprobs = [lp - 0.1 * (i + 1) for i, lp in enumerate(lagged.logprobs)]
    samples = [Sample("null/echo", "null", 0, reward, turns) for turns, reward in episodes]
    batch = Batch([Group("g", "null/echo", "null", 0, samples)], trainer_version=0)

    model = load_model(tiny)
    learner = Learner(model, load_processor(tiny), TrainConfig(lr=1e-3, micro_batch=8, correction="unclipped_token_is"))
    # By hand: GRPO over the episode rewards [1, 0, 0] -> (r - 1/3) / sqrt(2/9).
    advantages = [(r - 1 / 3) / (math.sqrt(2 / 9) + 1e-6) for r in (1.0, 0.0, 0.0)]
    total_tokens = sum(len(t.response_token_ids) for turns, _ in episodes for t in turns)
    expected = 0.0
    with torch.no_grad():
        for (turns, _), adv in zip(episodes, advantages, strict=True):
            for turn in turns:
                [lp] = sequence_logprobs(model, [learner.sequence_input(turn)])
                assert lp.numel() == len(turn.response_token_ids)  # prompt tokens are not scored
                ratio = torch.exp(lp - torch.tensor(turn.logprobs))
                expected += float((-ratio * adv * lp).sum())
    expected /= total_tokens

    metrics = learner.step(batch)
    assert metrics["sequences"] == 6 and metrics["tokens"] == total_tokens
    assert metrics["loss"] == pytest.approx(expected, rel=1e-4, abs=1e-6)  # padding in the micro-batch adds nothing
    assert metrics["is/ratio_max"] == pytest.approx(math.exp(0.1 * len(lagged.logprobs)), rel=1e-3)
    vision = [p for name, p in model.named_parameters() if name.startswith(("visual", "model.visual"))]
    assert vision and any(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in vision)


def test_the_image_changes_what_the_policy_says(tiny):
    """A blank screenshot and a real one give different response logprobs: the pixels reach the logits."""
    engine = HFEngine(tiny, aligned_logprobs=True)
    [turn] = _turns(engine, 1, 4)
    model = load_model(tiny)
    learner = Learner(model, load_processor(tiny), TrainConfig())
    blank = Turn(turn.prompt_token_ids, turn.response_token_ids, turn.logprobs, 0,
                 [np.zeros_like(turn.images[0])])
    with torch.no_grad():
        [seen] = sequence_logprobs(model, [learner.sequence_input(turn)])
        [blind] = sequence_logprobs(model, [learner.sequence_input(blank)])
    assert not torch.allclose(seen, blind)
