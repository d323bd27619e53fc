"""One policy update from a batch of scored rows: ``L = L_GRPO + c_kl * KL + lambda_opd * L_opd``.

Each :class:`TrainRow` is one env step: its prompt, its sampled action tokens, and per
token the old log-prob, the trajectory's advantage, the reference log-prob (KL) and, for
episodes with a skill, the teacher log-prob under ``h_skill`` (OPD).

The batch splits into ``minibatches`` mini-batches of **whole trajectories**; each is one
optimizer step. A mini-batch is scored in micro-batches bounded by a token budget, with
gradient accumulation. The GRPO and KL terms are weighted means over the whole mini-batch's
tokens (``loss_agg``: every token alike, or every trajectory alike, :func:`~seed_rl.algo.losses.token_weight`),
OPD's a token mean over its skill rows: a micro-batch's term is weighted by its share of the
mini-batch's weight, so accumulation gives exactly the loss of one big batch.

A row whose advantage is 0, with no KL term and no skill, adds nothing to the gradient;
it is skipped (its tokens still count in the GRPO mean, so the loss is unchanged).

Where old log-probs come straight from the sampler (fp32, same weights), the first
mini-batch's pass is also a free check that they are exact: its largest difference from
the sampled log-probs is reported as ``sampler_gap_max``.

Where the sampler differs from the learner (bf16, vLLM), the old log-probs must be the
learner's. When every row is trained in the update's only optimizer step (one mini-batch,
one epoch), they are exactly the values of that step's own pass, before it: a row marked
``old_from_pass`` takes ``sg(log pi(a|h))`` from its pass with gradient as its old log-prob
(so the PPO ratio is 1, and the truncated importance weight ``min(pi/mu, C)`` corrects for the
sampler ``mu``), and no separate re-scoring pass is needed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from seed_rl.algo.losses import seed_loss, token_weight, truncated_is_weights
from seed_rl.config import TrainConfig
from seed_rl.records.rows import TrainRow
from seed_rl.train.learner.distributed import is_distributed, sum_dicts_over_processes, sum_over_processes
from seed_rl.train.learner.learner import Learner


@dataclass(frozen=True)
class LossSettings:
    """The terms of :func:`~seed_rl.algo.losses.seed_loss` and how its tokens are weighed
    (:meth:`from_config`: a run's)."""

    clip_low: float = 0.2
    clip_high: float = 0.2
    kl_coef: float = 0.01
    lambda_opd: float = 0.01
    beta_opd: float = 5.0
    temperature: float = 1.0
    is_cap: float = 2.0
    is_mode: str = "truncate"
    #: How the GRPO and KL terms average over a mini-batch's tokens (:func:`~seed_rl.algo.losses.token_weight`).
    loss_agg: str = "token-mean"
    #: Apply the truncated importance-sampling correction (the sampler differs from the learner).
    correct_sampler: bool = False

    @classmethod
    def from_config(cls, cfg: TrainConfig) -> LossSettings:
        """A run's loss: its config's loss keys, OPD only under ``algo=seed``, and the sampler
        correction where old log-probs are re-scored on the learner (``cfg.rescores``)."""
        return cls(
            clip_low=cfg.clip_low,
            clip_high=cfg.clip_high,
            kl_coef=cfg.kl_coef,
            lambda_opd=cfg.lambda_opd if cfg.algo == "seed" else 0.0,
            beta_opd=cfg.beta_opd,
            temperature=cfg.temperature,
            is_cap=cfg.is_cap,
            is_mode=cfg.is_mode,
            loss_agg=cfg.loss_agg,
            correct_sampler=cfg.rescores,
        )


def trains(row: TrainRow, s: LossSettings) -> bool:
    """Whether ``row`` adds to the gradient: a non-zero advantage, a KL term, or a skill with OPD on.
    Other rows are skipped (their tokens still count in the GRPO mean)."""
    return row.advantage != 0 or s.kl_coef > 0 or (row.skill_logp is not None and s.lambda_opd > 0)


def minibatch_episodes(episodes: Sequence[int], minibatches: int, rng: np.random.Generator) -> list[list[int]]:
    """Shuffle the episodes and cut them into ``minibatches`` near-equal groups. Alone, empty groups
    are dropped; under data parallelism every process keeps ``minibatches`` groups, empty or not, so
    that all of them take the same optimizer steps together."""
    order = list(rng.permutation(np.asarray(sorted(set(episodes)), dtype=np.int64)))
    chunks = [list(map(int, chunk)) for chunk in np.array_split(order, minibatches)]
    return chunks if is_distributed() else [chunk for chunk in chunks if chunk]


def optimize(
    learner: Learner,
    rows: Sequence[TrainRow],
    settings: LossSettings,
    *,
    minibatches: int = 1,
    epochs: int = 1,
    rng: np.random.Generator | None = None,
    on_micro_batch: Callable[[], None] | None = None,
) -> dict[str, float]:
    """Run the update: ``epochs`` passes over the rows, each cut into ``minibatches`` mini-batches of
    whole trajectories, each mini-batch one optimizer step on

        L = L_GRPO + c_kl * KL + lambda_opd * L_opd        (:func:`~seed_rl.algo.losses.seed_loss`)

    over the rows that train. Returns the mean of each loss and statistic over optimizer steps."""
    if minibatches * epochs > 1 and any(r.old_from_pass for r in rows):
        raise ValueError(
            "rows marked old_from_pass need the update to take one optimizer step (minibatches=1, "
            f"epochs=1), not minibatches={minibatches}, epochs={epochs}: re-score their old log-probs first"
        )
    rng = rng or np.random.default_rng(0)
    by_episode: dict[int, list[TrainRow]] = defaultdict(list)
    for row in rows:
        by_episode[row.episode].append(row)
    totals: dict[str, list[float]] = defaultdict(list)
    gaps: list[torch.Tensor] = []
    for epoch in range(epochs):
        for k, chunk in enumerate(minibatch_episodes(list(by_episode), minibatches, rng)):
            batch = [row for e in chunk for row in by_episode[e]]
            active = [row for row in batch if trains(row, settings)]
            weight_of, n_opd = _token_weights(batch, active, settings.loss_agg)
            sums: dict[str, float] = defaultdict(float)
            # micro-batches under the token budget and the memory plan, gradients accumulating
            passes = learner.passes_with_gradient([r.score for r in active], temperature=settings.temperature)
            for micro, logps in passes:
                micro_rows = [active[i] for i in micro]
                if epoch == 0 and k == 0:  # scored by the pre-update weights: compare with the sampler
                    gaps.extend(_sampler_gaps(micro_rows, logps))
                loss, parts = seed_loss(**_loss_inputs(micro_rows, logps, settings, weight_of, n_opd))
                loss.backward()
                for key, value in parts.items():
                    sums[key] += value
                if on_micro_batch is not None:
                    on_micro_batch()
            grad_norm = learner.step()
            for key, value in _step_statistics(sums, batch, active, weight_of, settings, grad_norm).items():
                totals[key].append(value)
    out = {key: float(np.mean(values)) for key, values in totals.items()}
    if gaps and (not settings.correct_sampler or any(r.old_from_pass for r in rows)):
        every = torch.cat(gaps)
        out["sampler_gap_max"] = float(every.max())
        out["sampler_gap_mean"] = float(every.mean())
    return out


def _sampler_gaps(rows: list[TrainRow], logps: list[torch.Tensor]) -> list[torch.Tensor]:
    """``|log pi_learner - log mu_sampler|`` per token of the rows that carry the sampler's log-probs."""
    pairs = zip(logps, rows, strict=True)
    return [(lp.detach() - r.sampler_logp.to(lp.device)).abs() for lp, r in pairs if r.sampler_logp is not None]


def _step_statistics(
    sums: dict[str, float],
    rows: list[TrainRow],
    active: list[TrainRow],
    weight_of: dict[int, float],
    s: LossSettings,
    grad_norm: float,
) -> dict[str, float]:
    """One optimizer step's statistics, summed over processes: the loss terms, the PPO statistics as
    means over the rows trained (not the skipped), the gradient norm and the rows trained."""
    out = sum_dicts_over_processes(sums)
    (active_share,) = sum_over_processes([sum(weight_of[r.episode] * r.tokens for r in active)])
    for key in ("clip_frac", "ratio_mean", "approx_kl", "is_weight_mean"):
        if key in out and active_share > 0:
            out[key] /= active_share
    out["grad_norm"] = grad_norm
    out["loss"] = out.get("grpo_loss", 0.0) + s.kl_coef * out.get("kl", 0.0) + s.lambda_opd * out.get("opd_loss", 0.0)
    out["rows_trained"], out["rows_skipped"] = sum_over_processes([len(active), len(rows) - len(active)])
    return out


def _token_weights(rows: list[TrainRow], active: list[TrainRow], loss_agg: str) -> tuple[dict[int, float], int]:
    """Each trajectory's token weight in the mini-batch's GRPO and KL means (``loss_agg``), and the
    number of skill tokens OPD's token mean runs over: all the skill rows' when lambda_opd > 0;
    with lambda_opd = 0 (statistics only) the rows of tied groups are not scored, so they do not
    count. Data-parallel processes each hold some rows: the counts run over every process's."""
    tokens_of: dict[int, int] = defaultdict(int)
    for r in rows:
        tokens_of[r.episode] += r.tokens
    local = [sum(tokens_of.values()), sum(r.tokens for r in active if r.skill_logp is not None), len(tokens_of)]
    n_tokens, n_opd, trajectories = (int(v) for v in sum_over_processes(local))
    return {e: token_weight(t, n_tokens, trajectories, loss_agg) for e, t in tokens_of.items()}, n_opd


def _loss_inputs(
    micro: list[TrainRow], logps: list[torch.Tensor], s: LossSettings, weight_of: dict[int, float], n_opd: int
) -> dict:
    """The keyword arguments of :func:`~seed_rl.algo.losses.seed_loss` for a micro-batch's rows:
    their tokens' log-probs (with gradient), old log-probs, advantages and weights, the sampler
    correction, the KL reference and the teacher log-probs under ``h_skill``, all on the device of
    the log-probs (the sampler's come as CPU tensors). A row marked ``old_from_pass`` takes its old
    log-probs from this pass."""
    logp = torch.cat(logps)
    like = {"device": logp.device, "dtype": logp.dtype}
    for row, lp in zip(micro, logps, strict=True):
        if row.old_from_pass:
            row.old_logp, row.old_is_learners = lp.detach().float(), True

    def per_token(value_of: Callable[[TrainRow], float]) -> torch.Tensor:
        return torch.cat([torch.full((r.tokens,), float(value_of(r))) for r in micro]).to(**like)

    old = torch.cat([r.old_logp.to(logp.device) for r in micro]).to(**like)
    inputs = {
        "logp": logp,
        "old_logp": old,
        "advantages": per_token(lambda r: r.advantage),
        "token_weights": per_token(lambda r: weight_of[r.episode]),
        "clip_low": s.clip_low,
        "clip_high": s.clip_high,
        "kl_coef": s.kl_coef,
        "lambda_opd": s.lambda_opd,
        "beta_opd": s.beta_opd,
    }
    if s.correct_sampler and all(r.sampler_logp is not None for r in micro):
        sampler = torch.cat([r.sampler_logp.to(logp.device) for r in micro]).to(**like)
        inputs["is_weights"] = truncated_is_weights(old, sampler, s.is_cap, s.is_mode)
    if s.kl_coef > 0:
        inputs["ref_logp"] = torch.cat([r.ref_logp.to(logp.device) for r in micro]).to(**like)
    if n_opd:
        mask = per_token(lambda r: r.skill_logp is not None)
        teacher = torch.cat(
            [r.skill_logp.to(logp.device) if r.skill_logp is not None else torch.zeros(r.tokens, **like) for r in micro]
        )
        inputs.update(skill_logp=teacher.to(**like), skill_mask=mask, opd_share=float(mask.sum()) / n_opd)
    return inputs
