"""The markdown of ``seed compare``: one row per arm (and data fraction), success per evaluation
split with its 95% interval over training seeds, the training signals, and the compute columns;
then, for each evaluation split, each run against the arms' start paired over tasks (McNemar's exact
test, where the evaluations kept per-task outcomes), the differences between arms paired by training
seed and success per task family; and success against the share of training data.

Every number is a mean over the arm's runs (one per training seed); intervals follow
:class:`~seed_rl.compare.arm_summary.ArmSummary`: Wilson over episodes for one seed, Student over seeds
for several.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from seed_rl.compare.arm_summary import (
    ArmResult,
    ArmSummary,
    StartRows,
    arms_start,
    family_estimates,
    family_names,
    paired_difference,
    paired_with_start,
    pooled_with_start,
    seed_differences,
    summary_estimate,
)
from seed_rl.compare.arms import ARMS
from seed_rl.stats import Estimate, format_p, format_percent, mcnemar_exact, mean_ci
from seed_rl.tables import markdown_table


def comparison_report(starts: StartRows, arms: Sequence[ArmSummary], differing: list[str]) -> str:
    """Every table of a comparison, with the notes that say how to read them. ``starts``: the
    untrained model's evaluation per split, and the warm start's where the arms start from one."""
    splits = list(starts["untrained"])
    parts = [main_table(starts, arms, differing)]
    label = arms_start(starts)[0].replace("untrained", "untrained model")
    for split in splits:
        paired = start_pairs_table(starts, arms, split)
        if paired:
            parts += ["", f"Each run against the {label}, paired over tasks ({split}; McNemar's exact test):", ""]
            parts.append(paired)
        pooled = pooled_start_table(starts, arms, split)
        if pooled:
            parts += ["", f"Each arm over its training seeds against the {label}, paired over tasks ({split}):", ""]
            parts.append(pooled)
    for split in splits:  # on seen and unseen tasks alike, where both were played
        differences = difference_table(arms, split)
        if differences:
            parts += ["", f"Differences paired by training seed ({split}):", "", differences]
    for split in splits:
        family = family_table(starts, arms, split)
        if family:
            parts += ["", f"Success % per task family ({split}):", "", family]
    signal = signal_table(arms)
    if signal:
        parts += ["", "SEED's signal per update (means over training seeds; the skill probe pooled):", "", signal]
    episodes = episodes_table(starts, arms, splits[0])
    if episodes:
        parts += ["", f"Success % against training episodes consumed ({splits[0]}; [95% CI]):", "", episodes]
    fractions = sorted({a.fraction for a in arms})
    if len(fractions) > 1:
        parts += ["", f"Success % by share of the train tasks ({splits[0]}; the paper's Table 6):", ""]
        parts.append(fraction_table(arms, splits[0], fractions))
    return "\n".join(parts)


def main_table(starts: StartRows, arms: Sequence[ArmSummary], differing: list[str]) -> str:
    splits = list(starts["untrained"])
    first = splits[0]
    headers = [
        "arm",
        *[f"eval success % {split} [95% CI]" for split in splits],
        f"eval invalid steps % {first} [95% CI]",
        "training seeds",
        "train success % (first -> last update)",
        "skill parse rate",
        "gate mean (over updates)",
        "share Delta > 0",
        "s / update: all (rollout + analysis + teacher + update)",
        "train s, Stage 1 included (x grpo)",
        "tokens generated (analyzer) / scored (teacher), per run",
    ]
    rows = [
        [
            label,
            *[_percent(summary_estimate(by_split[s])) for s in splits],
            _percent(summary_estimate(by_split[first], "invalid")),
            *[""] * (len(headers) - len(splits) - 2),
        ]
        for label, by_split in starts.items()
    ]
    for arm in arms:
        baseline = next((a for a in arms if a.name == "grpo" and a.fraction == arm.fraction), None)
        metrics = arm.metrics()
        played = sorted({r.episodes_in(i) for r in arm.runs for i in (0, len(r.metrics) - 1)})
        n = played[0] if len(played) == 1 else f"{played[0]}-{played[-1]}"  # (filter_groups: rounds vary)
        first_update = _mean([r.metrics[0]["success"] for r in arm.runs])
        last_update = _mean([r.metrics[-1]["success"] for r in arm.runs])
        seconds = mean_train_seconds(arm)
        ratio = f" ({seconds / mean_train_seconds(baseline):.2f}x)" if baseline else ""
        rows.append(
            [
                arm_label(arm),
                *[_percent(arm.success(s)) for s in splits],
                _percent(arm.success(first, "invalid")),
                seed_cell(arm, first),
                f"{100 * first_update:.0f} -> {100 * last_update:.0f} (n={n}{' each' if len(played) == 1 else ''})",
                _fmt(_mean([x.get("skill_parse_rate") for x in metrics])),
                over_updates([x.get("gate_mean") for x in metrics]),
                over_updates([x.get("delta_pos_frac") for x in metrics]),
                phase_seconds(metrics),
                f"{seconds:.0f}{ratio}",
                token_counts(metrics, runs=len(arm.runs)),
            ]
        )
    episodes = ", ".join(f"{starts['untrained'][s]['episodes']} of {s}" for s in splits)
    several = any(len(a.runs) > 1 for a in arms)
    note = f"\nEvaluation: {episodes} (fixed manifest tasks, no skill in context unless the arm says so) per run. " + (
        "Success of an arm with several training seeds: the mean over seeds with Student's 95% interval "
        "(seed-to-seed noise included), never narrower than Wilson's over the seeds' episodes pooled; "
        f"with one seed, and for the {' and '.join(starts)} rows: Wilson's over episodes."
        if several
        else "Success with the Wilson 95% interval over episodes: one training seed, so seed-to-seed noise "
        "is not in it (pass --train-seeds for that)."
    )
    for arm in arms:
        sizes = [r.library_skills for r in arm.runs if r.library_skills is not None]
        if sizes:
            note += (
                f"\n{arm_label(arm)}: a library of {', '.join(map(str, sizes))} skills (per seed) written in training; "
                "each task gets its best match by task text."
            )
    if differing:
        note += f"\nWARNING: the arms' budgets differ on {', '.join(differing)} (--force)."
    return markdown_table(headers, rows) + note


def start_pairs_table(starts: StartRows, arms: Sequence[ArmSummary], split: str) -> str:
    """Each run's final evaluation on ``split`` against the arms' start (the warm start, or else the
    untrained model), paired over tasks and evaluation seeds
    (:func:`~seed_rl.compare.arm_summary.paired_with_start`): the tasks only the run won, those only
    the start won, and McNemar's exact two-sided p; empty where no evaluation kept per-task outcomes."""
    label, start = arms_start(starts)
    rows = []
    for arm in arms:
        for run in arm.runs:
            try:
                paired = paired_with_start(run, start, split)
            except ValueError:  # evaluations of other tasks: no paired test
                rows.append([arm_label(arm), str(run.config.seed), "", "", "", "n/a (other tasks)"])
                continue
            if paired is not None:
                cells = [str(paired.b), str(paired.c), str(paired.pairs), format_p(paired.p)]
                rows.append([arm_label(arm), str(run.config.seed), *cells])
    if not rows:
        return ""
    headers = [
        "arm",
        "training seed",
        f"arm won, {label} lost",
        f"{label} won, arm lost",
        "paired episodes",
        "McNemar p",
    ]
    note = (
        f"\nThe same tasks and evaluation seeds for each run and the {label}; only the tasks where they "
        "differ count (b and c, the two counts): p is the two-sided exact binomial test of those at 1/2, "
        "p = min(1, 2 sum_{k <= min(b, c)} C(b + c, k) / 2^(b + c)); p < 0.05 is a difference in wins "
        "that the tasks' draw alone would rarely give (one test per training seed)."
    )
    return markdown_table(headers, rows) + note


