"""GRPO advantages and the GRPO / KL / OPD losses against hand computations."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from seed_rl.algo.advantages import broadcast_to_tokens, grpo_advantages  # noqa: E402
from seed_rl.algo.losses import (  # noqa: E402
    kl_low_var,
    opd_loss,
    ppo_clip_loss,
    seed_loss,
    token_mean,
    token_weight,
    truncated_is_weights,
)


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# ------------------------------------------------------------------ advantages
def test_grpo_advantages_by_hand():
    # group 7: rewards 1, 0, 0, 1 (mean .5); group 3: 2, 4 (mean 3); groups need not be contiguous
    adv = grpo_advantages([1.0, 2.0, 0.0, 4.0, 0.0, 1.0], [7, 3, 7, 3, 7, 7])
    assert adv.tolist() == pytest.approx([0.5, -1.0, -0.5, 1.0, -0.5, 0.5])
    assert adv.dtype == torch.float32


def test_grpo_advantages_normalised_by_hand():
    adv = grpo_advantages([1.0, 0.0, 0.0, 1.0, 5.0, 7.0], [0, 0, 0, 0, 1, 1], normalize_std=True, eps=0.0)
    std0 = math.sqrt(4 * 0.25 / 3)  # unbiased std of (1, 0, 0, 1)
    std1 = math.sqrt(2.0)  # unbiased std of (5, 7)
    assert adv.tolist() == pytest.approx([0.5 / std0, -0.5 / std0, -0.5 / std0, 0.5 / std0, -1 / std1, 1 / std1])


@pytest.mark.parametrize("normalize_std", [False, True])
def test_tied_groups_and_singletons_give_exact_zeros(normalize_std):
    adv = grpo_advantages([0.1, 0.1, 0.1, 3.0, 1.0, 2.0], [0, 0, 0, 1, 2, 2], normalize_std=normalize_std)
    assert adv[:4].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert adv[4] < 0 < adv[5]


def test_grpo_advantages_check_shapes():
    with pytest.raises(ValueError, match="entries"):
        grpo_advantages([1.0, 2.0], [0])


def test_advantage_broadcast_to_every_token_of_a_trajectory():
    out = broadcast_to_tokens(torch.tensor([0.5, -1.0, 2.0]), [2, 0, 3])
    assert out.tolist() == [0.5, 0.5, 2.0, 2.0, 2.0]


# ------------------------------------------------------------------ PPO clip
def test_ppo_clip_loss_by_hand():
    logp = torch.tensor([math.log(1.5), math.log(0.5), math.log(1.1), 0.0], requires_grad=True)
    old = torch.zeros(4)
    adv = torch.tensor([1.0, -2.0, 1.0, 5.0])
    mask = torch.tensor([1.0, 1.0, 1.0, 0.0])
    loss, stats = ppo_clip_loss(logp, old, adv, mask)
    # token 0: r=1.5, A=1  -> max(-1.5, -1.2) = -1.2 (clipped)
    # token 1: r=0.5, A=-2 -> max(1.0, 1.6) = 1.6 (clipped)
    # token 2: r=1.1, A=1  -> max(-1.1, -1.1) = -1.1
    assert float(loss) == pytest.approx((-1.2 + 1.6 - 1.1) / 3)
    assert stats["clip_frac"] == pytest.approx(2 / 3)
    loss.backward()
    # clipped tokens get no gradient; token 2: d/dlogp (-A r) = -A r = -1.1, divided by 3 tokens
    assert logp.grad.tolist() == pytest.approx([0.0, 0.0, -1.1 / 3, 0.0])


def test_ppo_clip_asymmetric_bounds_and_is_weights():
    logp = torch.tensor([math.log(1.25)], requires_grad=True)
    loss, _ = ppo_clip_loss(logp, torch.zeros(1), torch.ones(1), torch.ones(1), clip_low=0.2, clip_high=0.28)
    assert float(loss) == pytest.approx(-1.25)  # 1.25 < 1.28: not clipped
    weighted, _ = ppo_clip_loss(
        logp, torch.zeros(1), torch.ones(1), torch.ones(1), clip_high=0.28, is_weights=torch.tensor([0.5])
    )
    assert float(weighted) == pytest.approx(-0.625)


def test_on_policy_ratio_one_gives_the_policy_gradient():
    logp = torch.tensor([-0.3, -1.2], requires_grad=True)
    adv = torch.tensor([2.0, -1.0])
    loss, stats = ppo_clip_loss(logp, logp.detach().clone(), adv, torch.ones(2))
    loss.backward()
    assert logp.grad.tolist() == pytest.approx([-1.0, 0.5])  # -A / n
    assert stats["clip_frac"] == 0.0 and stats["ratio_mean"] == pytest.approx(1.0)


# ------------------------------------------------------------------ KL
def test_kl_low_var_by_hand():
    logp = torch.tensor([-1.0, -2.0, -0.5], requires_grad=True)
    ref = torch.tensor([-1.5, -2.0, 0.0])
    mask = torch.tensor([1.0, 1.0, 0.0])
    kl = kl_low_var(logp, ref, mask)
    d = -0.5
    assert float(kl) == pytest.approx((math.exp(d) - d - 1 + 0.0) / 2)
    kl.backward()
    # d/dlogp [e^(ref-logp) - (ref-logp) - 1] = -e^(ref-logp) + 1
    assert logp.grad.tolist() == pytest.approx([(1 - math.exp(d)) / 2, 0.0, 0.0])


# ------------------------------------------------------------------ OPD
def test_opd_loss_gate_value_and_gradient_by_hand():
    logp = torch.tensor([-2.0, -1.0, -0.5, -3.0], requires_grad=True)
    skill = torch.tensor([-1.0, -1.5, -0.5, 0.0], requires_grad=True)
    mask = torch.tensor([1.0, 1.0, 1.0, 0.0])
    beta = 5.0
    loss, stats = opd_loss(logp, skill, mask, beta=beta)
    deltas = [1.0, -0.5, 0.0]
    gates = [sigmoid(beta * d) for d in deltas]
    assert float(loss) == pytest.approx(sum(g * d for g, d in zip(gates, deltas, strict=True)) / 3)
    assert stats["gate_mean"] == pytest.approx(sum(gates) / 3)
    assert stats["delta_mean"] == pytest.approx(sum(deltas) / 3)
    assert stats["delta_pos_frac"] == pytest.approx(1 / 3)
    loss.backward()
    # the gradient is -g * grad log pi(a|h): the gate is a constant, the teacher gets nothing
    assert logp.grad.tolist() == pytest.approx([-gates[0] / 3, -gates[1] / 3, -gates[2] / 3, 0.0])
    assert skill.grad is None or float(skill.grad.abs().sum()) == 0.0


def test_opd_gate_follows_beta():
    logp = torch.tensor([-1.0])
    skill = torch.tensor([-0.8])
    _, low = opd_loss(logp, skill, torch.ones(1), beta=0.0)
    _, high = opd_loss(logp, skill, torch.ones(1), beta=50.0)
    assert low["gate_mean"] == pytest.approx(0.5)
    assert high["gate_mean"] == pytest.approx(sigmoid(50 * 0.2))


def test_zero_lambda_gives_no_opd_gradient():
    logp = torch.tensor([-1.0, -2.0], requires_grad=True)
    loss, _ = opd_loss(logp, torch.tensor([0.0, 0.0]), torch.ones(2))
    (0.0 * loss).backward()
    assert logp.grad.tolist() == [0.0, 0.0]


def test_empty_masks_give_zero_losses_that_still_backpropagate():
    logp = torch.tensor([-1.0, -2.0], requires_grad=True)
    empty = torch.zeros(2)
    loss = token_mean(logp, empty) + kl_low_var(logp, logp.detach() - 1, empty) + opd_loss(logp, logp, empty)[0]
    assert float(loss) == 0.0
    loss.backward()
    assert logp.grad.tolist() == [0.0, 0.0]


# ------------------------------------------------------------------ IS weights
def test_truncated_importance_weights():
    learner = torch.tensor([0.0, 0.0, 0.0])
    sampler = torch.tensor([0.0, -math.log(1.5), -math.log(4.0)])
    assert truncated_is_weights(learner, sampler, cap=2.0).tolist() == pytest.approx([1.0, 1.5, 2.0])
    assert truncated_is_weights(learner, sampler, cap=2.0, mode="mask").tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="mode"):
        truncated_is_weights(learner, sampler, mode="clip")


def test_token_weights_by_hand():
    # two trajectories: a win of 2 tokens and a loss of 6 (it ran to the step limit)
    assert token_weight(2, 8, 2, "token-mean") == pytest.approx(1 / 8)
    assert token_weight(6, 8, 2, "token-mean") == pytest.approx(1 / 8)
    assert token_weight(2, 8, 2, "trajectory-mean") == pytest.approx(1 / 4)  # 1 / (2 * 2)
    assert token_weight(6, 8, 2, "trajectory-mean") == pytest.approx(1 / 12)  # 1 / (2 * 6)
    # either way the tokens' weights sum to 1; only trajectory-mean gives the two trajectories equal shares
    for mode in ("token-mean", "trajectory-mean"):
        assert 2 * token_weight(2, 8, 2, mode) + 6 * token_weight(6, 8, 2, mode) == pytest.approx(1.0)
    assert 2 * token_weight(2, 8, 2, "trajectory-mean") == pytest.approx(6 * token_weight(6, 8, 2, "trajectory-mean"))
    assert token_weight(0, 0, 0, "token-mean") == 0.0 and token_weight(0, 0, 0, "trajectory-mean") == 0.0
    with pytest.raises(ValueError, match="trajectory-mean"):
        token_weight(1, 1, 1, "seq-sum")


# ------------------------------------------------------------------ the whole objective
def test_seed_loss_adds_the_three_terms_by_hand():
    """L = L_grpo + c_kl * KL + lambda_opd * L_opd over three tokens of a mini-batch whose token
    weights here sum to W = 0.6, the first two with a skill, holding half of its skill tokens."""
    logp = torch.tensor([-1.0, -2.0, -0.5], requires_grad=True)
    advantages = torch.tensor([1.0, 1.0, -2.0])
    weights = torch.tensor([0.25, 0.25, 0.1])
    ref = torch.tensor([-1.0, -1.5, -0.5])
    skill = torch.tensor([-0.5, -2.5, 0.0])
    mask = torch.tensor([1.0, 1.0, 0.0])
    loss, parts = seed_loss(
        logp,
        logp.detach(),  # on-policy: every ratio is 1, nothing is clipped
        advantages,
        weights,
        kl_coef=0.1,
        ref_logp=ref,
        lambda_opd=0.01,
        beta_opd=5.0,
        skill_logp=skill,
        skill_mask=mask,
        opd_share=0.5,
    )
    grpo = -(0.25 * 1 + 0.25 * 1 - 0.1 * 2)  # W * (weighted mean of -A * r) = sum_t w_t * -A_t
    kl = 0.25 * (math.exp(0.5) - 0.5 - 1)  # only the second token's reference differs (d = 0.5)
    gates = [sigmoid(5 * 0.5), sigmoid(5 * -0.5)]
    opd = (gates[0] * 0.5 + gates[1] * -0.5) / 2  # token mean over the two skill tokens
    assert parts["grpo_loss"] == pytest.approx(grpo)
    assert parts["kl"] == pytest.approx(kl)
    assert parts["opd_loss"] == pytest.approx(0.5 * opd)
    assert parts["gate_mean"] == pytest.approx(0.5 * sum(gates) / 2)
    assert float(loss) == pytest.approx(grpo + 0.1 * kl + 0.01 * 0.5 * opd)
    loss.backward()
    expected = [
        -0.25 + 0.01 * 0.5 * -gates[0] / 2,
        -0.25 + 0.1 * 0.25 * (1 - math.exp(0.5)) + 0.01 * 0.5 * -gates[1] / 2,
        0.2,
    ]
    assert logp.grad.tolist() == pytest.approx(expected)


def test_seed_loss_without_kl_or_skills_is_the_weighted_grpo_term():
    logp = torch.tensor([-1.0, -2.0], requires_grad=True)
    loss, parts = seed_loss(logp, logp.detach(), torch.tensor([1.0, -1.0]), torch.tensor([0.3, 0.2]))
    assert float(loss) == pytest.approx(-0.3 + 0.2) and set(parts) >= {"grpo_loss", "clip_frac"}
    assert "kl" not in parts and "opd_loss" not in parts
    with pytest.raises(ValueError, match="ref_logp"):
        seed_loss(logp, logp.detach(), torch.ones(2), torch.ones(2), kl_coef=0.1)
