"""The READMEs' result tables are rendered from the committed result files (``scripts/render_results.py``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import render_results

ARM = {"won": 3, "n": 8, "low": 0.136, "high": 0.694, "gains": 0, "losses": 0}


def precondition_file(folder: Path, oracle_won: int = 6, step_arms: dict | None = None) -> None:
    oracle = {**ARM, "won": oracle_won, "gains": 3, "losses": 1}
    result = {
        "kind": "skill_precondition",
        "date": "2026-12-06",
        "command": "python scripts/measure_skill_prompt.py --config demo",
        "models": [{"label": "untrained", "arms": {"none": ARM, "oracle": oracle, "own": ARM, **(step_arms or {})}}],
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "skill_precondition.json").write_text(json.dumps(result), encoding="utf-8")


def test_every_readme_table_matches_its_result_file():
    assert render_results.stale_blocks() == []


def test_every_result_file_is_rendered_and_names_its_command_and_date():
    blocks = {
        match.group("name")
        for document in render_results.DOCUMENTS
        for match in render_results.BLOCK.finditer((render_results.ROOT / document).read_text(encoding="utf-8"))
    }
    files = {path.stem for path in render_results.RESULTS.glob("*.json")}
    assert files == blocks  # no result file that no README shows, no block without its file
    for name in files:
        result = json.loads((render_results.RESULTS / f"{name}.json").read_text(encoding="utf-8"))
        assert result["command"].strip() and result["date"].strip(), name


def test_the_precondition_shows_both_oracles_gains_where_measured(tmp_path):
    steps = {"oracle_steps": {**ARM, "won": 8, "low": 0.676, "high": 1.0, "gains": 5, "losses": 0}, "own_steps": ARM}
    precondition_file(tmp_path, step_arms=steps)
    out = render_results.rendered("<!-- results: skill_precondition -->\n<!-- /results -->\n", tmp_path)
    rows = [line for line in out.splitlines() if line.startswith("| untrained")]
    # 8/8 with step skills against 3/8 with none: +62.5 points, 5 rooms won and none lost (p = 2 / 32)
    assert rows == [
        "| untrained | 37.5 [13.6, 69.4] | 75.0 [13.6, 69.4] | 100.0 [67.6, 100.0] | 37.5 [13.6, 69.4] "
        "| 37.5 [13.6, 69.4] | +37.5 (3 / 1, p 0.625) | +62.5 (5 / 0, p 0.062) |"
    ]


def test_a_cell_edited_by_hand_in_a_readme_is_reported(tmp_path):
    # the committed READMEs and result files, with one figure of one rendered table changed by hand
    for document in render_results.DOCUMENTS:
        (tmp_path / document).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / document).write_text((render_results.ROOT / document).read_text(encoding="utf-8"))
    readme = tmp_path / "README.md"
    text = readme.read_text(encoding="utf-8")
    row = "| Sokoban (`demo`, 3 steps) | 18.8 [8.9, 35.3] / 0.0% |"
    assert text.count(row) == 1
    readme.write_text(text.replace(row, row.replace("18.8", "19.8")), encoding="utf-8")
    assert render_results.stale_blocks(tmp_path) == ["README.md: warm_start"]
    readme.write_text(render_results.rendered(readme.read_text(encoding="utf-8")), encoding="utf-8")
    assert render_results.stale_blocks(tmp_path) == []  # rendering puts the file's figure back
    assert readme.read_text(encoding="utf-8") == text


def test_a_block_is_rendered_by_hand(tmp_path):
    precondition_file(tmp_path)
    text = "before\n<!-- results: skill_precondition -->\nold\n<!-- /results -->\nafter\n"
    out = render_results.rendered(text, tmp_path)
    rows = [line for line in out.splitlines() if line.startswith("| untrained")]
    # 3/8 = 37.5%, 6/8 = 75.0%: 37.5 points, 3 rooms won and 1 lost against no skill; a row measured
    # before step skills were says so in their columns
    # (McNemar: 3 / 1 discordant rooms, p = 2 * (1 + 4) / 16 = 0.625)
    assert rows == [
        "| untrained | 37.5 [13.6, 69.4] | 75.0 [13.6, 69.4] | not measured | 37.5 [13.6, 69.4] | not measured "
        "| +37.5 (3 / 1, p 0.625) | not measured |"
    ]
    assert out.startswith("before\n<!-- results: skill_precondition -->\n") and out.endswith(
        "<!-- /results -->\nafter\n"
    )
    assert "python scripts/measure_skill_prompt.py --config demo" in out and "made 2026-12-06" in out
    assert render_results.rendered(out, tmp_path) == out  # rendering is idempotent


def test_a_block_that_drifted_from_its_file_is_reported(tmp_path):
    precondition_file(tmp_path)
    (tmp_path / "README.md").write_text(
        render_results.rendered("<!-- results: skill_precondition -->\n<!-- /results -->\n", tmp_path)
    )
    (tmp_path / "seed_rl").mkdir()
    (tmp_path / "seed_rl" / "README.md").write_text("no tables\n")
    assert render_results.stale_blocks(tmp_path, tmp_path) == []
    precondition_file(tmp_path, oracle_won=7)  # the result file changed, the README did not
    assert render_results.stale_blocks(tmp_path, tmp_path) == ["README.md: skill_precondition"]


def test_a_missing_result_file_or_kind_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"skill_precondition\.json is missing"):
        render_results.render("skill_precondition", tmp_path)
    (tmp_path / "odd.json").write_text(json.dumps({"kind": "odd", "date": "", "command": ""}))
    with pytest.raises(ValueError, match="no renderer for kind 'odd'; known: compare_seeds, skill_precondition, table"):
        render_results.render("odd", tmp_path)


def compare_seeds_file(folder: Path) -> None:
    arm = {"train_success_percent": [10, 20], "train_seconds": 30}
    arm["seconds_per_update"] = {"total": 3, "rollout": 1, "analysis": 0, "teacher": 0, "update": 2}
    result = {
        "kind": "compare_seeds",
        "date": "2026-12-04",
        "quoted": "figures quoted from the runs of 2026-12-04; the run folders are gone",
        "command": "seed compare --config demo --arms a b --train-seeds 0 1",
        "rooms": 4,
        "seeds": [0, 1],
        "episodes": [4, 8],
        "untrained_won": 2,
        "train_updates": [1, 2],
        "arms": [
            {**arm, "name": "a", "differs": "", "won": {"4": [2, 2], "8": [3, 3]}},
            {**arm, "name": "b", "differs": "lambda 0", "won": {"4": [1, 3], "8": [2, 2]}, "train_seconds": 45},
        ],
        "differences": [{"arm": "a", "reference": "b", "note": "OPD"}],
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "seeds.json").write_text(json.dumps(result), encoding="utf-8")


def test_a_comparison_over_seeds_is_recomputed_from_its_counts(tmp_path):
    compare_seeds_file(tmp_path)
    out = render_results.render("seeds", tmp_path)
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    # Wilson, z = 1.96, z^2 = 3.8415: k/n at p = 1/2 is 1/2 ± z sqrt(1/(4n) + z^2/(4n^2)) / (1 + z^2/n):
    # 2/4: ± 1.96 * 0.3500 / 1.9604 = ± 0.3500 -> [15.0, 85.0]; 4/8: ± 1.96 * 0.2151 / 1.4802 = ± 0.2848
    # -> [21.5, 78.5]. 6/8: centre (0.75 + 0.2401) / 1.4802 = 0.6689, half 1.96 * 0.1961 / 1.4802 = 0.2596
    # -> [40.9, 92.9].
    # Two seeds: Student's half-width is t(0.975, 1) * |x1 - x2| / 2 = 12.706 * |x1 - x2| / 2, so seeds that
    # agree give no width (the pooled episodes' floor is the interval) and seeds 50 points apart give
    # ± 3.18, cut to the range.
    # a after 4: 2/4, 2/4 -> 50.0, floor Wilson 4/8; after 8: 3/4, 3/4 -> 75.0, floor Wilson 6/8.
    # b after 4: 1/4, 3/4 -> 50.0 ± 318 -> [0, 100]; after 8: 2/4, 2/4 -> floor Wilson 4/8.
    # Train seconds 45 against a's 30: 1.50x.
    assert rows[:4] == [
        "| arm | what differs | after 4 episodes | after 8 episodes | per seed, after 4 | per seed, after 8 "
        "| train success, update 1 -> 2 | s / update (rollout + analysis + teacher + update) "
        "| train s, Stage 1 included (x a) |",
        "| untrained | | 50.0 [15.0, 85.0] (Wilson) | | | | | | |",
        "| a | | 50.0 [21.5, 78.5] | 75.0 [40.9, 92.9] | 50.0, 50.0 | 75.0, 75.0 | 10 -> 20% | 3 (1 + 0 + 0 + 2) "
        "| 30 (1.00x) |",
        "| b | lambda 0 | 50.0 [0.0, 100.0] | 50.0 [21.5, 78.5] | 25.0, 75.0 | 50.0, 50.0 | 10 -> 20% "
        "| 3 (1 + 0 + 0 + 2) | 45 (1.50x) |",
    ]
    # a - b after 4: +25, -25 per seed, mean 0 ± 12.706 * 25 -> [-100, +100]; one seed ahead, one behind.
    # After 8: +25, +25, so Student's interval is the point 25; Newcombe's floor for 6/8 - 4/8 is
    # 25 - sqrt((75.0 - 40.9)^2 + (78.5 - 50)^2) = 25 - sqrt(1161 + 811) = 25 - 44.4 = -19.4 to
    # 25 + sqrt((92.9 - 75)^2 + (50 - 21.5)^2) = 25 + sqrt(319 + 811) = 25 + 33.6 = +58.6; both seeds ahead.
    assert (
        rows[-1]
        == "| a - b (OPD) | +25.0, -25.0 | 0.0 [-100.0, +100.0] | 1 / 0 / 1 | +25.0 [-19.4, +58.6] | 2 / 0 / 0 |"
    )
    assert "Student's 95% interval over the 2 seeds' differences" in " ".join(out.splitlines())
    assert out.endswith(
        "`docs/results/seeds.json` (figures quoted from the runs of 2026-12-04; the run folders are gone), "
        "made 2026-12-04 by:\n\n```bash\nseed compare --config demo --arms a b --train-seeds 0 1\n```\n"
    )


def table_file(folder: Path, **fields) -> None:
    result = {
        "kind": "table",
        "date": "2026-12-05",
        "machine": "2 CPU cores (fp32)",
        "quoted": "figures quoted from the README of 2026-12-05",
        "command": "seed compare --config alfworld_warm --arms grpo seed --train-seeds 0 1 2",
        "columns": ["arm", "success", "unseen (seed 0, 1, 2)", "s / update"],
        "rows": [
            ["start", {"won": 6, "of": 32}, {"won": 0, "of": 32, "as": "{rate} / 100%"}, ""],
            [
                "GRPO",
                {"won": 24, "of": 32, "as": "**{rate}**"},
                {"won": [9, 13, 10], "of": 32, "as": "{rate} ({seeds})"},
                209,
            ],
        ],
        **fields,
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "measured.json").write_text(json.dumps(result), encoding="utf-8")


def test_a_table_keeps_its_text_and_recomputes_its_rates(tmp_path):
    table_file(tmp_path)
    out = render_results.render("measured", tmp_path)
    # Wilson, 6/32: centre (0.1875 + 0.0600) / 1.1200 = 0.2210, half 1.96 * sqrt(0.004761 + 0.000938) / 1.12
    # = 0.1321 -> [8.9, 35.3]; 24/32 -> [57.9, 86.7]; 0/32 -> [0, z^2 / (n + z^2)] = [0.0, 10.7].
    # Three seeds, 9, 13 and 10 of 32: mean 33.3, s = 6.51 points, Student's half-width
    # 4.303 * 6.51 / sqrt(3) = 16.2 -> [17.2, 49.5], wider than Wilson's for 32 of 96 (about [24.7, 43.2]).
    assert out.splitlines()[:4] == [
        "| arm | success | unseen (seed 0, 1, 2) | s / update |",
        "|---|---|---|---|",
        "| start | 18.8 [8.9, 35.3] | 0.0 [0.0, 10.7] / 100% | |",
        "| GRPO | **75.0 [57.9, 86.7]** | 33.3 [17.2, 49.5] (28.1, 40.6, 31.2) | 209 |",
    ]
    assert out.endswith(
        "`docs/results/measured.json` (figures quoted from the README of 2026-12-05), made 2026-12-05 on "
        "2 CPU cores (fp32) by:\n\n```bash\n"
        "seed compare --config alfworld_warm --arms grpo seed --train-seeds 0 1 2\n```\n"
    )


def test_a_table_row_with_a_cell_too_many_or_too_few_is_refused(tmp_path):
    table_file(tmp_path, rows=[["start", "18.8", ""]])
    with pytest.raises(ValueError, match="a row has 3 cells for 4 columns"):
        render_results.render("measured", tmp_path)


def comparison_file(final: dict[str, int], middle: dict[str, int]) -> dict:
    """A ``seed compare`` comparison.json of two one-seed arms, 4 rooms, evaluated after update 1 and at 2."""
    from seed_rl.config import load_config

    def summary(won: int) -> dict:
        return {"success": won / 4, "success_low": 0.0, "success_high": 1.0, "episodes": 4}

    metrics = [
        {"success": 0.25, "seconds_total": 10.0, "seconds_rollout": 4.0, "seconds_update": 6.0},
        {"success": 0.75, "seconds_total": 12.0, "seconds_rollout": 4.0, "seconds_update": 8.0},
    ]
    runs = []
    for arm in ("grpo", "seed"):
        config = load_config("demo", ["updates=2", "tasks_per_update=2", "group_size=2"]).to_dict()
        runs.append(
            {
                "arm": arm,
                "config": config,
                "metrics": [{**m, "gate_mean": 0.5, "delta_pos_frac": 0.6} if arm == "seed" else m for m in metrics],
                "evaluation": {"valid_unseen": summary(final[arm])},
                "evaluation_curve": {"1": summary(middle[arm]), "2": summary(final[arm])},
                "stage1": {"seconds": 5.0} if arm == "seed" else None,
            }
        )
    return {"untrained": {"valid_unseen": summary(1)}, "warm_start": {"valid_unseen": summary(2)}, "runs": runs}


def test_a_comparison_becomes_a_result_file_of_counts_and_the_runs_own_columns():
    import comparison_result
    import result_kinds

    data = comparison_file(final={"grpo": 3, "seed": 4}, middle={"grpo": 2, "seed": 1})
    columns, rows = comparison_result.comparison_rows(data, "valid_unseen")
    assert columns[1:3] == ["valid_unseen, 4 tasks: success % [95% CI]", "after 4 episodes"]  # update 1 of 2x2
    by_arm = {r[0]: r for r in rows}
    assert [r[0] for r in rows][:2] == ["untrained", "warm start"]
    assert by_arm["untrained"][1] == {"won": 1, "of": 4} and by_arm["warm start"][1] == {"won": 2, "of": 4}
    assert by_arm["grpo"][1:3] == [{"won": 3, "of": 4}, {"won": 2, "of": 4}]
    assert by_arm["seed"][1:3] == [{"won": 4, "of": 4}, {"won": 1, "of": 4}]
    assert "skill parse rate" not in columns  # no run parsed a skill: a column no row fills is left out
    gate = columns.index("gate mean")
    assert by_arm["grpo"][3] == "25 -> 75" and by_arm["grpo"][gate] == ""  # no gate without OPD
    assert by_arm["seed"][gate].startswith("0.50") and by_arm["seed"][-2] == "11 (4 + 0 + 0 + 7)"
    assert by_arm["seed"][-1] == "27" and by_arm["grpo"][-1] == "22"  # 10 + 12, and Stage 1's 5 s
    assert all(len(r) == len(columns) for r in rows)
    # several training seeds: one count each, shown as the mean with its interval, then each seed's rate
    two = comparison_result.counts([{"success": 0.25, "episodes": 4}, {"success": 0.75, "episodes": 4}])
    assert two == {"won": [1, 3], "of": 4, "as": "{rate} ({seeds})"}
    assert result_kinds.cell(two).endswith(" (25.0, 75.0)")
    data["runs"][1]["evaluation"]["valid_unseen"]["episodes"] = 8
    data["runs"][1]["evaluation"]["valid_unseen"]["success"] = 0.5
    data["runs"].append({**data["runs"][1], "arm": "seed"})
    data["runs"][2]["evaluation"] = {"valid_unseen": {"success": 0.5, "episodes": 4}}
    with pytest.raises(ValueError, match="different numbers of episodes"):
        comparison_result.comparison_rows(data, "valid_unseen")


def test_a_comparison_with_per_task_outcomes_carries_each_arm_paired_with_its_start(tmp_path):
    import comparison_result
    import result_kinds

    data = comparison_file(final={"grpo": 3, "seed": 4}, middle={"grpo": 2, "seed": 1})
    old_columns, _ = comparison_result.comparison_rows(data, "valid_unseen")

    def outcomes(won: set[int]) -> list[list]:
        return [[task, 0, task in won] for task in range(4)]

    data["warm_start"]["valid_unseen"]["outcomes"] = outcomes({0, 1})
    data["runs"][0]["evaluation"]["valid_unseen"]["outcomes"] = outcomes({1, 2, 3})  # gains 2, 3; loses 0
    data["runs"][1]["evaluation"]["valid_unseen"]["outcomes"] = outcomes({0, 1, 2, 3})  # gains 2, 3
    columns, rows = comparison_result.comparison_rows(data, "valid_unseen")
    assert columns == [*old_columns[:3], "vs warm start, paired over tasks: arm won / warm start won, McNemar p",
                       *old_columns[3:]]  # fmt: skip
    by_arm = {r[0]: r for r in rows}
    assert by_arm["grpo"][3] == {"arm_won_start_lost": 2, "start_won_arm_lost": 1}
    assert by_arm["seed"][3] == {"arm_won_start_lost": 2, "start_won_arm_lost": 0}
    assert by_arm["untrained"][3] == by_arm["warm start"][3] == "" and all(len(r) == len(columns) for r in rows)
    # rendered: p recomputed from the counts, 2 (1 + 3) / 8 = 1 capped; 2 / 4 = 0.5
    table_file(tmp_path, columns=columns, rows=rows)
    lines = render_results.render("measured", tmp_path).splitlines()
    assert lines[4].startswith("| grpo | 75.0 [30.1, 95.4] | 50.0 [15.0, 85.0] | 2 / 1, p 1.000 | 25 -> 75 |")
    assert lines[5].startswith("| seed | 100.0 [51.0, 100.0] | 25.0 [4.6, 69.9] | 2 / 0, p 0.500 | 25 -> 75 |")
    # several training seeds: one count per seed, each seed's test
    per_seed = {"arm_won_start_lost": [6, 1], "start_won_arm_lost": [0, 5]}
    assert result_kinds.cell(per_seed) == "6 / 0, p 0.031; 1 / 5, p 0.219"
    # an arm whose run kept no outcomes gets an empty cell; a start without them, no column (older files)
    del data["runs"][0]["evaluation"]["valid_unseen"]["outcomes"]
    columns, rows = comparison_result.comparison_rows(data, "valid_unseen")
    assert len(columns) == len(old_columns) + 1 and {r[0]: r[3] for r in rows}["grpo"] == ""
    del data["warm_start"]["valid_unseen"]["outcomes"]
    assert comparison_result.comparison_rows(data, "valid_unseen")[0] == old_columns


def test_a_comparison_over_seeds_becomes_a_compare_seeds_file_with_its_start_and_signals(tmp_path):
    import comparison_result
    import result_kinds

    data = comparison_file(final={"grpo": 3, "seed": 4}, middle={"grpo": 2, "seed": 1})
    for run in data["runs"]:  # per-task outcomes: the warm start won tasks 0 and 1
        run["evaluation"]["valid_unseen"]["outcomes"] = [[t, 0, t < run["evaluation"]["valid_unseen"]["success"] * 4]
                                                         for t in range(4)]  # fmt: skip
    data["warm_start"]["valid_unseen"]["outcomes"] = [[t, 0, t < 2] for t in range(4)]
    probe = {"skill_probe_episodes": 4, "skill_probe_success": 0.5, "skill_probe_success_without": 0.25,
             "skill_probe_gained": 1, "skill_probe_lost": 0}  # fmt: skip
    seed_run = data["runs"][1]
    seed_run["metrics"] = [{**m, **probe} for m in seed_run["metrics"]]
    second = []  # training seed 1: grpo wins 2 of 4, seed 3 of 4; the gate 0.7 and no probe there
    for run, won in zip(data["runs"], (2, 3), strict=True):
        other = json.loads(json.dumps(run))
        other["config"]["seed"] = 1
        other["evaluation"]["valid_unseen"].update(success=won / 4, outcomes=[[t, 0, t < won] for t in range(4)])
        other["evaluation_curve"]["2"] = other["evaluation"]["valid_unseen"]
        other["metrics"] = [{k: v for k, v in m.items() if not k.startswith("skill_probe")} for m in other["metrics"]]
        if run["arm"] == "seed":
            other["metrics"] = [{**m, "gate_mean": 0.7} for m in other["metrics"]]
        second.append(other)
    data["runs"] += second
    result = comparison_result.seeds_result(data, "valid_unseen", [])
    assert result["episodes"] == [4, 8] and result["seeds"] == [0, 1]  # update 1 and the final 2, of 2x2 episodes
    assert result["untrained_won"] == 1 and result["warm_start_won"] == 2
    by_arm = {a["name"]: a for a in result["arms"]}
    assert by_arm["grpo"]["won"] == {"4": [2, 2], "8": [3, 2]} and by_arm["seed"]["won"] == {"4": [1, 1], "8": [4, 3]}
    # grpo seed 0 won tasks 0-2 against the warm start's 0-1: 1 gained, 0 lost; seed 1 ties it
    # and pooled over both seeds, task by task: seeds winning tasks 0-3 (2, 2, 1, 0) against the start's (1, 1, 0, 0)
    tasks = {"runs": 2, "arm_wins": [2, 2, 1, 0], "start_won": [1, 1, 0, 0]}
    assert by_arm["grpo"]["vs_start"] == {"arm_won_start_lost": [1, 0], "start_won_arm_lost": [0, 0], "tasks": tasks}
    assert "signals" not in by_arm["grpo"] and len(by_arm["seed"]["signals"]) == 2
    assert by_arm["seed"]["differs"] == "algo=seed sft=true analyzer=self skills=on-policy lambda_opd=0.01"
    assert result["differences"] == [{"arm": "seed", "reference": "grpo"}]
    lines = result_kinds.compare_seeds({"kind": "compare_seeds", **result})
    assert lines[2] == "| untrained | | 25.0 [4.6, 69.9] (Wilson) | | | | | | | |"
    assert lines[3] == "| warm start | | 50.0 [15.0, 85.0] (Wilson) | | | | | | | |"
    # d = (0, 0, 1/2, 0), mean 1/8; its bootstrap mean is k/8, k ~ Binomial(4, 1/4) draws of task 2:
    # P(k = 0) = 0.32 > 2.5% gives 0, and P(k >= 3) = 0.051 > 2.5% > P(k = 4) = 0.004 gives 3/8
    assert "| 1 / 0, p 1.000; 0 / 0, p 1.000; over the 2 seeds, per task: +12.5 [0.0, +37.5] points |" in lines[4]
    # seed - grpo: +25 on seed 0 and +25 on seed 1 at the end; -25, -25 after 4 episodes
    assert any(line.startswith("| seed - grpo | -25.0, -25.0 |") for line in lines)
    # the signal table: update 1's gate is the mean of 0.5 and 0.7; the probe pooled over seed 0 alone
    assert "| seed | 1 | 0.60 | 0.60 | 50 / 25 (1 / 0, n=4) |" in [" ".join(line.split()) for line in lines]
    assert comparison_result.seeds_result(data, "valid_unseen", [{"arm": "grpo", "reference": "seed", "note": "x"}])[
        "differences"
    ] == [{"arm": "grpo", "reference": "seed", "note": "x"}]
    data["runs"][3]["metrics"] = data["runs"][3]["metrics"][:1]
    with pytest.raises(ValueError, match="different numbers of updates"):
        comparison_result.seeds_result(data, "valid_unseen", [])


def test_a_comparison_becomes_a_table_of_tasks_won_per_family_summed_over_seeds():
    import comparison_result

    data = comparison_file(final={"grpo": 3, "seed": 4}, middle={"grpo": 2, "seed": 1})
    families = {  # per family: rate, low, high, tasks
        "warm": {"pick_clean_then_place_in_recep": [0.5, 0, 1, 2], "look_at_obj_in_light": [0.0, 0, 1, 2]},
        "grpo": {"pick_clean_then_place_in_recep": [1.0, 0, 1, 2], "look_at_obj_in_light": [0.5, 0, 1, 2]},
    }
    data["warm_start"]["valid_unseen"]["by_family"] = families["warm"]
    second = json.loads(json.dumps(data["runs"][0]))  # grpo, training seed 1
    second["config"]["seed"] = 1
    second["evaluation"]["valid_unseen"]["by_family"] = {"look_at_obj_in_light": [1.0, 0, 1, 2]}  # no clean task
    data["runs"][0]["evaluation"]["valid_unseen"]["by_family"] = families["grpo"]
    data["runs"] = [data["runs"][0], second]
    columns, rows = comparison_result.families_result(data, "valid_unseen")
    assert columns == ["arm", "look", "clean"]
    assert rows == [["warm start", "0/2", "1/2"], ["grpo (seeds 0, 1)", "3/4", "2/2"]]
    # runs that played more episodes an update than tasks x group (filter_groups) are refused by --seeds
    # where a curve's budgets would be headed by one count of episodes ...
    data["runs"][1]["metrics"][0]["episodes_played"] = 8
    with pytest.raises(ValueError, match="filter_groups"):
        comparison_result.seeds_result(data, "valid_unseen", [])
    # ... and taken where the final evaluation is the one budget, their row saying what they played
    for run in data["runs"]:
        run["evaluation_curve"] = {"2": run["evaluation"]["valid_unseen"]}
    result = comparison_result.seeds_result(data, "valid_unseen", [])
    assert result["episodes"] == [8]  # 2 updates of 2x2 episodes trained
    # seed 0 played 4 + 4, seed 1 8 + 4: a mean of 10
    assert result["arms"][0]["differs"] == "10 episodes played a seed, 8 trained"


def test_two_parts_of_one_comparison_over_seeds_merge_into_one_table():
    import comparison_result
    import result_kinds

    data = comparison_file(final={"grpo": 3, "seed": 4}, middle={"grpo": 2, "seed": 1})
    for run in list(data["runs"]):  # training seed 1: each arm wins a task fewer
        other = json.loads(json.dumps(run))
        other["config"]["seed"] = 1
        other["evaluation"]["valid_unseen"]["success"] -= 0.25
        data["runs"].append(other)
    whole = comparison_result.seeds_result(data, "valid_unseen", [])
    part = {arm: {**data, "runs": [r for r in data["runs"] if r["arm"] == arm]} for arm in ("grpo", "seed")}
    earlier = comparison_result.seeds_result(part["grpo"], "valid_unseen", [])
    later = comparison_result.seeds_result(part["seed"], "valid_unseen", [{"arm": "seed", "reference": "grpo"}])
    merged = comparison_result.merged_seeds_result(earlier, later)
    assert [a["name"] for a in merged["arms"]] == ["grpo", "seed"]
    assert result_kinds.compare_seeds({"kind": "compare_seeds", **merged}) == result_kinds.compare_seeds(
        {"kind": "compare_seeds", **whole}
    )
    with pytest.raises(ValueError, match="arms in both files: grpo"):
        comparison_result.merged_seeds_result(earlier, earlier)
    with pytest.raises(ValueError, match="warm_start_won is 2 in the earlier, 3 in this one"):
        comparison_result.merged_seeds_result(earlier, {**later, "warm_start_won": 3})
    with pytest.raises(ValueError, match=r"training seeds \[0, 2\] are not among the earlier file's \[0, 1\]"):
        comparison_result.merged_seeds_result(earlier, {**later, "seeds": [0, 2]})
    # a later part on fewer seeds: each arm keeps its own, the file the earlier part's
    fewer = {**data, "runs": [r for r in part["seed"]["runs"] if r["config"]["seed"] == 0]}
    merged = comparison_result.merged_seeds_result(earlier, comparison_result.seeds_result(fewer, "valid_unseen", []))
    assert merged["seeds"] == [0, 1] and [a["seeds"] for a in merged["arms"]] == [[0, 1], [0]]
    # the untrained row, which no arm is paired with, is the earlier part's
    assert comparison_result.merged_seeds_result(earlier, {**later, "untrained_won": 3})["untrained_won"] == 1
