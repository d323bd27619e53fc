"""How each kind of result file under ``docs/results/`` becomes the lines of a markdown table
(``scripts/render_results.py`` adds the source and writes the block).

- ``table``: a table as a run's report gave it (:func:`table`): its columns and rows, each cell text,
  a success rate recomputed from its counts, or a run paired with its start over tasks, McNemar's p
  recomputed from the discordant counts (:func:`cell`);
- ``skill_precondition``: ``scripts/measure_skill_prompt.py``'s rows (:func:`skill_precondition`);
- ``compare_seeds``: ``seed compare`` over several training seeds, every interval recomputed from the
  per-seed counts (:func:`compare_seeds`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

from seed_rl.compare.arm_summary import ArmResult, ArmSummary, paired_difference, rate_over_seeds, seed_differences
from seed_rl.compare.table import signal_table
from seed_rl.config import TrainConfig
from seed_rl.stats import Estimate, TaskWins, format_p, format_percent, mcnemar_exact, proportion_ci


def table(result: dict[str, Any]) -> list[str]:
    """A table as a run's report gave it: ``columns`` (the header), then ``rows``, each a list of
    one :func:`cell` per column. Only the success rates are recomputed; every other figure is the
    report's text, so a file quoted from an earlier run holds the figures as the README gave them."""
    columns = result["columns"]
    lines = [row(columns), "|" + "---|" * len(columns)]
    for cells in result["rows"]:
        if len(cells) != len(columns):
            raise ValueError(f"a row has {len(cells)} cells for {len(columns)} columns: {cells}")
        lines.append(row([cell(value) for value in cells]))
    return lines


def cell(value: str | float | dict[str, Any]) -> str:
    """One cell of a ``table``: text (or a number) as it stands, or a success rate from its counts.

    ``{"won": 6, "of": 32}`` is 6 wins of 32 episodes with Wilson's 95% interval, ``18.8 [8.9, 35.3]``;
    ``{"won": [9, 13, 10], "of": 32}`` is one count per training seed, their mean with Student's 95%
    interval, never narrower than Wilson's for the pooled episodes
    (:func:`~seed_rl.compare.arm_summary.rate_over_seeds`). ``"as"`` sets the rate in text,
    ``"**{rate}** / 0.0%"``, where ``{seeds}`` is each seed's rate: ``"{rate} ({seeds})"`` gives
    ``33.3 [17.2, 49.5] (28.1, 40.6, 31.2)``. ``{"arm_won_start_lost": b, "start_won_arm_lost": c}``
    is a run against its start paired over tasks (:func:`paired_cell`).
    """
    if not isinstance(value, dict):
        return str(value)
    if "arm_won_start_lost" in value:
        return paired_cell(value)
    won, episodes = value["won"], value["of"]
    per_seed = [proportion_ci(k, episodes) for k in (won if isinstance(won, list) else [won])]
    rate = rate_over_seeds(per_seed) if isinstance(won, list) else per_seed[0]
    seeds = ", ".join(f"{100 * e.mean:.1f}" for e in per_seed)
    return value.get("as", "{rate}").format(rate=format_percent(rate.mean, rate.low, rate.high), seeds=seeds)


def paired_cell(value: dict[str, Any]) -> str:
    """A run against its start, paired over tasks, from its discordant counts: ``{"arm_won_start_lost":
    6, "start_won_arm_lost": 0}`` is ``6 / 0, p 0.031``, with McNemar's exact two-sided p recomputed
    (:func:`~seed_rl.stats.mcnemar_exact`); lists (one count per training seed) give one such text
    per seed, joined by ``; ``. With ``"tasks"`` (several seeds: per task, how many seeds won it and
    whether the start did) the seeds' one test over tasks follows: the mean gain per task in points
    with its paired bootstrap 95% interval (:meth:`~seed_rl.stats.TaskWins.estimate`)."""
    gained, lost = value["arm_won_start_lost"], value["start_won_arm_lost"]
    pairs = zip(gained, lost, strict=True) if isinstance(gained, list) else [(gained, lost)]
    text = "; ".join(f"{b} / {c}, p {format_p(mcnemar_exact(b, c))}" for b, c in pairs)
    if "tasks" not in value:
        return text
    tasks = value["tasks"]
    pooled = TaskWins(tuple(tasks["arm_wins"]), tuple(tasks["start_won"]), tasks["runs"]).estimate()
    return f"{text}; over the {tasks['runs']} seeds, per task: {points_interval(pooled)} points"


