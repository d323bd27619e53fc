"""Turn a finished ``seed compare`` folder into a small result file under ``docs/results/``.

    python scripts/comparison_result.py runs/compare --out docs/results/demo_main.json \\
        --command "seed compare --config demo --eval-every 3" --wall "27 min 10 s" --machine "2 cores, bf16"

The file is of kind ``table`` (``scripts/result_kinds.py``): one row for the untrained model, one for
the warm start where the arms started from one, and one per arm, with each success stored as its
counts (won of the episodes played; per training seed where there are several), so that
``scripts/render_results.py`` recomputes every interval; where the evaluations kept per-task outcomes,
a column pairs each arm with its start (the warm start, else the untrained model) over tasks: the
tasks only the arm won and those only the start won, from which the renderer recomputes McNemar's
exact p; the training columns are the text ``seed compare``'s own table gives them
(:mod:`seed_rl.compare.table`), those no row fills left out. The run folders are not needed
afterwards: the file holds what the README shows.

With ``--families`` the file is a ``table`` of the tasks won per task family, summed over each
arm's training seeds (the paper's Table 7 layout).

With ``--seeds`` the file is of kind ``compare_seeds`` instead, for a comparison over training seeds:
per arm and seed the tasks won after each evaluated budget, each run paired over tasks with its
start, the differences between arms paired by seed, and each update's SEED signals (gate, share
with Delta > 0, skill probe), every interval and p recomputed by the renderer (:func:`seeds_result`).
``--merge EARLIER.json`` puts the arms of an earlier ``compare_seeds`` file of the same comparison
(the same rooms, budgets and warm start; this folder's seeds among the earlier's) before this
folder's, so that arms trained in separate sessions share one table and their differences
(:func:`merged_seeds_result`).
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path
from typing import Any

from seed_rl.compare.arm_summary import ArmResult, group_results, paired_with_start, pooled_with_start
from seed_rl.compare.arms import ARMS
from seed_rl.compare.table import (
    arm_label,
    compared_pairs,
    mean_phase_seconds,
    over_updates,
    phase_seconds,
    train_seconds,
)
from seed_rl.config import from_dict


def counts(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"won": k, "of": n}`` for one evaluation, ``{"won": [k1, k2], "of": n, "as": "{rate} ({seeds})"}``
    for one per seed (shown as the mean with its interval, then each seed's rate)."""
    won = [round(s["success"] * s["episodes"]) for s in summaries]
    sizes = {s["episodes"] for s in summaries}
    if len(sizes) != 1:
        raise ValueError(f"the evaluations played different numbers of episodes: {sorted(sizes)}")
    if len(won) == 1:
        return {"won": won[0], "of": sizes.pop()}
    return {"won": won, "of": sizes.pop(), "as": "{rate} ({seeds})"}


def paired_counts(runs: list[ArmResult], start: dict[str, Any], split: str) -> dict[str, Any] | None:
    """Each run's final evaluation against the start's, paired over tasks (``seed compare``'s
    :func:`~seed_rl.compare.arm_summary.paired_with_start`), as the discordant counts that
    ``scripts/result_kinds.py`` recomputes McNemar's p from: ``{"arm_won_start_lost": b,
    "start_won_arm_lost": c}``, lists for several training seeds, and then also ``"tasks"``: per task,
    how many of the seeds won it and whether the start did, for one paired bootstrap over tasks
    (:func:`~seed_rl.compare.arm_summary.pooled_with_start`); None where a run or the start kept no
    per-task outcomes."""
    paired = [paired_with_start(r, start, split) for r in runs]
    if any(p is None for p in paired):
        return None
    b, c = [p.b for p in paired if p], [p.c for p in paired if p]
    result: dict[str, Any] = {
        "arm_won_start_lost": b[0] if len(b) == 1 else b,
        "start_won_arm_lost": c[0] if len(c) == 1 else c,
    }
    pooled = pooled_with_start(runs, start, split)
    if pooled is not None:
        result["tasks"] = {"runs": pooled.runs, "arm_wins": list(pooled.arm_wins), "start_won": list(pooled.start_won)}
    return result


def run_results(data: dict[str, Any]) -> list[ArmResult]:
    """The runs of a ``comparison.json``, as ``seed compare`` holds them."""
    return [
        ArmResult(
            r["arm"],
            from_dict(r["config"]),
            r["metrics"],
            r["evaluation"],
            curve={int(u): s for u, s in r["evaluation_curve"].items()},
            stage1=r["stage1"],
        )
        for r in data["runs"]
    ]