def pooled_start_table(starts: StartRows, arms: Sequence[ArmSummary], split: str) -> str:
    """One test over tasks per arm of several training seeds, instead of one per seed
    (:func:`~seed_rl.compare.arm_summary.pooled_with_start`): the mean over tasks of the arm's win
    rate on the task (over its seeds) minus the start's, in points, with the paired bootstrap's 95%
    interval over tasks; empty where no arm has two runs with per-task outcomes."""
    label, start = arms_start(starts)
    rows = []
    for arm in arms:
        try:
            pooled = pooled_with_start(arm.runs, start, split)
        except ValueError:  # evaluations of other tasks: no paired test
            continue
        if pooled is not None:
            rows.append([arm_label(arm), str(pooled.runs), str(len(pooled.arm_wins)), _points(pooled.estimate())])
    if not rows:
        return ""
    headers = ["arm", "training seeds", "tasks", f"gain over the {label} per task, points [95% CI]"]
    note = (
        f"\nd_i = the arm's win rate on task i over its seeds - the {label}'s (0 or 1); the interval is the "
        "percentile bootstrap of the mean d over tasks (10,000 resamples): one test over tasks, the unit that "
        "was drawn, that excludes 0 at 95% where the arm wins more tasks than its start."
    )
    return markdown_table(headers, rows) + note


