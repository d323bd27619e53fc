"""seed/Sokoban-v0: solvable generated rooms, disjoint splits, rewards, observations."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from seed_envs.sokoban.env import SokobanEnv
from seed_envs.sokoban.generate import RoomConfig, generate_room, layout_is_unseen
from seed_envs.sokoban.room import ACTIONS, FLOOR, TARGET, WALL, Room
from seed_envs.sokoban.solver import solve
from seed_envs.testing import check_seed_env, fuzz_env


def is_move(action: str) -> bool:
    return action.strip().lower() in ACTIONS


@pytest.mark.parametrize("mode", ["image", "text", "both", "positions"])
def test_conforms_to_the_seed_contract(mode):
    check_seed_env(gym.make("seed/Sokoban-v0", observation_mode=mode))


def test_text_mode_has_no_image_and_shows_the_grid_with_a_legend():
    obs, _ = gym.make("seed/Sokoban-v0", observation_mode="text").reset(seed=0)
    assert set(obs) == {"text"}
    assert "Legend:" in obs["text"] and "P" in obs["text"] and "#" in obs["text"]


def test_positions_mode_names_each_object_by_row_column_and_offset_from_the_player():
    env = SokobanEnv(observation_mode="positions")
    obs, _ = env.reset(options={"split": "valid_unseen", "index": 0})
    room = env.room
    (box,) = room.boxes
    (target,) = [tuple(int(v) for v in cell) for cell in np.argwhere(room.fixed == TARGET)]
    (pr, pc) = room.player
    text = obs["text"]
    assert set(obs) == {"text"} and room.to_text() in text  # the grid stays
    assert f"You are at row {pr}, column {pc}." in text
    for kind, (r, c) in (("Box", box), ("Target", target)):
        rows = f"{abs(r - pr)} {'down' if r > pr else 'up'}" if r != pr else ""
        cols = f"{abs(c - pc)} {'right' if c > pc else 'left'}" if c != pc else ""
        assert f"{kind} at row {r}, column {c}: {', '.join(p for p in (rows, cols) if p)} of you." in text
    plan = solve(room)
    for move in plan[:-1]:
        obs, *_ = env.step(move)
        assert f"You are at row {env.room.player[0]}, column {env.room.player[1]}." in obs["text"]
    obs, *_ = env.step(plan[-1])
    assert "(on a target)" in obs["text"]


def test_fuzzing_never_crashes_and_reports_invalid():
    env = SokobanEnv(observation_mode="text")
    assert fuzz_env(env, n=10_000, is_valid=is_move) > 9_000


@pytest.mark.parametrize(
    ("config", "count"),
    [(RoomConfig(), 300), (RoomConfig(7, 7, 2), 40), (RoomConfig(8, 8, 2), 25)],
)
def test_every_generated_room_is_solvable_by_search(config, count):
    for split in ("train", "valid_seen", "valid_unseen"):
        for index in range(count // 3):
            room = generate_room(config, split, index)
            plan = solve(room)
            assert plan is not None and len(plan) >= 1, f"{config.key} {split}/{index} unsolved:\n{room.to_text()}"
            replay = room
            for move in plan:
                replay, _ = replay.move(move)
            assert replay.solved()


def test_unseen_layouts_never_appear_in_train_or_valid_seen():
    config = RoomConfig()
    unseen = {generate_room(config, "valid_unseen", i).walls_key() for i in range(200)}
    seen = {generate_room(config, "valid_seen", i).walls_key() for i in range(200)}
    seen |= {generate_room(config, "train", i).walls_key() for i in range(600)}
    assert unseen and seen and not unseen & seen
    assert all(layout_is_unseen(generate_room(config, "valid_unseen", i).fixed) for i in range(20))


def _corridor() -> Room:
    """#######  a corridor: player, box, floor, target."""
    fixed = np.full((3, 7), WALL, dtype=np.int8)
    fixed[1, 1:6] = FLOOR
    fixed[1, 4] = TARGET
    return Room(fixed=fixed, boxes=frozenset({(1, 3)}), player=(1, 2))


def test_rewards_follow_the_common_sokoban_setup():
    env = SokobanEnv(observation_mode="text")
    env.reset(seed=0)
    env.room = _corridor()
    _, reward, terminated, _, info = env.step("left")  # walk away: plain step
    assert reward == pytest.approx(-0.1) and not terminated
    _, reward, *_ = env.step("up")  # into the wall: nothing moves
    assert reward == pytest.approx(-0.1) and env.room.player == (1, 1)
    env.step("right")
    _, reward, terminated, _, info = env.step("right")  # push the box onto the target
    assert reward == pytest.approx(-0.1 + 1.0 + 10.0)
    assert terminated and info["won"] and info["score"] == 1.0


def test_pushing_a_box_off_a_target_costs_one():
    env = SokobanEnv(observation_mode="text")
    env.reset(seed=0)
    room = _corridor()
    env.room = Room(room.fixed, frozenset({(1, 4)}), (1, 3))  # box already on the target
    _, reward, terminated, _, info = env.step("right")
    assert reward == pytest.approx(-0.1 - 1.0) and not terminated and info["boxes_on_target"] == 0


