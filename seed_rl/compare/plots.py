"""The PNG of a comparison: learning curves with 95% bands, final success with 95% intervals, and,
where they apply, success per task family and success against the share of training data.

Bands and intervals are :class:`~seed_rl.compare.arm_summary.ArmSummary`'s: over episodes for one
training seed, over seeds for several.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from seed_rl.compare.arm_summary import (
    ArmSummary,
    StartRows,
    arms_start,
    family_estimates,
    family_names,
    summary_estimate,
)
from seed_rl.compare.arms import ARMS
from seed_rl.stats import Estimate


def error_bars(estimates: Sequence[Estimate]) -> list[list[float]]:
    """Matplotlib's ``yerr``: distances below and above each mean (0 where an interval is missing)."""

    def gap(value: float) -> float:
        return 0.0 if value != value else max(0.0, value)  # NaN: no interval (one run of a mean)

    return [[gap(e.mean - e.low) for e in estimates], [gap(e.high - e.mean) for e in estimates]]


def plot_comparison(path: Path, starts: StartRows, arms: Sequence[ArmSummary]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    split = next(iter(starts["untrained"]))
    families = family_names(starts, arms, split)
    greys = dict(zip(starts, ["lightgrey", "grey"][-len(starts) :], strict=True))
    fractions = sorted({a.fraction for a in arms})
    shown = [a for a in arms if a.fraction == fractions[-1]]
    evaluated = [a for a in shown if len(a.eval_curve()) > 1]
    panels = 2 + bool(families) + (len(fractions) > 1) + bool(evaluated)
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4.2), squeeze=False)
    curves, bars, *rest = axes[0]
    colours = {name: f"C{i}" for i, name in enumerate(dict.fromkeys(a.name for a in arms))}

    for arm in arms:
        if arm.fraction != fractions[-1] or (arm.name in ARMS and ARMS[arm.name].trains_as):
            continue  # an arm that shares another's training shares its curve
        xs, ys, lows, highs = arm.curve()
        curves.plot(xs, ys, marker="o", color=colours[arm.name], label=f"{arm.name} ({len(arm.runs)} seed(s))")
        curves.fill_between(xs, lows, highs, color=colours[arm.name], alpha=0.15)
    curves.set(xlabel="update", ylabel="training success", ylim=(0, 1), title="training episodes (95% band)")
    curves.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    curves.legend(fontsize=8)

    estimates = [summary_estimate(by_split[split]) for by_split in starts.values()]
    estimates += [a.success(split) for a in shown]
    names = [*starts, *[a.name for a in shown]]
    bars.bar(names, [e.mean for e in estimates], yerr=error_bars(estimates), capsize=4,
             color=[*greys.values(), *[colours[a.name] for a in shown]])  # fmt: skip
    episodes = starts["untrained"][split]["episodes"]
    bars.set(ylim=(0, 1), ylabel="success", title=f"{split}, n={episodes} per run (95% CI)")
    bars.tick_params(axis="x", labelrotation=30)

    if families:
        ax = rest.pop(0)
        width = 0.8 / (len(shown) + 1)
        rows = [(label, greys[label], family_estimates(by_split[split])) for label, by_split in starts.items()]
        rows += [(a.name, colours[a.name], a.families(split)) for a in shown]
        for k, (name, colour, found) in enumerate(rows):
            xs = [i + (k - len(rows) / 2 + 0.5) * width for i in range(len(families))]
            values = [found.get(f, Estimate(0.0, 0.0, 0.0, 0)) for f in families]
            ax.bar(xs, [v.mean for v in values], width, yerr=error_bars(values), capsize=2, color=colour, label=name)
        ax.set_xticks(range(len(families)), families, rotation=30, ha="right", fontsize=8)
        ax.set(ylim=(0, 1), ylabel="success", title=f"per task family, {split} (95% CI)")
        ax.legend(fontsize=7)

    if evaluated:
        ax = rest.pop(0)
        start = summary_estimate(arms_start(starts)[1][split])
        for arm in evaluated:
            points = [(0, start), *arm.eval_curve()]
            ax.errorbar([e for e, _ in points], [p.mean for _, p in points], yerr=error_bars([p for _, p in points]),
                        marker="o", capsize=3, color=colours[arm.name], label=arm.name)  # fmt: skip
        ax.set(xlabel="training episodes", ylabel="success", ylim=(0, 1), title=f"{split} during training (95% CI)")
        ax.legend(fontsize=8)

    if len(fractions) > 1:
        ax = rest.pop(0)
        for name in colours:
            points = sorted(((a.fraction, a.success(split)) for a in arms if a.name == name), key=lambda p: p[0])
            xs = [100 * f for f, _ in points]
            ax.errorbar(xs, [e.mean for _, e in points], yerr=error_bars([e for _, e in points]), marker="o",
                        capsize=3, color=colours[name], label=name)  # fmt: skip
        ax.set(xlabel="% of train tasks", ylabel="success", ylim=(0, 1), title=f"data fraction, {split} (95% CI)")
        ax.legend(fontsize=8)

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