def compared_pairs(arms: Sequence[ArmSummary]) -> list[tuple[ArmSummary, ArmSummary]]:
    """(arm, reference) pairs at one data fraction: every arm against GRPO, and every SEED
    ablation (``seed-*``) against SEED, which it differs from by one part."""
    by_key = {(a.name, a.fraction): a for a in arms}
    pairs = []
    for arm in arms:
        for reference in ("grpo", "seed"):
            other = by_key.get((reference, arm.fraction))
            compared = reference == "grpo" or arm.name.startswith("seed-")
            if other is not None and other is not arm and compared:
                pairs.append((arm, other))
    return pairs


def difference_table(arms: Sequence[ArmSummary], split: str) -> str:
    """Success and invalid-step differences (percentage points) of each compared pair, paired by
    training seed (:func:`~seed_rl.compare.arm_summary.paired_difference`); empty where no pair shares two
    seeds."""
    rows = []
    for arm, reference in compared_pairs(arms):
        success = paired_difference(arm, reference, split)
        if success is None:  # fewer than two common seeds (the same seeds for the invalid rate)
            continue
        invalid = paired_difference(arm, reference, split, "invalid")
        by_seed = seed_differences(arm, reference, split)
        ahead, behind = sum(d > 0 for d in by_seed), sum(d < 0 for d in by_seed)
        rows.append(
            [
                f"{arm_label(arm)} - {arm_label(reference)}",
                str(len(by_seed)),
                _points(success),
                _points(invalid),
                f"{ahead} / {len(by_seed) - ahead - behind} / {behind}",
            ]
        )
    if not rows:
        return ""
    headers = [
        "arms",
        "common seeds",
        "success difference, points [95% CI]",
        "invalid-step difference, points [95% CI]",
        "seeds ahead / tied / behind",
    ]
    note = (
        "\nEach training seed's difference between the two runs (same train tasks, sampling seed and "
        "evaluation rooms), with Student's 95% interval over the seeds, never narrower than Newcombe's "
        "for the two arms' pooled rates; an interval that holds 0 is no measured difference."
    )
    return markdown_table(headers, rows) + note


