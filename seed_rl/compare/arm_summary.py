"""One arm of a comparison over its training seeds: success, per-family success and learning
curves, each with a 95% interval that counts the right kind of noise.

With one training seed the only noise we can see is the evaluation's, so success has the
Wilson interval over that run's episodes. With several, the runs are the samples: the mean
over seeds with Student's interval (:func:`~seed_rl.stats.mean_t_ci`), which also holds the
seed-to-seed spread that an outside reproduction of SEED found its gain to lie within.

Student's interval over two or three seeds collapses when their rates happen to agree (two
runs at 9 of 32 give ``28.1 [28.1, 28.1]``), as if the mean were known exactly. It never is
better known than the evaluation's episodes allow, so an interval over seeds is widened, where
narrower, to the one those episodes give pooled: Wilson's for a rate
(:func:`pooled_rate`), Newcombe's for a difference of two (:func:`newcombe_difference`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from seed_rl.config import TrainConfig
from seed_rl.stats import Estimate, PairedOutcomes, TaskWins, mean_t_ci, paired_outcomes, proportion_ci, task_wins


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

    def episodes_in(self, index: int) -> int:
        """Training episodes played in the update of ``metrics[index]``: its ``episodes_played``
        (more than tasks x group with ``filter_groups``; where a run has no such line, as older runs
        lack the key: tasks x group)."""
        line = self.metrics[index] if index < len(self.metrics) else {}
        return int(line.get("episodes_played", self.episodes_per_update))

    def episodes_through(self, update: int) -> int:
        """Training episodes played in updates 1 to ``update``."""
        return sum(self.episodes_in(i) for i in range(update))


def summary_estimate(summary: dict[str, Any], key: str = "success") -> Estimate:
    """The rate ``key`` (success or invalid) of one evaluation summary with its stored interval.
    ``n`` counts what the rate is over: episodes for success, steps for invalid (0 where an older
    summary lacks ``mean_steps``)."""
    if key == "success":
        low, high, n = summary.get("success_low"), summary.get("success_high"), summary["episodes"]
        return Estimate(summary["success"], _or_nan(low), _or_nan(high), n)
    low, high = summary.get("invalid_low"), summary.get("invalid_high")
    n = round(summary["mean_steps"] * summary["episodes"]) if "mean_steps" in summary else 0
    return Estimate(summary["invalid_rate"], _or_nan(low), _or_nan(high), n)


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value


def family_estimates(summary: dict[str, Any]) -> dict[str, Estimate]:
    """Success per task family of one evaluation summary (Wilson intervals, as stored)."""
    return {name: Estimate(*values) for name, values in summary.get("by_family", {}).items()}


def pooled_rate(estimates: Sequence[Estimate]) -> Estimate | None:
    """The runs' rates pooled: ``k = sum_s round(p_s n_s)`` of ``N = sum_s n_s``, with Wilson's
    interval (:func:`~seed_rl.stats.proportion_ci`); None where a run's count is unknown."""
    if not estimates or any(e.n <= 0 for e in estimates):
        return None
    return proportion_ci(sum(round(e.mean * e.n) for e in estimates), sum(e.n for e in estimates))


def rate_over_seeds(per_seed: Sequence[Estimate]) -> Estimate:
    """The mean of per-seed rates ``p_s`` with Student's 95% interval
    ``mean ± t_{0.975, S-1} · s_p / sqrt(S)``, widened where narrower to contain the pooled
    rate's Wilson interval (:func:`pooled_rate`; the mean is not better known than all the
    episodes say), cut to [0, 1] (a rate's range)."""
    estimate = mean_t_ci([e.mean for e in per_seed])
    if estimate.n < 2:
        return estimate
    low, high = estimate.low, estimate.high
    pooled = pooled_rate(per_seed)
    if pooled is not None:
        low, high = min(low, pooled.low), max(high, pooled.high)
    return Estimate(estimate.mean, max(0.0, low), min(1.0, high), estimate.n)


