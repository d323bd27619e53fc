"""Dynamic sampling (``filter_groups``): which groups an update keeps, by hand and in a tiny run."""

from __future__ import annotations

import pytest

from seed_rl.rollout import Episode, StepRow
from seed_rl.train.phases.group_filter import differing_groups, keep_groups
from seed_rl.train.phases.update_batch import outcome_reward, task_outcome


def played(groups: list[tuple[str, list[bool]]]) -> tuple[list[Episode], list[float]]:
    """One round: per group, its task and its episodes' wins; the outcome reward is 1 for a win."""
    episodes = []
    for group, (task, wins) in enumerate(groups):
        for won in wins:
            i = len(episodes)
            rows = [StepRow(i, group, s + 1, "obs", "up", "up", True, True, 0.0, 0.0, {}) for s in range(2)]
            episodes.append(Episode(i, group, "seed/Sokoban-v0", task, task, {}, rows=rows, won=won))
    return episodes, [float(e.won) for e in episodes]


def test_groups_that_differ_come_first_across_rounds_and_tied_ones_fill_the_rest():
    first = played([("a", [True, True]), ("b", [True, False]), ("c", [False, False])])
    second = played([("d", [False, True]), ("e", [False, False]), ("f", [True, False])])
    assert differing_groups(*first) == 1 and differing_groups(*second) == 2

    kept, left_out = keep_groups([first, second], 3, first_group=6)
    assert [e.task_id for e in kept] == ["b", "b", "d", "d", "f", "f"]  # every kept group differs, in the order played
    assert [e.task_id for e in left_out] == ["a", "a", "c", "c", "e", "e"]
    assert [e.index for e in kept] == list(range(6))  # renumbered as one round numbers its episodes
    assert [e.group for e in kept] == [6, 6, 7, 7, 8, 8]  # this process's groups start at first_group
    assert all(row.episode == e.index and row.group == e.group for e in kept for row in e.rows)

    kept, left_out = keep_groups([first], 2)  # too few differ: tied groups fill, in the order played
    assert [e.task_id for e in kept] == ["b", "b", "a", "a"]
    assert [e.task_id for e in left_out] == ["c", "c"]
    assert first[0][0].task_id == "a" and first[0][0].group == 0  # the played episodes are not changed


torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from corridor_support import TINY_CORRIDOR  # noqa: E402

from seed_rl.config import ConfigError, load_config  # noqa: E402
from seed_rl.train.trainer import Trainer  # noqa: E402


def test_groups_are_compared_by_their_outcomes_not_by_invalid_action_penalties():
    """Two lost episodes of one group, one with an invalid step (penalty 0.1): their rewards differ,
    their outcomes do not, so the group is tied for dynamic sampling; a won one differs."""
    episodes, _ = played([("a", [False, False]), ("b", [True, False])])
    invalid = episodes[1].rows[0]
    invalid.action_valid, invalid.reward = False, invalid.env_reward - 0.1
    rewards = [outcome_reward(e, "won") for e in episodes]
    assert rewards[:2] == [0.0, pytest.approx(-0.1)] and differing_groups(episodes, rewards) == 2
    outcomes = [task_outcome(e, "won") for e in episodes]
    assert outcomes == [0.0, 0.0, 1.0, 0.0] and differing_groups(episodes, outcomes) == 1
    assert task_outcome(episodes[1], "return") == pytest.approx(0.0)  # the shaped return, less the penalty


def test_an_update_keeps_the_groups_that_differ_and_counts_every_episode_played(tmp_path):
    """On the tiny corridor (a random policy wins some episodes), groups of 2 often tie: the run
    plays further rounds until 4 groups differ (at most 3 rounds), keeps those, and its metrics
    count every episode played."""
    overrides = [*TINY_CORRIDOR, "tasks_per_update=4", "group_size=2", "lr=0.01", f"run_dir={tmp_path}"]
    trainer = Trainer(load_config("sokoban_grpo", [*overrides, "updates=2", "filter_groups=true"]))
    rounds: list[list] = []
    play_round = trainer.play_round

    def recorded(u: int, round_: int) -> list:
        episodes = play_round(u, round_)
        rounds.append(episodes)
        return episodes

    trainer.play_round = recorded
    second_rounds = 0
    for u in range(3):
        rounds.clear()
        kept, left_out = trainer.rollout(u)
        differ = [differing_groups(r, trainer.task_outcomes(r)) for r in rounds]
        assert all(sum(differ[:n]) < 4 for n in range(1, len(rounds)))  # each further round was needed
        assert len(rounds) == 3 or sum(differ) >= 4  # and the rounds stop once 4 differ
        assert len(kept) == 8 and len(kept) + len(left_out) == 8 * len(rounds)
        assert differing_groups(kept, trainer.task_outcomes(kept)) == min(4, sum(differ))
        assert {e.group for e in kept} == {0, 1, 2, 3} and [e.index for e in kept] == list(range(8))
        second_rounds += len(rounds) > 1
    assert second_rounds, "no update needed a second round: the test shows nothing"

    trainer.play_round = play_round
    metrics = trainer.run()
    assert [m["update"] for m in metrics] == [1, 2]
    assert all(m["episodes_played"] in (8, 16, 24) and m["rows"] > 0 for m in metrics)


def test_max_rollout_rounds_must_be_at_least_one():
    with pytest.raises(ConfigError, match="max_rollout_rounds"):
        load_config("sokoban_grpo", ["max_rollout_rounds=0"])