def signal_table(arms: Sequence[ArmSummary]) -> str:
    """Per update of each arm that writes skills: OPD's gate mean and share of tokens with
    ``Delta > 0`` (means over the arm's seeds), and, where the runs probed their skills
    (``skill_probe``), the training batch's success with each episode's own skill in context
    against the same episodes without it, pooled over seeds, with the episodes only one of them won.
    A last row per probed arm pools every update, with the exact two-sided sign test of those two
    counts: the probe and the rollout are two samples of the same episode's task, so without an
    effect of the skill each is as likely as the other to be the one that won (p < 0.05: the skill
    changes success). Empty where no arm has either."""
    rows = []
    for arm in arms:
        updates = min(len(r.metrics) for r in arm.runs)
        pooled: list[dict[str, Any]] = []
        for u in range(updates):
            lines = [r.metrics[u] for r in arm.runs]
            gate, share = (_mean([m.get(key) for m in lines]) for key in ("gate_mean", "delta_pos_frac"))
            probed = [m for m in lines if "skill_probe_episodes" in m]
            if math.isnan(gate) and not probed:
                continue
            pooled += probed
            rows.append([arm_label(arm), str(u + 1), _fmt(gate), _fmt(share), _probe_cell(probed)])
        if pooled:
            every = [r.metrics[u] for r in arm.runs for u in range(updates)]
            gate, share = (_mean([m.get(key) for m in every]) for key in ("gate_mean", "delta_pos_frac"))
            gained, lost = (round(sum(m[f"skill_probe_{k}"] for m in pooled)) for k in ("gained", "lost"))
            cell = f"{_probe_cell(pooled)}, p {format_p(mcnemar_exact(gained, lost))}"
            rows.append([arm_label(arm), f"all {updates}", _fmt(gate), _fmt(share), cell])
    if not rows:
        return ""
    headers = [
        "arm",
        "update",
        "gate mean",
        "share Delta > 0",
        "train batch success % with its own skill / without (episodes only the skill won / only without)",
    ]
    return markdown_table(headers, rows)


def _probe_cell(probed: list[dict[str, Any]]) -> str:
    """The skill probe of some updates' metrics, pooled: ``67 / 17 (3 / 0, n=6)``; "" where none probed."""
    if not probed:
        return ""
    n = sum(m["skill_probe_episodes"] for m in probed)
    won = sum(m["skill_probe_episodes"] * m["skill_probe_success"] for m in probed)
    won_without = sum(m["skill_probe_episodes"] * m["skill_probe_success_without"] for m in probed)
    gained = sum(m["skill_probe_gained"] for m in probed)
    lost = sum(m["skill_probe_lost"] for m in probed)
    return f"{100 * won / n:.0f} / {100 * won_without / n:.0f} ({gained:.0f} / {lost:.0f}, n={n:.0f})"


def _points(estimate: Estimate) -> str:
    return f"{100 * estimate.mean:+.1f} [{100 * estimate.low:+.1f}, {100 * estimate.high:+.1f}]"


def family_table(starts: StartRows, arms: Sequence[ArmSummary], split: str) -> str:
    """Success per task family (ALFWorld's six task types); empty where the env has none."""
    names = family_names(starts, arms, split)
    if not names:
        return ""
    rows = [
        [label, *[_family_cell(family_estimates(by_split[split]), f) for f in names]]
        for label, by_split in starts.items()
    ]
    rows += [[arm_label(arm), *[_family_cell(arm.families(split), f) for f in names]] for arm in arms]
    return markdown_table(["arm", *names], rows)


def episodes_table(starts: StartRows, arms: Sequence[ArmSummary], split: str) -> str:
    """Evaluation success after each number of training episodes at which every run of an arm was
    evaluated (``seed compare --eval-every``), the arms' start (the untrained or warm-started model)
    at 0; empty when no arm has more than its final evaluation."""
    if not arms:
        return ""
    widest = max(a.fraction for a in arms)
    curves = {arm_label(a): dict(a.eval_curve()) for a in arms if a.fraction == widest}
    if not any(len(points) > 1 for points in curves.values()):
        return ""
    episodes = sorted({e for points in curves.values() for e in points})
    label, start = arms_start(starts)
    headers = ["arm", f"0 ({label})", *map(str, episodes)]
    rows = [[label, _percent(summary_estimate(start[split])), *[""] * len(episodes)]]
    rows += [
        [name, "", *[_percent(points[e]) if e in points else "" for e in episodes]] for name, points in curves.items()
    ]
    return markdown_table(headers, rows)


def fraction_table(arms: Sequence[ArmSummary], split: str, fractions: list[float]) -> str:
    names = list(dict.fromkeys(a.name for a in arms))
    cells = {(a.name, a.fraction): _percent(a.success(split)) for a in arms}
    rows = [[name, *[cells.get((name, f), "") for f in fractions]] for name in names]
    return markdown_table(["arm", *[f"{100 * f:g}% of train tasks" for f in fractions]], rows)