def newcombe_difference(a: Estimate, b: Estimate) -> tuple[float, float]:
    """Newcombe's 95% interval for ``p_a - p_b`` from the two rates' Wilson intervals ``[l, u]``
    (his method 10, 1998): ``d - sqrt((p_a - l_a)^2 + (u_b - p_b)^2)`` to
    ``d + sqrt((u_a - p_a)^2 + (p_b - l_b)^2)``. It treats the rates as independent, which
    overstates the noise of runs played on the same rooms: a floor, not the estimate."""
    d = a.mean - b.mean
    return (
        d - math.sqrt((a.mean - a.low) ** 2 + (b.high - b.mean) ** 2),
        d + math.sqrt((a.high - a.mean) ** 2 + (b.mean - b.low) ** 2),
    )


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
        return rate_over_seeds([summary_estimate(r.evaluation[split], key) for r in self.runs])

    def per_seed(self, split: str) -> list[float]:
        return [r.evaluation[split]["success"] for r in self.runs]

    def families(self, split: str) -> dict[str, Estimate]:
        """Success per task family, aggregated over seeds as :meth:`success` is."""
        per_run = [family_estimates(r.evaluation[split]) for r in self.runs]
        if len(self.runs) == 1:
            return per_run[0]
        names = sorted({name for families in per_run for name in families})
        return {name: rate_over_seeds([f[name] for f in per_run if name in f]) for name in names}

    def curve(self) -> tuple[list[int], list[float], list[float], list[float]]:
        """Training success per update: one seed, the Wilson band over the update's episodes;
        several, the mean over seeds with Student's band (updates every seed reached)."""
        updates = min(len(r.metrics) for r in self.runs)
        xs, ys, lows, highs = [], [], [], []
        for u in range(updates):
            if len(self.runs) == 1:
                run = self.runs[0]
                n = run.episodes_in(u)
                estimate = proportion_ci(round(run.metrics[u]["success"] * n), n)
            else:
                estimate = rate_over_seeds(
                    [Estimate(r.metrics[u]["success"], math.nan, math.nan, r.episodes_in(u)) for r in self.runs]
                )
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
                estimate = rate_over_seeds([summary_estimate(s) for s in summaries])
            consumed = round(sum(r.episodes_through(u) for r in self.runs) / len(self.runs))  # (the mean over seeds)
            points.append((consumed, estimate))
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
    than the two arms' own intervals suggest. Where it is narrower than Newcombe's interval for
    the difference of the two arms' pooled rates over those seeds (:func:`newcombe_difference`), it is
    widened to that: agreeing seeds do not make a difference exact. None with fewer than two common
    seeds: one difference has no spread to measure."""
    mine, theirs = _common_seed_estimates(arm, reference, split, key)
    if len(mine) < 2:
        return None
    estimate = mean_t_ci([a.mean - b.mean for a, b in zip(mine, theirs, strict=True)])
    low, high = estimate.low, estimate.high
    pooled_mine, pooled_theirs = pooled_rate(mine), pooled_rate(theirs)
    if pooled_mine is not None and pooled_theirs is not None:
        floor_low, floor_high = newcombe_difference(pooled_mine, pooled_theirs)
        low, high = min(low, floor_low), max(high, floor_high)
    return Estimate(estimate.mean, max(-1.0, low), min(1.0, high), estimate.n)


def seed_differences(arm: ArmSummary, reference: ArmSummary, split: str, key: str = "success") -> list[float]:
    """``rate_arm(s) - rate_reference(s)`` for each training seed ``s`` both arms ran, by seed."""
    mine, theirs = _common_seed_estimates(arm, reference, split, key)
    return [a.mean - b.mean for a, b in zip(mine, theirs, strict=True)]


def _common_seed_estimates(
    arm: ArmSummary, reference: ArmSummary, split: str, key: str
) -> tuple[list[Estimate], list[Estimate]]:
    """The two arms' rates on each training seed both ran, in seed order."""
    mine = {r.config.seed: summary_estimate(r.evaluation[split], key) for r in arm.runs}
    theirs = {r.config.seed: summary_estimate(r.evaluation[split], key) for r in reference.runs}
    common = sorted(set(mine) & set(theirs))
    return [mine[s] for s in common], [theirs[s] for s in common]


#: The models every arm is measured against, in order, each evaluated per split: label -> split ->
#: evaluation summary. Always ``"untrained"`` (the base model); with a warm start, ``"warm start"``
#: after it, where the arms start (:func:`arms_start`).
StartRows = dict[str, dict[str, dict[str, Any]]]


def arms_start(starts: StartRows) -> tuple[str, dict[str, dict[str, Any]]]:
    """The row every arm starts from, the last of ``starts``: its label and its evaluation per split."""
    label = list(starts)[-1]
    return label, starts[label]


def paired_with_start(run: ArmResult, start: dict[str, dict[str, Any]], split: str) -> PairedOutcomes | None:
    """``run``'s final evaluation on ``split`` against the start's (:func:`arms_start`), paired over
    tasks and evaluation seeds: ``b`` tasks the run won and the start lost, ``c`` the reverse, and
    McNemar's exact ``p`` (:func:`~seed_rl.stats.paired_outcomes`). None where either summary lacks
    per-task ``outcomes`` (files written before they were kept); ``ValueError`` where the two played
    other tasks."""
    mine = run.evaluation.get(split, {}).get("outcomes")
    theirs = start.get(split, {}).get("outcomes")
    if mine is None or theirs is None:
        return None
    return paired_outcomes(mine, theirs)


def pooled_with_start(runs: Sequence[ArmResult], start: dict[str, dict[str, Any]], split: str) -> TaskWins | None:
    """All of an arm's runs (its training seeds) against the start on ``split``, task by task
    (:func:`~seed_rl.stats.task_wins`), for one test over tasks rather than one per seed: its
    :meth:`~seed_rl.stats.TaskWins.estimate` is the mean gain per task with a paired bootstrap
    interval over tasks. None with fewer than two runs, or where a summary lacks per-task
    ``outcomes``; ``ValueError`` where they played other tasks."""
    mine = [run.evaluation.get(split, {}).get("outcomes") for run in runs]
    theirs = start.get(split, {}).get("outcomes")
    if len(runs) < 2 or theirs is None or any(outcomes is None for outcomes in mine):
        return None
    return task_wins(mine, theirs)


def family_names(starts: StartRows, arms: Sequence[ArmSummary], split: str) -> list[str]:
    """Every task family that a start row or any arm met on ``split``, sorted."""
    met = {f for by_split in starts.values() for f in family_estimates(by_split[split])}
    return sorted(met | {f for a in arms for f in a.families(split)})


def group_results(results: Sequence[ArmResult]) -> list[ArmSummary]:
    """The runs grouped by (data fraction, arm), in the order they first appear."""
    groups: dict[tuple[float, str], ArmSummary] = {}
    for result in results:
        key = (result.config.train_fraction, result.name)
        groups.setdefault(key, ArmSummary(result.name, result.config.train_fraction, [])).runs.append(result)
    return list(groups.values())
