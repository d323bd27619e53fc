"""seed audit: the checks on hand-made episode records, and the command on a tiny SEED run."""

from __future__ import annotations

import json
import math

import pytest

from seed_rl.cli import main
from seed_rl.records.audit import (
    contradicts_outcome,
    foreign_words,
    gate_stats,
    parse_rate_by_update,
    percentile,
)


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def record(update=0, won=False, skill=None, error=None, task="push the box", observations=("#P#",), deltas=()):
    """An episode record as episode_log writes it; ``deltas``: per step, the OPD tokens' Deltas (beta 5)."""
    steps = []
    for i, obs in enumerate(observations):
        d = list(deltas[i]) if i < len(deltas) else []
        opd = {"tokens": ["x"] * len(d), "delta": d, "gate": [sigmoid(5 * v) for v in d]} if d else None
        steps.append({"step": i + 1, "observation": obs, "action": "up", "opd": opd})
    return {
        "update": update,
        "episode": 0,
        "task_id": f"t{update}",
        "task": task,
        "outcome": {"won": won},
        "skill": skill,
        "skill_error": error,
        "steps": steps,
    }


def test_percentiles_interpolate_between_ranks():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([1.0, 2.0, 3.0, 4.0], 10) == pytest.approx(1.3)  # rank 0.3
    assert percentile([1.0, 2.0, 3.0, 4.0], 90) == pytest.approx(3.7)
    assert percentile([7.0], 90) == 7.0 and math.isnan(percentile([], 50))


def test_gates_and_deltas_are_split_by_outcome():
    won = record(won=True, skill="s", observations=("#P#", "#.P#"), deltas=[[0.2], [-0.1]])
    lost = record(won=False, skill="s", deltas=[[0.4]])
    no_opd = record(won=True, skill="s")
    stats = gate_stats([won, lost, no_opd])
    assert stats["won"].episodes == 1 and stats["won"].gate.n == 2  # the episode without OPD is left out
    assert stats["won"].delta_positive == 0.5 and stats["lost"].delta_positive == 1.0
    assert stats["all"].delta_positive == pytest.approx(2 / 3)
    assert stats["won"].gate.mean == pytest.approx((sigmoid(1.0) + sigmoid(-0.5)) / 2)
    assert stats["won"].delta.mean == pytest.approx(0.05)
    assert stats["all"].delta.p50 == pytest.approx(0.2)


def test_the_parse_rate_counts_analysed_episodes_per_update():
    records = [
        record(update=0, skill="a"),
        record(update=0, error="no JSON"),
        record(update=0),  # not analysed (e.g. a success under failed_only)
        record(update=1, skill="b"),
    ]
    assert parse_rate_by_update(records) == {0: (1, 2), 1: (1, 1)}


def test_a_skill_naming_another_trajectory_s_objects_is_flagged():
    mug = record(
        task="put a mug in the sink", observations=("You see a mug and a sink.",), skill="Take the apple first."
    )
    apple = record(task="heat an apple", observations=("You see an apple.",), skill="Heat the apple in the microwave.")
    zebra = record(task="put a mug in the sink", observations=("A mug.",), skill="Think of a zebra and the mug.")
    shared = record(task="put a mug in the sink", observations=("A mug by a wall.",), skill="Mind the wall.")
    flagged = foreign_words([mug, apple, zebra, shared])
    # "apple" is in another episode's task, not in mug's trajectory; "microwave" and "zebra" are in no
    # task, and "wall" only in observations (an env's shared vocabulary): none of them names another task
    assert [(r["skill"], words) for r, words in flagged] == [("Take the apple first.", ["apple"])]


def test_skills_contradicting_their_outcome_are_flagged():
    assert "won" in contradicts_outcome(record(won=True, skill="Avoid pushing the box into a corner."))
    assert "lost" in contradicts_outcome(record(won=False, skill="The agent succeeded by pushing right."))
    assert contradicts_outcome(record(won=True, skill="Push right, then up: success.")) is None
    assert contradicts_outcome(record(won=False, skill="It failed: never push into a wall.")) is None
    assert contradicts_outcome(record(won=False, skill="Don't stop; it never succeeded.")) is None  # both kinds
    assert contradicts_outcome(record(won=True)) is None


def write_run(path, records):
    path.mkdir(parents=True)
    (path / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_the_command_writes_a_report_json_and_plot(tmp_path, capsys):
    records = [
        record(update=0, won=True, skill="Avoid the wall.", deltas=[[0.3, -0.2]]),
        record(update=0, won=False, error="no JSON object"),
        record(update=1, won=False, skill="Push left.", deltas=[[0.1]]),
    ]
    run = write_run(tmp_path / "run", records)
    assert main(["audit", str(run)]) == 0
    text = (run / "audit.md").read_text(encoding="utf-8")
    assert "## Gate and Delta" in text and "| 1 | 1 / 2 |" in text and "| 2 | 1 / 1 |" in text
    assert "Avoid the wall." in text  # the contradiction is shown
    saved = json.loads((run / "audit.json").read_text(encoding="utf-8"))
    assert saved["analysed"] == 3 and saved["with_skill"] == 2
    assert saved["gates"]["all"]["gate"]["n"] == 3 and len(saved["contradictions"]) == 1
    assert (run / "audit.png").stat().st_size > 0
    assert "wrote" in capsys.readouterr().out


def test_a_run_without_skills_or_without_a_log_is_a_clear_error(tmp_path, capsys):
    grpo = write_run(tmp_path / "grpo", [record(won=True), record()])
    assert main(["audit", str(grpo)]) == 2
    assert "algo=seed" in capsys.readouterr().err
    assert main(["audit", str(tmp_path / "nowhere")]) == 2
    assert "nowhere" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["audit", str(tmp_path / "empty")]) == 2
    assert "episodes.jsonl" in capsys.readouterr().err


def test_audit_of_a_tiny_seed_run_counts_every_logged_gate(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    from seed_rl.config import load_config
    from seed_rl.records.episode_log import read_episodes
    from seed_rl.train.trainer import train

    run = tmp_path / "seed"
    overrides = ["model=tiny-random", "tasks_per_update=2", "group_size=2", "max_steps=3", "progress=false"]
    train(load_config("sokoban_seed", [*overrides, "sft=false", "analyzer=scripted", "updates=1", f"run_dir={run}"]))
    assert main(["audit", str(run)]) == 0
    saved = json.loads((run / "audit.json").read_text(encoding="utf-8"))
    logged = [g for r in read_episodes(run) for s in r["steps"] if s["opd"] for g in s["opd"]["gate"]]
    assert saved["gates"]["all"]["gate"]["n"] == len(logged) > 0
    assert saved["with_skill"] == saved["analysed"] == 4  # the oracle's skills all parse