def arm_label(arm: ArmSummary) -> str:
    """The arm's row name: its label where its name alone could mislead, and its share of the data."""
    name = ARMS[arm.name].label if arm.name in ARMS and ARMS[arm.name].label else arm.name
    return name if arm.fraction == 1 else f"{name} @ {100 * arm.fraction:g}% data"


def seed_cell(arm: ArmSummary, split: str) -> str:
    """``3 (25.0, 18.8, 31.2)``: how many training seeds, and each one's success %."""
    if len(arm.runs) == 1:
        return f"1 (seed {arm.seeds[0]})"
    return f"{len(arm.runs)} ({', '.join(f'{100 * v:.1f}' for v in arm.per_seed(split))})"


def _family_cell(families: dict[str, Estimate], name: str) -> str:
    if name not in families:
        return ""
    estimate = families[name]
    return f"{_percent(estimate)} (n={estimate.n})"


def _percent(estimate: Estimate) -> str:
    low = None if math.isnan(estimate.low) else estimate.low
    high = None if math.isnan(estimate.high) else estimate.high
    return format_percent(estimate.mean, low, high)


def train_seconds(arm: ArmResult) -> float:
    """A run's wall-clock to train: every update, plus Stage 1 where it ran (not a cached adapter's
    reuse: its training time, as measured when it was trained)."""
    stage1 = float(arm.stage1.get("seconds", 0.0)) if arm.stage1 else 0.0
    return sum(x["seconds_total"] for x in arm.metrics) + stage1


def mean_train_seconds(arm: ArmSummary) -> float:
    return _mean([train_seconds(r) for r in arm.runs])


def mean_phase_seconds(metrics: list[dict[str, Any]]) -> dict[str, float]:
    """Mean seconds per update over ``metrics``: ``total``, ``rollout``, ``analysis``, ``teacher``
    and ``update`` (the re-score and reference passes, when a run has them, count in "update")."""
    means = {"total": _mean([x["seconds_total"] for x in metrics])}
    for phase in ("rollout", "analysis", "teacher"):
        means[phase] = _mean([x.get(f"seconds_{phase}", 0.0) for x in metrics])
    means["update"] = _mean(
        [sum(x.get(f"seconds_{p}", 0.0) for p in ("update", "rescore", "reference")) for x in metrics]
    )
    return means


def phase_seconds(metrics: list[dict[str, Any]]) -> str:
    """Mean seconds per update, in all and per phase (:func:`mean_phase_seconds`): ``12 (5 + 3 + 1 + 3)``."""
    means = mean_phase_seconds(metrics)
    parts = " + ".join(f"{means[p]:.0f}" for p in ("rollout", "analysis", "teacher", "update"))
    return f"{means['total']:.0f} ({parts})"


def token_counts(metrics: list[dict[str, Any]], runs: int = 1) -> str:
    """Tokens generated (of which by the analyzer) / scored (of which under h_skill): the sums over
    ``metrics`` (every update of ``runs`` runs) divided by ``runs``."""

    def total(key: str) -> int:
        return round(sum(x[key] for x in metrics) / runs)

    if any("tokens_scored_teacher" not in x for x in metrics):  # an older run: totals only
        return f"{total('tokens_generated'):,} / {total('tokens_scored'):,}"
    return (
        f"{total('tokens_generated'):,} ({total('tokens_generated_analyzer'):,}) / "
        f"{total('tokens_scored'):,} ({total('tokens_scored_teacher'):,})"
    )


def _mean(values: list[float | None]) -> float:
    clean = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(clean) / len(clean) if clean else math.nan


def over_updates(values: list[float | None]) -> str:
    """The mean over updates with its normal 95% interval, or "" where the arm has no such value."""
    clean = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not clean:
        return ""
    estimate = mean_ci(clean)
    if estimate.n < 2:
        return f"{estimate.mean:.2f}"
    return f"{estimate.mean:.2f} [{estimate.low:.2f}, {estimate.high:.2f}]"


def _fmt(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.2f}"
