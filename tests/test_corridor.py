"""seed/Corridor-v0: the toy env of the learning tests; its optimal policy and its base rates."""

from __future__ import annotations

import gymnasium as gym
import pytest

from seed_envs.corridor.env import ACTIONS, CorridorEnv, corridor_for
from seed_envs.testing import check_seed_env, fuzz_env


def test_conforms_to_the_seed_contract():
    check_seed_env(gym.make("seed/Corridor-v0"))


def test_fuzzing_never_crashes_and_reports_invalid():
    env = CorridorEnv()
    assert fuzz_env(env, n=2_000, is_valid=lambda a: a.strip().strip(".").lower() in ACTIONS) > 1_000


@pytest.mark.parametrize("index", range(6))
def test_the_expert_plan_wins_and_the_other_side_is_a_dead_end(index):
    env = gym.make("seed/Corridor-v0")
    obs, _ = env.reset(options={"split": "valid_unseen", "index": index})
    side, distance = corridor_for(index)
    assert side in obs["text"] and ACTIONS[1 - ACTIONS.index(side)] not in obs["text"]
    plan = env.unwrapped.expert_plan()
    assert plan == [side] * distance
    for action in plan:
        obs, reward, terminated, _, info = env.step(action)
    assert terminated and info["won"] and reward == 1.0
    env.reset(options={"split": "valid_unseen", "index": index})
    _, reward, terminated, _, info = env.step(ACTIONS[1 - ACTIONS.index(side)])
    assert terminated and not info["won"] and reward == -1.0


def test_an_invalid_action_says_so_and_moves_nothing():
    env = gym.make("seed/Corridor-v0")
    obs, _ = env.reset(options={"split": "train", "index": 4})
    obs2, _, terminated, _, info = env.step("forward")
    assert not terminated and not info["action_valid"]
    assert "Invalid action" in obs2["text"] and obs["text"] in obs2["text"]


def test_a_policy_that_ignores_the_observation_wins_at_most_half_of_the_evaluated_tasks():
    for fixed in ACTIONS:
        wins = 0
        for index in range(24):
            side, _ = corridor_for(index)
            wins += side == fixed
        assert wins == 12


def test_max_distance_is_checked():
    with pytest.raises(ValueError, match="max_distance"):
        CorridorEnv(max_distance=0)


def test_the_anchor_is_where_the_exit_is_without_the_feedback():
    env = gym.make("seed/Corridor-v0")
    _, info = env.reset(options={"split": "train", "index": 2})  # exit 2 cells to the left
    assert info["anchor"] == "The exit is 2 cells to the left."
    obs, _, _, _, info = env.step("forward")  # rejected: the anchor stays
    assert not info["action_valid"] and info["anchor"] == "The exit is 2 cells to the left."
    obs, _, _, _, info = env.step("left")
    assert obs["text"].startswith("One cell closer.") and info["anchor"] == "The exit is 1 cell to the left."
    # another episode of the task, reaching the same cell after a rejected action, shares the anchor
    env.reset(options={"split": "train", "index": 2})
    env.step("up")
    *_, info2 = env.step("left.")
    assert info2["anchor"] == info["anchor"]


def test_the_end_of_an_episode_has_an_anchor_of_its_own():
    env = gym.make("seed/Corridor-v0")
    _, before = env.reset(options={"split": "train", "index": 2})
    *_, terminated, _, lost = env.step("right")  # a dead end: the distance is unchanged
    assert terminated and lost["anchor"] != before["anchor"]
    env.reset(options={"split": "train", "index": 2})
    env.step("left")
    *_, terminated, _, won = env.step("left")
    assert terminated and won["won"] and len({won["anchor"], lost["anchor"], before["anchor"]}) == 3


def test_without_dead_ends_the_wrong_side_is_a_wall_and_the_episode_goes_on():
    env = gym.make("seed/Corridor-v0", dead_ends=False, max_episode_steps=20)
    obs, info = env.reset(options={"split": "valid_unseen", "index": 3})
    side, distance = corridor_for(3)
    start_anchor = info["anchor"]
    wrong = ACTIONS[1 - ACTIONS.index(side)]
    obs, reward, terminated, truncated, info = env.step(wrong)
    assert not (terminated or truncated) and info["action_valid"] and reward == 0.0
    assert "wall" in obs["text"] and info["anchor"] == start_anchor  # the same state, other feedback
    assert env.unwrapped.expert_plan() == [side] * distance
    for action in env.unwrapped.expert_plan():
        obs, reward, terminated, _, info = env.step(action)
    assert terminated and info["won"] and reward == 1.0


def test_without_dead_ends_only_running_out_of_steps_loses():
    env = gym.make("seed/Corridor-v0", dead_ends=False, max_episode_steps=5)
    _, _ = env.reset(options={"split": "train", "index": 0})  # the exit is to the left
    for _ in range(5):
        _, _, terminated, truncated, info = env.step("right")
    assert truncated and not terminated and not info["won"]
