"""The loss formulas against hand-computed values on tiny tensors."""

import math

import pytest
import torch

from mintgym.trainer.loss import LossInputs, pad_right, policy_loss


def _inputs(lp, old, adv, mask):
    return LossInputs(torch.tensor(lp, requires_grad=True), torch.tensor(old), torch.tensor(adv), torch.tensor(mask))


# two sequences: lengths 2 and 1 (one padding slot holding garbage that must not count)
LP = [[math.log(0.5), math.log(0.25)], [math.log(0.8), 123.0]]
OLD = [[math.log(0.25), math.log(0.25)], [math.log(0.4), -7.0]]
ADV = [1.0, -2.0]
MASK = [[1.0, 1.0], [1.0, 0.0]]
# ratios: 2.0, 1.0, 2.0 on the three real tokens


def test_none_is_masked_reinforce():
    out = policy_loss(_inputs(LP, OLD, ADV, MASK), "none")
    expected = -(1.0 * math.log(0.5) + 1.0 * math.log(0.25) - 2.0 * math.log(0.8)) / 3
    assert out.loss.item() == pytest.approx(expected)


def test_unclipped_token_is_weights_by_detached_ratio():
    inp = _inputs(LP, OLD, ADV, MASK)
    out = policy_loss(inp, "unclipped_token_is")
    expected = -(2.0 * math.log(0.5) + 1.0 * math.log(0.25) - 2.0 * 2.0 * math.log(0.8)) / 3
    assert out.loss.item() == pytest.approx(expected)
    out.loss.backward()
    # d/dlp of -sg(r) A lp / 3: the ratio is a constant weight; the padding slot gets no gradient
    assert inp.logprobs.grad.flatten().tolist() == pytest.approx(sum([[-2 / 3, -1 / 3], [4 / 3, 0.0]], []))
    assert out.metrics["ratio_mean"] == pytest.approx(5 / 3)


def test_truncated_is_caps_the_ratio():
    out = policy_loss(_inputs(LP, OLD, ADV, MASK), "truncated_is", is_cap=1.5)
    expected = -(1.5 * math.log(0.5) + 1.0 * math.log(0.25) - 2.0 * 1.5 * math.log(0.8)) / 3
    assert out.loss.item() == pytest.approx(expected)
    assert out.metrics["changed_fraction"] == pytest.approx(2 / 3)


def test_ppo_clip_clips_positive_and_negative_advantages():
    inp = _inputs(LP, OLD, ADV, MASK)
    out = policy_loss(inp, "ppo_clip", clip_eps=0.2)
    # token 1: r=2, A=1 -> min(2, 1.2) = 1.2; token 2: r=1, A=1 -> 1; token 3: r=2, A=-2 -> min(-4, -2.4) = -4
    expected = -(1.2 + 1.0 - 4.0) / 3
    assert out.loss.item() == pytest.approx(expected)
    out.loss.backward()
    # clipped token has no gradient; the others get -A * r / 3
    assert inp.logprobs.grad.flatten().tolist() == pytest.approx(sum([[0.0, -1 / 3], [4 / 3, 0.0]], []))


def test_normalizer_and_per_token_advantages():
    inp = _inputs(LP, OLD, [[1.0, 0.0], [0.0, 0.0]], MASK)
    out = policy_loss(inp, "none", normalizer=10)
    assert out.loss.item() == pytest.approx(-math.log(0.5) / 10)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="correction"):
        policy_loss(_inputs(LP, OLD, ADV, MASK), "clip")
    with pytest.raises(ValueError, match="one shape"):
        policy_loss(LossInputs(torch.zeros(2, 2), torch.zeros(2, 3), torch.zeros(2), torch.ones(2, 2)))