def fixed_episodes_per_update(results: list[ArmResult]) -> int:
    """Tasks x group, the episodes every update of ``results`` played; runs whose updates played
    more (``filter_groups``) are refused: their budgets in episodes differ, and budget columns
    here are headed by one count."""
    per_update = results[0].config.tasks_per_update * results[0].config.group_size
    played = {r.episodes_in(i) for r in results for i in range(len(r.metrics))}
    if played - {per_update}:
        raise ValueError(f"runs played {sorted(played)} episodes an update, not {per_update}: filter_groups runs")
    return per_update


def comparison_rows(data: dict[str, Any], split: str) -> tuple[list[str], list[list[Any]]]:
    """The columns and rows of a comparison's result file (see the module's docstring)."""
    results = run_results(data)
    arms = group_results(results)
    middle = sorted(set.intersection(*(set(r.curve) for r in results)) - {max(len(r.metrics) for r in results)})
    per_update = fixed_episodes_per_update(results) if middle else 0
    label, start = ("warm start", data["warm_start"]) if "warm_start" in data else ("untrained", data["untrained"])
    paired = {arm.name: paired_counts(arm.runs, start, split) for arm in arms}
    paired_column = [f"vs {label}, paired over tasks: arm won / {label} won, McNemar p"]
    columns = [
        "arm",
        f"{split}, {data['untrained'][split]['episodes']} tasks: success % [95% CI]",
        *[f"after {u * per_update} episodes" for u in middle],
        *(paired_column if any(paired.values()) else []),
        "train success % (first -> last update)",
        "skill parse rate",
        "gate mean",
        "share Delta > 0",
        "s / update (rollout + analysis + teacher + update)",
        "train s, Stage 1 included",
    ]
    blank = [""] * (len(columns) - 2)
    rows: list[list[Any]] = [["untrained", counts([data["untrained"][split]]), *blank]]
    if "warm_start" in data:
        rows.append(["warm start", counts([data["warm_start"][split]]), *blank])
    for arm in arms:
        metrics = arm.metrics()
        first = sum(r.metrics[0]["success"] for r in arm.runs) / len(arm.runs)
        last = sum(r.metrics[-1]["success"] for r in arm.runs) / len(arm.runs)
        parse = [m["skill_parse_rate"] for m in metrics if m.get("skill_parse_rate") is not None]
        rows.append(
            [
                arm_label(arm),
                counts([r.evaluation[split] for r in arm.runs]),
                *[counts([r.curve[u] for r in arm.runs]) for u in middle],
                *([paired[arm.name] or ""] if any(paired.values()) else []),
                f"{100 * first:.0f} -> {100 * last:.0f}",
                f"{sum(parse) / len(parse):.2f}" if parse else "",
                over_updates([m.get("gate_mean") for m in metrics]),
                over_updates([m.get("delta_pos_frac") for m in metrics]),
                phase_seconds(metrics),
                f"{sum(train_seconds(r) for r in arm.runs) / len(arm.runs):.0f}",
            ]
        )
    filled = [i for i in range(len(columns)) if any(row[i] != "" for row in rows)]  # (SEED's, in GRPO-only runs)
    return [columns[i] for i in filled], [[row[i] for i in filled] for row in rows]


#: The per-update metrics a ``compare_seeds`` file keeps for SEED's signal table
#: (:func:`~seed_rl.compare.table.signal_table`).
SIGNAL_KEYS = (
    "gate_mean",
    "delta_pos_frac",
    "skill_probe_episodes",
    "skill_probe_success",
    "skill_probe_success_without",
    "skill_probe_gained",
    "skill_probe_lost",
)


