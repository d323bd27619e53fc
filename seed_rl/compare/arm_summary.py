"""One arm of a comparison over its training seeds: success, per-family success and learning
curves, each with a 95% interval that counts the right kind of noise.

With one training seed the only noise we can see is the evaluation's, so success has the
Wilson interval over that run's episodes. With several, the runs are the samples: the mean
over seeds with Student's interval (:func:`~seed_rl.stats.mean_t_ci`), which also holds the
seed-to-seed spread that an outside reproduction of SEED found its gain to lie within.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from seed_rl.config import TrainConfig
from seed_rl.stats import Estimate, mean_t_ci, proportion_ci


@dataclass
class ArmResult:
    """One trained run of an arm: its config (seed, data fraction), metrics per update, its
    evaluation per split (``seed_rl.evaluate.play.EvalResult.summary`` dicts) and Stage 1's report."""

    name: str
    config: TrainConfig
    metrics: list[dict[str, Any]]
    evaluation: dict[str, dict[str, Any]]
    stage1: dict[str, Any] | None = None
    #: The skill-prompt arm: how many skills its library held at evaluation.
    library_skills: int | None = None
    #: Evaluations of the first split by update (the final one included; more with ``--eval-every``).
    curve: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def episodes_per_update(self) -> int:
        return self.config.tasks_per_update * self.config.group_size


def summary_estimate(summary: dict[str, Any], key: str = "success") -> Estimate:
    """The rate ``key`` (success or invalid) of one evaluation summary with its stored interval."""
    low_key, high_key = ("success_low", "success_high") if key == "success" else ("invalid_low", "invalid_high")
    value = summary["success"] if key == "success" else summary["invalid_rate"]
    return Estimate(value, summary.get(low_key, math.nan), summary.get(high_key, math.nan), summary["episodes"])


def family_estimates(summary: dict[str, Any]) -> dict[str, Estimate]:
    """Success per task family of one evaluation summary (Wilson intervals, as stored)."""
    return {name: Estimate(*values) for name, values in summary.get("by_family", {}).items()}


def rate_over_seeds(rates: Sequence[float]) -> Estimate:
    """The mean of per-seed rates with Student's 95% interval, cut to [0, 1] (a rate's range)."""
    estimate = mean_t_ci(rates)
    if estimate.n < 2:
        return estimate
    return Estimate(estimate.mean, max(0.0, estimate.low), min(1.0, estimate.high), estimate.n)


@dataclass
class ArmSummary:
    """The runs of one arm at one data fraction, one per training seed."""

    name: str
    fraction: float
    runs: list[ArmResult]

    @property
    def seeds(self) -> list[int]:
        return [r.config.seed for r in self.runs]

    def success(self, split: str, key: str = "success") -> Estimate:
        """One seed: that run's Wilson interval; several: the mean over seeds, Student's interval."""
        if len(self.runs) == 1:
            return summary_estimate(self.runs[0].evaluation[split], key)
        return rate_over_seeds([summary_estimate(r.evaluation[split], key).mean for r in self.runs])

    def per_seed(self, split: str) -> list[float]:
        return [r.evaluation[split]["success"] for r in self.runs]

    def families(self, split: str) -> dict[str, Estimate]:
        """Success per task family, aggregated over seeds as :meth:`success` is."""
        per_run = [family_estimates(r.evaluation[split]) for r in self.runs]
        if len(self.runs) == 1:
            return per_run[0]
        names = sorted({name for families in per_run for name in families})
        return {name: rate_over_seeds([f[name].mean for f in per_run if name in f]) for name in names}

    def curve(self) -> tuple[list[int], list[float], list[float], list[float]]:
        """Training success per update: one seed, the Wilson band over the update's episodes;
        several, the mean over seeds with Student's band (updates every seed reached)."""
        updates = min(len(r.metrics) for r in self.runs)
        xs, ys, lows, highs = [], [], [], []
        for u in range(updates):
            if len(self.runs) == 1:
                run = self.runs[0]
                n = run.episodes_per_update
                estimate = proportion_ci(round(run.metrics[u]["success"] * n), n)
            else:
                estimate = rate_over_seeds([r.metrics[u]["success"] for r in self.runs])
            xs.append(int(self.runs[0].metrics[u]["update"]))
            ys.append(estimate.mean)
            lows.append(estimate.low)
            highs.append(estimate.high)
        return xs, ys, lows, highs

    def eval_curve(self) -> list[tuple[int, Estimate]]:
        """Evaluation success against training episodes consumed, at each update where every run
        was evaluated (:attr:`ArmResult.curve`): Wilson's interval for one seed, Student's over seeds."""
        updates = sorted(set.intersection(*(set(r.curve) for r in self.runs)))
        points = []
        for u in updates:
            summaries = [r.curve[u] for r in self.runs]
            if len(self.runs) == 1:
                estimate = summary_estimate(summaries[0])
            else:
                estimate = rate_over_seeds([s["success"] for s in summaries])
            points.append((u * self.runs[0].episodes_per_update, estimate))
        return points

    def metrics(self) -> list[dict[str, Any]]:
        """Every update of every seed, for means over updates."""
        return [m for r in self.runs for m in r.metrics]


def paired_difference(arm: ArmSummary, reference: ArmSummary, split: str, key: str = "success") -> Estimate | None:
    """``arm - reference`` on ``split``, paired by training seed. Each seed both arms ran gives
    ``d_s = rate_arm(s) - rate_reference(s)`` (the two runs share the seed's train tasks, sampling
    seed and evaluation rooms); the result is ``mean(d) ± t_{0.975, n-1} · s_d / sqrt(n)``, Student's
    95% interval over those seeds (:func:`~seed_rl.stats.mean_t_ci`), cut to [-1, 1] (the range of a
    difference of rates). Pairing removes what the seeds share, so this interval can be narrower
    than the two arms' own intervals suggest. None with fewer than two common seeds: one difference
    has no spread to measure."""
    differences = seed_differences(arm, reference, split, key)
    if len(differences) < 2:
        return None
    estimate = mean_t_ci(differences)
    return Estimate(estimate.mean, max(-1.0, estimate.low), min(1.0, estimate.high), estimate.n)


def seed_differences(arm: ArmSummary, reference: ArmSummary, split: str, key: str = "success") -> list[float]:
    """``rate_arm(s) - rate_reference(s)`` for each training seed ``s`` both arms ran, by seed."""
    mine = {r.config.seed: summary_estimate(r.evaluation[split], key).mean for r in arm.runs}
    theirs = {r.config.seed: summary_estimate(r.evaluation[split], key).mean for r in reference.runs}
    return [mine[s] - theirs[s] for s in sorted(set(mine) & set(theirs))]


def start_label(untrained: dict[str, dict[str, Any]]) -> str:
    """The name of the row every arm starts from: ``untrained``, or ``warm start`` (its evaluation says)."""
    return str(next(iter(untrained.values()), {}).get("policy", "untrained"))


def family_names(untrained: dict[str, dict[str, Any]], arms: Sequence[ArmSummary], split: str) -> list[str]:
    """Every task family that the untrained model or any arm met on ``split``, sorted."""
    return sorted(set(family_estimates(untrained[split])) | {f for a in arms for f in a.families(split)})


def group_results(results: Sequence[ArmResult]) -> list[ArmSummary]:
    """The runs grouped by (data fraction, arm), in the order they first appear."""
    groups: dict[tuple[float, str], ArmSummary] = {}
    for result in results:
        key = (result.config.train_fraction, result.name)
        groups.setdefault(key, ArmSummary(result.name, result.config.train_fraction, [])).runs.append(result)
    return list(groups.values())