def test_unclipped_is_at_lag_zero_has_reinforce_gradients():
    """With sampler == trainer logprobs, the IS loss's gradient equals plain REINFORCE's on a real model."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(11, 8), torch.nn.Linear(8, 11))
    tokens = torch.randint(0, 11, (3, 4))
    targets = torch.randint(0, 11, (3, 4))
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.float32)
    adv = torch.tensor([0.5, -1.0, 2.0])

    def grads(correction):
        model.zero_grad()
        lp = torch.log_softmax(model(tokens), -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        policy_loss(LossInputs(lp, lp.detach().clone(), adv, mask), correction).loss.backward()
        return [p.grad.clone() for p in model.parameters()]

    for a, b in zip(grads("unclipped_token_is"), grads("none"), strict=True):
        assert torch.equal(a, b)
    for a, b in zip(grads("truncated_is"), grads("none"), strict=True):
        assert torch.equal(a, b)


def test_infinite_padding_leaves_loss_and_metrics_finite():
    """Padding may hold anything: -inf there once made the log-ratio inf * 0 = NaN."""
    for correction in ("none", "unclipped_token_is", "truncated_is", "ppo_clip"):
        lp = [[math.log(0.5), math.log(0.25)], [math.log(0.8), -math.inf]]
        old = [[math.log(0.25), math.log(0.25)], [math.log(0.4), math.inf]]
        out = policy_loss(_inputs(lp, old, ADV, MASK), correction)
        clean = policy_loss(_inputs(LP, OLD, ADV, MASK), correction)
        assert float(out.loss.detach()) == pytest.approx(float(clean.loss.detach())), correction
        assert out.metrics == pytest.approx(clean.metrics), correction


def test_pad_right():
    out, mask = pad_right([torch.tensor([1.0, 2.0]), torch.tensor([3.0])])
    assert out.tolist() == [[1.0, 2.0], [3.0, 0.0]] and mask.tolist() == [[1, 1], [1, 0]]


def test_the_entropy_bonus_subtracts_its_share_of_every_real_token():
    """With every advantage 0 the loss is the bonus alone: -coef x the mean entropy of the real tokens, whose
    gradient raises each real token's entropy by coef / (tokens) and leaves the padding slot alone."""
    inp = _inputs(LP, OLD, [0.0, 0.0], MASK)
    entropy = torch.tensor([[1.0, 2.0], [0.5, 99.0]], requires_grad=True)
    inp.entropy = entropy
    out = policy_loss(inp, "unclipped_token_is", entropy_coef=0.1)
    assert out.loss.item() == pytest.approx(-0.1 * (1.0 + 2.0 + 0.5) / 3)
    assert out.metrics["entropy_mean"] == pytest.approx(3.5 / 3)
    out.loss.backward()
    assert entropy.grad.flatten().tolist() == pytest.approx([-0.1 / 3, -0.1 / 3, -0.1 / 3, 0.0])
    with_adv = policy_loss(_inputs(LP, OLD, ADV, MASK), "none")
    inp = _inputs(LP, OLD, ADV, MASK)
    inp.entropy = entropy.detach()
    both = policy_loss(inp, "none", entropy_coef=0.1)
    assert both.loss.item() == pytest.approx(with_adv.loss.item() - 0.1 * 3.5 / 3)


def test_an_entropy_bonus_without_entropies_is_named():
    with pytest.raises(ValueError, match="entropy bonus needs the entropy of every token"):
        policy_loss(_inputs(LP, OLD, ADV, MASK), "none", entropy_coef=0.1)
    with pytest.raises(ValueError, match="entropy_coef must be >= 0"):
        policy_loss(_inputs(LP, OLD, ADV, MASK), "none", entropy_coef=-1.0)


def test_the_default_is_truncated_is_with_cap_2_and_bounds_a_heavy_tailed_ratio():
    """A token sampled in bfloat16 can come back from the float32 recompute with a ratio of thousands: by default
    its weight is capped at 2, so its gradient is at most 2 |A| / tokens, not ratio x that."""
    lp, old = [[math.log(0.5), math.log(0.5), math.log(0.5)]], [[math.log(0.5) - 8.0, math.log(0.5), math.log(0.25)]]
    default, capped = _inputs(lp, old, [1.0], [[1.0, 1.0, 1.0]]), _inputs(lp, old, [1.0], [[1.0, 1.0, 1.0]])
    out = policy_loss(default)
    explicit = policy_loss(capped, "truncated_is", is_cap=2.0)
    assert out.loss.item() == pytest.approx(explicit.loss.item())
    out.loss.backward()
    # ratios e^8 (capped to 2), 1, 2 (at the cap, kept): d/dlp of -w A lp / 3
    assert default.logprobs.grad.flatten().tolist() == pytest.approx([-2 / 3, -1 / 3, -2 / 3])
    assert out.metrics["capped_fraction"] == pytest.approx(1 / 3) and out.metrics["ratio_max"] > 2000


@pytest.mark.parametrize("correction", ["none", "unclipped_token_is", "truncated_is", "ppo_clip"])
def test_capped_fraction_counts_the_real_tokens_over_the_cap_whatever_the_correction(correction):
    """Padding never counts (its garbage logprobs would make any ratio); under another correction the fraction
    says how many tokens truncated_is would have capped."""
    out = policy_loss(_inputs(LP, OLD, ADV, MASK), correction, is_cap=1.5)  # ratios 2, 1, 2 on the real tokens
    assert out.metrics["capped_fraction"] == pytest.approx(2 / 3)
    assert policy_loss(_inputs(LP, OLD, ADV, MASK), correction, is_cap=2.0).metrics["capped_fraction"] == 0.0