def seeds_result(data: dict[str, Any], split: str, differences: list[dict[str, str]]) -> dict[str, Any]:
    """The fields of a ``compare_seeds`` result file (``scripts/result_kinds.py``) from a comparison
    over training seeds: per arm and seed, the tasks won after each number of training episodes at
    which every run was evaluated (``--eval-every``; the last is the final evaluation), each run
    paired over tasks with the arms' start, the training columns, and each update's signals (gate,
    share with Delta > 0, skill probe); ``differences``: the pairs to difference by seed
    (``{"arm", "reference", "note"}``), by default every arm against GRPO and every SEED ablation
    against SEED (:func:`~seed_rl.compare.table.compared_pairs`)."""
    results = run_results(data)
    arms = group_results(results)
    updates = {len(r.metrics) for r in results}
    if len(updates) != 1:
        raise ValueError(f"the runs trained different numbers of updates: {sorted(updates)}")
    final = updates.pop()
    budgets = sorted(set.intersection(*(set(r.curve) for r in results)) | {final})
    # Budgets count the episodes trained. Runs that played more (filter_groups) are taken where the
    # final evaluation is the one budget, and their rows say how many they played.
    per_update = results[0].episodes_per_update if budgets == [final] else fixed_episodes_per_update(results)
    rooms = {r.evaluation[split]["episodes"] for r in results} | {data["untrained"][split]["episodes"]}
    if len(rooms) != 1:
        raise ValueError(f"the evaluations played different numbers of episodes: {sorted(rooms)}")
    start = data.get("warm_start", data["untrained"])
    rows = []
    for arm in arms:
        runs = sorted(arm.runs, key=lambda r: r.config.seed)
        won = {
            str(u * per_update): counts([r.evaluation[split] if u == final else r.curve[u] for r in runs])["won"]
            for u in budgets
        }
        metrics = [m for r in runs for m in r.metrics]
        phases = {phase: round(v) for phase, v in mean_phase_seconds(metrics).items()}
        differs = " ".join(o for o in ARMS[arm.name].overrides if o not in ARMS["grpo"].overrides)
        played = [r.episodes_through(final) for r in runs]
        if any(p != final * per_update for p in played):
            mean_played = f"{sum(played) / len(played):.0f} episodes played a seed, {final * per_update} trained"
            differs = f"{differs}; {mean_played}" if differs else mean_played
        row: dict[str, Any] = {
            "name": arm.name,
            "differs": differs,
            "seeds": [r.config.seed for r in runs],
            "won": {k: v if isinstance(v, list) else [v] for k, v in won.items()},
            "train_success_percent": [
                round(100 * sum(r.metrics[0]["success"] for r in runs) / len(runs)),
                round(100 * sum(r.metrics[-1]["success"] for r in runs) / len(runs)),
            ],
            "seconds_per_update": phases,
            "train_seconds": round(sum(train_seconds(r) for r in runs) / len(runs)),
        }
        paired = paired_counts(runs, start, split)
        if paired:
            row["vs_start"] = {k: v if isinstance(v, list | dict) else [v] for k, v in paired.items()}
        if any(k in m for m in metrics for k in SIGNAL_KEYS):
            row["signals"] = [[{k: m[k] for k in SIGNAL_KEYS if k in m} for m in r.metrics] for r in runs]
        rows.append(row)
    if not differences:
        differences = [{"arm": a.name, "reference": b.name} for a, b in compared_pairs(arms)]
    seeds = sorted({r.config.seed for r in results})
    result = {
        "rooms": rooms.pop(),
        "seeds": seeds,
        "episodes": [u * per_update for u in budgets],
        "untrained_won": counts([data["untrained"][split]])["won"],
    }
    if "warm_start" in data:
        result["warm_start_won"] = counts([data["warm_start"][split]])["won"]
    return {**result, "train_updates": [1, final], "arms": rows, "differences": differences}


#: What two ``compare_seeds`` files must share for their arms to be compared in one table: the
#: rooms and budgets, and the arms' start (every run is paired over tasks with it).
SHARED_FIELDS = ("rooms", "episodes", "warm_start_won", "train_updates")


def merged_seeds_result(earlier: dict[str, Any], later: dict[str, Any]) -> dict[str, Any]:
    """``later``'s ``compare_seeds`` fields with ``earlier``'s arms first: the same comparison (the
    :data:`SHARED_FIELDS` equal, ``later``'s training seeds among ``earlier``'s) run in two parts.
    Each arm keeps its own seeds, and differences pair the seeds two arms share. The differences
    are ``later``'s (give them with ``--differences`` where they pair arms across the parts). The
    untrained row is ``earlier``'s: no arm is paired with it, and where the parts ran on two
    machines the base model's bf16 greedy near-ties may flip a room between them (:func:`main`
    says so)."""
    for field in SHARED_FIELDS:
        if earlier.get(field) != later.get(field):
            raise ValueError(
                f"the files are not one comparison: {field} is {earlier.get(field)!r} in the earlier, "
                f"{later.get(field)!r} in this one"
            )
    if not set(later["seeds"]) <= set(earlier["seeds"]):
        raise ValueError(f"training seeds {later['seeds']} are not among the earlier file's {earlier['seeds']}")
    named = [arm["name"] for arm in earlier["arms"]]
    twice = [arm["name"] for arm in later["arms"] if arm["name"] in named]
    if twice:
        raise ValueError(f"arms in both files: {' '.join(twice)}")
    return {
        **later,
        "seeds": earlier["seeds"],
        "untrained_won": earlier["untrained_won"],
        "arms": [*earlier["arms"], *later["arms"]],
    }


