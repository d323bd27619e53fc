"""PNG plots of a comparison: training success per update with 95% bands, and final success."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seed_rl.stats import proportion_ci


def learning_curve_band(
    metrics: list[dict[str, Any]], n: int
) -> tuple[list[int], list[float], list[float], list[float]]:
    """Per update: training success and its Wilson 95% band over the update's ``n`` episodes."""
    xs, ys, lows, highs = [], [], [], []
    for m in metrics:
        estimate = proportion_ci(round(m["success"] * n), n)
        xs.append(m["update"])
        ys.append(estimate.mean)
        lows.append(estimate.low)
        highs.append(estimate.high)
    return xs, ys, lows, highs


def plot_comparison(path: Path, untrained: dict[str, Any], arms: Sequence[Any]) -> Path:
    """Left: each arm's training success per update (Wilson 95% band). Right: success on the fixed
    ``valid_unseen`` tasks after training, with 95% intervals, next to the untrained model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, (curves, bars) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
    for arm in arms:
        n = arm.config.tasks_per_update * arm.config.group_size
        xs, ys, lows, highs = learning_curve_band(arm.metrics, n)
        (line,) = curves.plot(xs, ys, marker="o", label=arm.name)
        curves.fill_between(xs, lows, highs, color=line.get_color(), alpha=0.15)
    curves.set(xlabel="update", ylabel="training success", ylim=(0, 1), title="training episodes (95% band)")
    curves.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    curves.legend()
    names = ["untrained", *[a.name for a in arms]]
    results = [untrained, *[a.evaluation for a in arms]]
    means = [r["success"] for r in results]
    errors = [
        [max(0.0, m - r["success_low"]) for m, r in zip(means, results, strict=True)],
        [max(0.0, r["success_high"] - m) for m, r in zip(means, results, strict=True)],
    ]
    bars.bar(names, means, yerr=errors, capsize=4, color=["grey", *[f"C{i}" for i in range(len(arms))]])
    bars.set(ylim=(0, 1), ylabel="success", title=f"valid_unseen, n={untrained['episodes']} (95% CI)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