def test_invalid_action_costs_a_step_and_changes_nothing():
    env = SokobanEnv(observation_mode="text")
    env.reset(seed=0)
    before = env.room
    obs, reward, terminated, _, info = env.step("jump")
    assert env.room is before and not terminated and info["action_valid"] is False
    assert reward == pytest.approx(-0.1) and "Invalid action" in obs["text"]


def test_expert_plan_wins_within_the_step_limit():
    env = gym.make("seed/Sokoban-v0", split="valid_unseen")
    wins = 0
    for index in range(30):
        env.reset(options={"index": index})
        plan = env.unwrapped.expert_plan()
        for move in plan:
            *_, terminated, truncated, info = env.step(move)
        wins += int(info["won"] and terminated and not truncated)
    assert wins == 30


def test_image_shows_the_room_and_changes_with_it():
    env = SokobanEnv(observation_mode="image", tile_size=16)
    obs, _ = env.reset(options={"split": "valid_seen", "index": 1})
    assert obs["image"].shape == (96, 96, 3) and obs["image"].dtype == np.uint8
    assert len(np.unique(obs["image"].reshape(-1, 3), axis=0)) >= 4  # wall, floor, box, player...
    plan = env.expert_plan()
    obs2, *_ = env.step(plan[0])
    assert not np.array_equal(obs["image"], obs2["image"])


def test_room_size_and_box_count_are_options():
    env = gym.make("seed/Sokoban-v0", dim_room=(8, 8), num_boxes=2, observation_mode="text")
    obs, info = env.reset(seed=1)
    grid = [line for line in obs["text"].splitlines() if line and set(line) <= set("#_OX*PS")]
    assert len(grid) == 8 and all(len(row) == 8 for row in grid)
    assert "2 boxes" in info["task"]


def test_a_cap_on_solution_moves_keeps_short_rooms_and_names_them_in_task_ids():
    capped = RoomConfig(max_solution_moves=2)
    plain = RoomConfig()
    same = 0
    for index in range(20):
        room = generate_room(capped, "train", index)
        assert 1 <= len(solve(room)) <= 2
        full = generate_room(plain, "train", index)
        if len(solve(full)) <= 2:  # where the full split's room passes the cap, the capped split keeps it
            assert np.array_equal(room.fixed, full.fixed) and (room.boxes, room.player) == (full.boxes, full.player)
            same += 1
    assert 0 < same < 20
    env = gym.make("seed/Sokoban-v0", observation_mode="text", max_solution_moves=2)
    _, info = env.reset(options={"split": "train", "index": 3})
    assert info["task_id"] == "sokoban-6x6-b1-m2/train/3"
    assert len(env.unwrapped.expert_plan()) <= 2
    with pytest.raises(ValueError, match="max_solution_moves"):
        RoomConfig(max_solution_moves=-1)


@pytest.mark.parametrize("mode", ["image", "text", "both", "positions"])
def test_anchor_is_the_room_state_whatever_the_path_and_the_mode(mode):
    env = SokobanEnv(observation_mode=mode)
    env.reset(seed=0)
    env.room = _corridor()
    start = env.room.to_text()
    _, _, _, _, info = env.step("left")  # walk away: a new state
    assert info["anchor"] == env.room.to_text() != start
    walked = info["anchor"]
    obs, _, _, _, info = env.step("up")  # blocked by the wall: a valid move that changes nothing
    assert info["action_valid"] and "blocked" in obs["text"] and info["anchor"] == walked
    obs, _, _, _, info = env.step("jump")  # rejected: the anchor keeps the state, not the message
    assert not info["action_valid"] and info["anchor"] == walked
    obs, _, _, _, info = env.step("right")  # back to the start cell, no box moved
    assert info["anchor"] == start and "You moved right." in obs["text"]
    _, _, _, _, info = env.step("right")  # push the box onto the target: another state
    assert info["anchor"] not in (start, walked) and "*" in info["anchor"]


def test_two_episodes_reaching_the_same_room_by_different_paths_share_an_anchor():
    env = gym.make("seed/Sokoban-v0", observation_mode="image")
    for index in range(20):
        obs, info = env.reset(options={"split": "valid_seen", "index": index})
        start, room = info["anchor"], env.unwrapped.room
        for there, back in (("left", "right"), ("right", "left"), ("up", "down"), ("down", "up")):
            env.reset(options={"split": "valid_seen", "index": index})
            *_, info = env.step(there)
            moved = env.unwrapped.room
            if moved.player == room.player or moved.boxes != room.boxes:
                continue  # blocked, or pushed a box: this path does not come back
            assert info["anchor"] != start
            obs2, *_, info = env.step(back)
            if env.unwrapped.room.player != room.player:
                continue
            assert info["anchor"] == start and obs2["text"] != obs["text"]  # the feedback differs
            return
    pytest.fail("no room among 20 where the player can walk away and back")