#: Short column names for ALFWorld's task families (the paper's Table 7); other families keep their names.
FAMILY_COLUMNS = {
    "look_at_obj_in_light": "look",
    "pick_and_place_simple": "pick",
    "pick_clean_then_place_in_recep": "clean",
    "pick_cool_then_place_in_recep": "cool",
    "pick_heat_then_place_in_recep": "heat",
    "pick_two_obj_and_place": "pick2",
}


def families_result(data: dict[str, Any], split: str) -> tuple[list[str], list[list[str]]]:
    """The columns and rows of a per-family ``table`` file: per start and arm, the tasks of each
    family won, summed over the arm's training seeds, as ``won/played``."""

    def row(label: str, evaluations: list[dict[str, Any]]) -> list[str]:
        cells = [label]
        for family in families:
            per_run = [e["by_family"].get(family, [0.0, 0.0, 0.0, 0]) for e in evaluations]
            cells.append(f"{sum(round(f[0] * f[3]) for f in per_run)}/{sum(f[3] for f in per_run)}")
        return cells

    starts = [("untrained", data["untrained"][split])]
    if "warm_start" in data:
        starts = [("warm start", data["warm_start"][split])]
    families = sorted({f for _, e in starts for f in e.get("by_family", {})})
    rows = [row(label, [evaluation]) for label, evaluation in starts]
    for arm in group_results(run_results(data)):
        seeds = sorted(r.config.seed for r in arm.runs)
        label = f"{arm.name} (seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))})"
        rows.append(row(label, [r.evaluation[split] for r in sorted(arm.runs, key=lambda r: r.config.seed)]))
    return ["arm", *(FAMILY_COLUMNS.get(f, f) for f in families)], rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("folder", help="a seed compare --out folder holding comparison.json")
    parser.add_argument("--out", required=True, help="the result file to write (docs/results/NAME.json)")
    parser.add_argument("--command", required=True, help="the command that made the folder")
    parser.add_argument("--split", default="valid_unseen")
    parser.add_argument("--wall", default="", help="the command's wall time, as measured")
    parser.add_argument("--machine", default="", help="what it ran on")
    parser.add_argument(
        "--seeds",
        action="store_true",
        help="a compare_seeds file (per-seed counts, paired differences, per-update signals) instead of a table",
    )
    parser.add_argument(
        "--families",
        action="store_true",
        help="a table of the tasks won per task family (summed over seeds) instead",
    )
    parser.add_argument(
        "--differences",
        nargs="*",
        default=[],
        metavar="ARM:REFERENCE[:NOTE]",
        help="with --seeds: the pairs to difference by seed (default: every arm - grpo, every seed-* - seed)",
    )
    parser.add_argument(
        "--merge",
        metavar="EARLIER.json",
        help="with --seeds: put the arms of this earlier compare_seeds file of the same comparison first",
    )
    args = parser.parse_args()
    if args.merge and not args.seeds:
        parser.error("--merge goes with --seeds")
    data = json.loads((Path(args.folder) / "comparison.json").read_text(encoding="utf-8"))
    kind = "compare_seeds" if args.seeds else "table"
    result: dict[str, Any] = {"kind": kind, "date": datetime.date.today().isoformat(), "command": args.command}
    result.update({k: v for k, v in (("wall_time", args.wall), ("machine", args.machine)) if v})
    if args.seeds:
        pairs = [dict(zip(("arm", "reference", "note"), p.split(":", 2), strict=False)) for p in args.differences]
        seeds = seeds_result(data, args.split, pairs)
        if args.merge:
            earlier = json.loads(Path(args.merge).read_text(encoding="utf-8"))
            if earlier["untrained_won"] != seeds["untrained_won"]:
                print(
                    f"note: the untrained model won {seeds['untrained_won']} here and {earlier['untrained_won']} "
                    "in the earlier file; the table shows the earlier's: say so beside it"
                )
            seeds = merged_seeds_result(earlier, seeds)
            result["command"] = f"{earlier['command']}\n{args.command}"
        result.update(seeds)
    else:
        columns, rows = (families_result if args.families else comparison_rows)(data, args.split)
        result.update(columns=columns, rows=rows)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
