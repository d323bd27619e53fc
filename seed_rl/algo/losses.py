"""The losses of GRPO and SEED, as pure functions of per-token tensors.

Every function takes tensors of one shape (``(rows, tokens)`` or flat), a ``mask`` of
the same shape (1 on action tokens that count, 0 on padding), and returns a
**token mean** over the mask: ``sum(x * mask) / sum(mask)``, or 0 (still attached to the
graph) where the mask is empty. ``sg`` below is stop-gradient (``.detach()``).

SEED's total, per update:

    L = L_grpo + c_kl * KL + lambda_opd * L_opd

with :func:`ppo_clip_loss`, :func:`kl_low_var` and :func:`opd_loss`; the paper uses clip 0.2,
``c_kl = 0.01``, ``lambda_opd = 0.01`` and ``beta_opd = 5``.
"""

from __future__ import annotations

import torch

IS_MODES = ("truncate", "mask")
#: How GRPO's per-token terms are averaged over a mini-batch (:func:`token_weight`).
LOSS_AGGREGATIONS = ("token-mean", "trajectory-mean")


def token_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``sum(values * mask) / sum(mask)``; 0 (attached to ``values``' graph) for an empty mask."""
    mask = mask.to(values.dtype)
    total = mask.sum()
    if total == 0:
        return (values * 0.0).sum()
    return (values * mask).sum() / total


def token_weight(trajectory_tokens: int, total_tokens: int, trajectories: int, mode: str = "token-mean") -> float:
    """The weight of one action token of a trajectory with ``trajectory_tokens`` tokens (all its
    turns) in a mini-batch's GRPO loss ``L = sum_i sum_t w_i * l_it``. With ``T_i`` the tokens of
    trajectory ``i`` and ``E`` trajectories in the mini-batch:

        token-mean:       w_i = 1 / sum_j T_j       (L = sum_i sum_t l_it / sum_j T_j; DAPO)
        trajectory-mean:  w_i = 1 / (E * T_i)       (L = 1/E sum_i 1/T_i sum_t l_it: GRPO's
                                                     1/G sum_i 1/|o_i| sum_t, o_i the whole trajectory)

    Either way the weights of all tokens sum to 1. Under ``token-mean`` a trajectory weighs as much
    as it is long: in multi-turn play, where failures run to the step limit and successes end early,
    the failures' negative advantages then outweigh the successes' positive ones. ``trajectory-mean``
    gives every trajectory one share, as its one outcome reward does.
    """
    if mode not in LOSS_AGGREGATIONS:
        raise ValueError(f"mode must be one of {LOSS_AGGREGATIONS}, got {mode!r}")
    if mode == "token-mean":
        return 1.0 / total_tokens if total_tokens else 0.0
    return 1.0 / (trajectories * trajectory_tokens) if trajectories and trajectory_tokens else 0.0


def ppo_clip_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    is_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO's clipped surrogate, as GRPO uses it:

        r_t = exp(log pi_theta(a_t) - log pi_old(a_t))
        L   = mean_t max(-A_t * r_t, -A_t * clip(r_t, 1 - clip_low, 1 + clip_high))

    ``is_weights`` (optional, detached) multiply each token's term: the truncated
    importance-sampling correction for a sampler that differs from the learner
    (:func:`truncated_is_weights`).

    Stats: ``clip_frac`` (share of tokens where the clipped term is the larger one, i.e.
    the gradient is cut), ``ratio_mean``, ``ratio_max``, ``approx_kl``
    (``mean(old_logp - logp)``), and with ``is_weights`` their mean ``is_weight_mean``.
    """
    log_ratio = logp - old_logp.detach()
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    per_token = torch.maximum(unclipped, clipped)
    if is_weights is not None:
        per_token = per_token * is_weights.detach()
    loss = token_mean(per_token, mask)
    with torch.no_grad():
        on = mask.bool()
        stats = {
            "clip_frac": float(token_mean((clipped > unclipped).float(), mask)),
            "ratio_mean": float(token_mean(ratio, mask)),
            "ratio_max": float(ratio[on].max()) if on.any() else 1.0,
            "approx_kl": float(token_mean(-log_ratio, mask)),
        }
        if is_weights is not None:
            stats["is_weight_mean"] = float(token_mean(is_weights, mask))
    return loss, stats


def kl_low_var(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The low-variance ("k3") estimator of ``KL(pi_theta || pi_ref)`` on sampled tokens:

        d_t = log pi_ref(a_t) - log pi_theta(a_t)
        KL  = mean_t (exp(d_t) - d_t - 1)

    Each term is >= 0 and 0 exactly where the two log-probs agree. With LoRA the
    reference is the base model with the adapters disabled.
    """
    diff = ref_logp.detach() - logp
    return token_mean(torch.exp(diff) - diff - 1.0, mask)


def opd_loss(
    logp: torch.Tensor,
    logp_skill: torch.Tensor,
    mask: torch.Tensor,
    beta: float = 5.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """SEED's confidence-gated on-policy self-distillation on the sampled tokens:

        Delta_t = sg(log pi(a_t | h_skill) - log pi(a_t | h))
        g_t     = sigmoid(beta * Delta_t)
        L_opd   = mean_t g_t * (sg(log pi(a_t | h_skill)) - log pi(a_t | h))

    so ``dL/dtheta = -mean_t g_t * grad log pi(a_t | h_t)``: tokens the skill makes more
    likely (``Delta > 0``) are pushed up with a gate near 1; tokens it makes less likely
    get a gate near 0. ``logp`` carries the gradient; ``logp_skill`` (the teacher pass)
    never does. ``mask`` should cover only tokens of trajectories that have a skill.

    Stats: ``gate_mean``, ``delta_mean`` and ``delta_pos_frac`` (share of tokens with
    ``Delta > 0``), over the mask.
    """
    teacher = logp_skill.detach()
    delta = (teacher - logp).detach()
    gate = torch.sigmoid(beta * delta)
    loss = token_mean(gate * (teacher - logp), mask)
    with torch.no_grad():
        stats = {
            "gate_mean": float(token_mean(gate, mask)),
            "delta_mean": float(token_mean(delta, mask)),
            "delta_pos_frac": float(token_mean((delta > 0).float(), mask)),
        }
    return loss, stats


def truncated_is_weights(
    learner_logp: torch.Tensor, sampler_logp: torch.Tensor, cap: float = 2.0, mode: str = "truncate"
) -> torch.Tensor:
    """Per-token importance weights for a sampler (vLLM, bf16) that differs from the learner:

        w_t = min(exp(log pi_learner(a_t) - log pi_sampler(a_t)), cap)

    (``mode="truncate"``), or ``w_t = 1[ratio <= C]`` (``mode="mask"``: drop tokens whose
    ratio exceeds the cap). Detached: a correction of the estimator, not a loss term.
    """
    if mode not in IS_MODES:
        raise ValueError(f"mode must be one of {IS_MODES}, got {mode!r}")
    ratio = torch.exp((learner_logp - sampler_logp).detach())
    if mode == "truncate":
        return torch.clamp(ratio, max=cap)
    return (ratio <= cap).to(ratio.dtype)


def seed_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    token_weights: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    is_weights: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    ref_logp: torch.Tensor | None = None,
    lambda_opd: float = 0.0,
    beta_opd: float = 5.0,
    skill_logp: torch.Tensor | None = None,
    skill_mask: torch.Tensor | None = None,
    opd_share: float = 0.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """SEED's objective over some of a mini-batch's action tokens (flat tensors, one entry a token):

        L = L_grpo + c_kl * KL + lambda_opd * L_opd

    ``token_weights`` are the tokens' weights in the mini-batch's GRPO and KL means (they sum to
    1 over the whole mini-batch: :func:`token_weight`); with ``W`` their sum here, these tokens add
    ``W * L_grpo`` and ``W * KL``, each a mean under ``token_weights`` (:func:`ppo_clip_loss`,
    :func:`kl_low_var`; KL only where ``kl_coef > 0``, from ``ref_logp``). ``L_opd`` is
    :func:`opd_loss` over the tokens of ``skill_mask`` (those with a teacher log-prob in
    ``skill_logp``), weighted by ``opd_share``, their share of the mini-batch's skill tokens. So
    the losses of disjoint parts of a mini-batch add up to the mini-batch's loss exactly (gradient
    accumulation over micro-batches). With ``lambda_opd = 0`` OPD's statistics are still reported
    and it adds no gradient.

    Returns the loss and these tokens' share of each statistic: ``grpo_loss``, ``kl``, ``opd_loss``
    and those of :func:`ppo_clip_loss` (but ``ratio_max``) and :func:`opd_loss`.
    """
    weight = float(token_weights.sum())
    grpo, grpo_stats = ppo_clip_loss(logp, old_logp, advantages, token_weights, clip_low, clip_high, is_weights)
    loss = weight * grpo
    parts = {"grpo_loss": weight * float(grpo.detach())}
    parts.update({key: weight * value for key, value in grpo_stats.items() if key != "ratio_max"})
    if kl_coef > 0:
        if ref_logp is None:
            raise ValueError("kl_coef > 0 needs ref_logp")
        kl = kl_low_var(logp, ref_logp, token_weights)
        loss = loss + kl_coef * weight * kl
        parts["kl"] = weight * float(kl.detach())
    if skill_logp is not None and opd_share > 0:
        mask = skill_mask if skill_mask is not None else torch.ones_like(logp)
        opd, opd_stats = opd_loss(logp, skill_logp, mask, beta=beta_opd)
        loss = loss + lambda_opd * opd_share * opd
        parts["opd_loss"] = opd_share * float(opd.detach())
        parts.update({key: opd_share * value for key, value in opd_stats.items()})
    return loss, parts