def skill_precondition(result: dict[str, Any]) -> list[str]:
    """SEED's precondition, per model: greedy success with no skill, with each task's oracle skill,
    and with the scripted skill of the model's own no-skill episode (``scripts/measure_skill_prompt.py``);
    each skill as its episode skill alone (what SEED's teacher sees by default) and whole, its step
    skills in their steps' prompts (what it sees with ``step_skills=true``). Each oracle's gain over
    no skill is paired over the rooms: rooms it wins that no skill loses / the reverse, and McNemar's
    exact p (:func:`~seed_rl.stats.mcnemar_exact`)."""
    lines = [
        "| model | no skill | oracle skill | oracle, with step skills | own episode's skill "
        "| own, with step skills | oracle - no skill (points; rooms won / lost, p) "
        "| oracle with step skills - no skill |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for model in result["models"]:
        arms = model["arms"]
        none = arms["none"]
        names = ("none", "oracle", "oracle_steps", "own", "own_steps")
        cells = [
            format_percent(a["won"] / a["n"], a["low"], a["high"]) if a else "not measured"
            for a in map(arms.get, names)
        ]
        gains = [gain_over(arms[name], none) if name in arms else "not measured" for name in ("oracle", "oracle_steps")]
        lines.append(row([model["label"], *cells, *gains]))
    return lines


def gain_over(arm: dict[str, Any], none: dict[str, Any]) -> str:
    """``+21.9 (7 / 0, p 0.016)``: an arm's success minus no skill's in points, the rooms only it won
    and those only no skill won, and McNemar's exact p on those."""
    difference = arm["won"] / arm["n"] - none["won"] / none["n"]
    p = mcnemar_exact(arm["gains"], arm["losses"])
    return f"{points(difference)} ({arm['gains']} / {arm['losses']}, p {format_p(p)})"


def row(cells: list[str]) -> str:
    """A markdown table row; an empty cell is one space: ``| untrained | | 18.8 |``."""
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"


def points(value: float) -> str:
    """A difference of rates in percentage points, signed: ``+34.4``, ``-9.4``, ``0.0``."""
    text = f"{100 * value:+.1f}"
    return "0.0" if text in ("+0.0", "-0.0") else text


def points_interval(estimate: Estimate) -> str:
    """``+16.4 [-6.0, +38.8]``."""
    return f"{points(estimate.mean)} [{points(estimate.low)}, {points(estimate.high)}]"


def seed_arms(result: dict[str, Any]) -> dict[str, ArmSummary]:
    """Each arm of a ``compare_seeds`` file as ``seed compare`` holds it: one run per training seed
    (the file's ``seeds``, or the arm's own where it ran fewer), whose evaluation after ``E``
    training episodes is its split ``"E"`` (``won`` of ``rooms``, with Wilson's interval as an
    evaluation stores it), and whose metrics are the per-update signals the arm logged, if any."""
    rooms = result["rooms"]
    arms = {}
    for arm in result["arms"]:
        runs = []
        signals = arm.get("signals")
        for i, seed in enumerate(arm.get("seeds", result["seeds"])):
            evaluation = {}
            for episodes in map(str, result["episodes"]):
                rate = proportion_ci(arm["won"][episodes][i], rooms)
                evaluation[episodes] = {
                    "success": rate.mean,
                    "success_low": rate.low,
                    "success_high": rate.high,
                    "episodes": rooms,
                }
            metrics = signals[i] if signals else []
            runs.append(ArmResult(arm["name"], TrainConfig(seed=seed), metrics, evaluation))
        arms[arm["name"]] = ArmSummary(arm["name"], 1.0, runs)
    return arms


def compare_seeds(result: dict[str, Any]) -> list[str]:
    """Arms of ``seed compare`` over several training seeds, evaluated after a few training budgets
    (``--eval-every``): per arm, the mean success over seeds with its interval
    (:meth:`~seed_rl.compare.arm_summary.ArmSummary.success`: Student's over seeds, never narrower than
    Wilson's for the pooled episodes), each seed's success, the training signals and costs as the
    runs logged them; then each compared pair's differences paired by training seed
    (:func:`~seed_rl.compare.arm_summary.paired_difference`: Student's over seeds, never narrower than
    Newcombe's) with how many seeds the arm was ahead, tied and behind. Where the file has them: the
    warm start's row (``warm_start_won``), each run paired over tasks with the arms' start
    (``vs_start``, McNemar's p per seed) and SEED's signal per update (``signals``:
    :func:`~seed_rl.compare.table.signal_table`). Only the per-seed counts and the logged columns
    are stored; every interval is computed here, by ``seed_rl``'s own functions."""
    arms = seed_arms(result)
    budgets = [str(e) for e in result["episodes"]]
    first, last = result["train_updates"]
    reference = result["arms"][0]
    paired = any("vs_start" in arm for arm in result["arms"])
    start_label = "warm start" if "warm_start_won" in result else "untrained model"
    header = [
        "arm",
        "what differs",
        *[f"after {e} episodes" for e in budgets],
        *[f"per seed, after {e}" for e in budgets],
        *([f"vs {start_label}, paired over tasks, per seed: arm won / {start_label} won, McNemar p"] if paired else []),
        f"train success, update {first} -> {last}",
        "s / update (rollout + analysis + teacher + update)",
        f"train s, Stage 1 included (x {reference['name']})",
    ]
    untrained = proportion_ci(result["untrained_won"], result["rooms"])
    lines = [row(header), "|" + "---|" * len(header)]
    lines.append(row(["untrained", "", f"{untrained.percent()} (Wilson)", *[""] * (len(header) - 3)]))
    if "warm_start_won" in result:
        warm = proportion_ci(result["warm_start_won"], result["rooms"])
        lines.append(row(["warm start", "", f"{warm.percent()} (Wilson)", *[""] * (len(header) - 3)]))
    for arm in result["arms"]:
        summary = arms[arm["name"]]
        start, end = arm["train_success_percent"]
        phases = arm["seconds_per_update"]
        parts = " + ".join(str(phases[p]) for p in ("rollout", "analysis", "teacher", "update"))
        ratio = arm["train_seconds"] / reference["train_seconds"]
        lines.append(
            row(
                [
                    arm["name"],
                    arm["differs"],
                    *[summary.success(e).percent() for e in budgets],
                    *[", ".join(f"{100 * v:.1f}" for v in summary.per_seed(e)) for e in budgets],
                    *([paired_cell(arm["vs_start"]) if "vs_start" in arm else ""] if paired else []),
                    f"{start} -> {end}%",
                    f"{phases['total']} ({parts})",
                    f"{arm['train_seconds']} ({ratio:.2f}x)",
                ]
            )
        )
    same_seeds = all(arm.get("seeds", result["seeds"]) == result["seeds"] for arm in result["arms"])
    over = (
        f"the {len(result['seeds'])} seeds' differences" if same_seeds else "the differences of the seeds both arms ran"
    )
    lead = (
        "Paired by training seed (the runs of a seed share its train tasks, sampling seed and rooms), with "
        f"Student's 95% interval over {over}, never narrower than "
        "Newcombe's interval for the difference of the two arms' pooled rates:"
    )
    lines += ["", *textwrap.wrap(lead, width=100), ""]
    header = ["difference", f"after {budgets[0]} episodes: per seed", "mean [95% CI]", "ahead / tied / behind"]
    for e in budgets[1:]:
        header += [f"after {e} episodes: mean [95% CI]", "ahead / tied / behind"]
    lines += [row(header), "|" + "---|" * len(header)]
    for pair in result["differences"]:
        arm, other = arms[pair["arm"]], arms[pair["reference"]]
        label = f"{pair['arm']} - {pair['reference']}" + (f" ({pair['note']})" if pair.get("note") else "")
        cells = [label]
        for i, e in enumerate(budgets):
            by_seed = seed_differences(arm, other, e)
            estimate = paired_difference(arm, other, e)
            if estimate is None:
                raise ValueError(f"{label}: fewer than two common seeds")
            ahead, behind = sum(d > 0 for d in by_seed), sum(d < 0 for d in by_seed)
            if i == 0:
                cells.append(", ".join(points(d) for d in by_seed))
            cells += [points_interval(estimate), f"{ahead} / {len(by_seed) - ahead - behind} / {behind}"]
        lines.append(row(cells))
    signals = signal_table(list(arms.values()))
    if signals:
        lead = "SEED's signal per update (means over training seeds; the skill probe pooled over them):"
        lines += ["", lead, "", *signals.splitlines()]
    return lines


#: How each kind of result file becomes table lines.
RENDERERS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "table": table,
    "skill_precondition": skill_precondition,
    "compare_seeds": compare_seeds,
}
