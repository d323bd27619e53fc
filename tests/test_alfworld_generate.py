"""The generator: upstream format, determinism, held-out splits, difficulty, solvability."""

from __future__ import annotations

import json
import re

import pytest
from _alfworld_support import SMALL_COUNTS, dataset, upstream_game_env

from seed_envs.alfworld import generate as gen
from seed_envs.alfworld import goals, vocab
from seed_envs.alfworld.data import collect_games
from seed_envs.alfworld.dataset import generate_dataset
from seed_envs.alfworld.problem import mangle
from seed_envs.core import SPLITS


@pytest.fixture(scope="module")
def easy_root(tmp_path_factory):
    return dataset(tmp_path_factory, "easy", SMALL_COUNTS)


def test_files_in_upstream_layout(easy_root):
    for split in SPLITS:
        for game in collect_games(easy_root, split).games:
            trial_dir = game.game_file.parent
            folder = trial_dir.parent.name
            assert re.fullmatch(r"[a-z_]+-[A-Za-z]+-None-[A-Za-z]+-\d+", folder), folder
            assert trial_dir.name.startswith("trial_")
            data = json.loads(game.game_file.read_text())
            assert set(data) == {"pddl_domain", "grammar", "pddl_problem", "solvable", "walkthrough"}
            assert data["solvable"] is True and data["walkthrough"]
            assert "UNKNOWN GOAL" not in data["grammar"]
            assert (trial_dir / "initial_state.pddl").read_text() == data["pddl_problem"]
            traj = json.loads((trial_dir / "traj_data.json").read_text())
            assert traj["task_type"] == folder.split("-")[0] == game.task_type
            params = traj["pddl_params"]
            assert set(params) == {
                "object_target",
                "parent_target",
                "toggle_target",
                "mrecep_target",
                "object_sliced",
            }
            assert folder.split("-")[1] == params["object_target"]
            assert int(folder.split("-")[-1]) == traj["scene"]["scene_num"]
            # The constants the domain's preconditions name must be declared.
            for constant in ("SinkBasinType", "MicrowaveType", "FridgeType", "KnifeType", "ButterKnifeType"):
                assert re.search(rf"^{constant} - [or]type$", data["pddl_problem"], re.M), constant


def test_walkthrough_wins_in_upstream_engine(easy_root):
    """Each stored walkthrough, replayed in upstream's own PddlEnv, wins the game."""
    env = upstream_game_env()
    families = set()
    for game in collect_games(easy_root, "train").games:
        env.load(str(game.game_file))
        state = env.reset()
        for command in json.loads(game.game_file.read_text())["walkthrough"]:
            assert command in state["admissible_commands"]
            state, _, _done = env.step(command)
        assert state["won"], game.task_id
        families.add(game.task_type)
    assert families == set(vocab.TASK_TYPES)


def test_deterministic_by_seed():
    first = gen.make_game("valid_seen", 3, "easy", seed=5)
    again = gen.make_game("valid_seen", 3, "easy", seed=5)
    other = gen.make_game("valid_seen", 3, "easy", seed=6)
    assert (first.game, first.traj_data, first.relative_dir) == (
        again.game,
        again.traj_data,
        again.relative_dir,
    )
    assert first.problem != other.problem


def test_layouts_are_functions_of_the_scene():
    level = gen.get_difficulty("full")
    assert gen.build_layout("Kitchen", 12, level) == gen.build_layout("Kitchen", 12, level)
    assert gen.build_layout("Kitchen", 12, level) != gen.build_layout("Kitchen", 13, level)


@pytest.mark.parametrize("difficulty", list(gen.DIFFICULTIES))
def test_unseen_scenes_and_pairs_held_out(difficulty):
    """Over many draws: valid_unseen uses only held-out scenes and (object, target) pairs; others never."""
    used = {split: (set(), set()) for split in SPLITS}
    for split in SPLITS:
        for index in range(240):
            drawn = gen.draw_game(split, index, difficulty, seed=0)
            if drawn is None:
                continue
            scene, goal, _, _ = drawn
            used[split][0].add(scene.scene_num)
            used[split][1].add((goal.object_target, goal.parent_target or goal.toggle_target))
    unseen_scenes, unseen_pairs = used["valid_unseen"]
    for split in ("train", "valid_seen"):
        scenes, pairs = used[split]
        assert scenes and pairs
        assert not scenes & unseen_scenes and not pairs & unseen_pairs
    assert all(goals.pair_is_held_out(*pair) for pair in unseen_pairs)
    assert all(s % 100 in goals.UNSEEN_SCENE_OFFSETS for s in unseen_scenes)


@pytest.mark.parametrize("difficulty", list(gen.DIFFICULTIES))
@pytest.mark.parametrize("split", SPLITS)
def test_every_family_draws_in_every_split(difficulty, split):
    """Every family finds a goal in every split at every level, in a room that supports it."""
    level = gen.get_difficulty(difficulty)
    unseen = split == "valid_unseen"
    for f, family in enumerate(vocab.TASK_TYPES):
        drawn = [gen.draw_game(split, i * 6 + f, difficulty, seed=4) for i in range(12)]
        assert sum(d is not None for d in drawn) >= 6, (family, split, difficulty)
        for scene, goal, _, _ in filter(None, drawn):
            assert goal.task_type == family
            assert goal in goals.candidate_goals(family, scene, unseen, level.closed_sources)
            for thing in scene.things:
                if thing.type == goal.object_target:
                    holder = scene.receptacle(thing.receptacle_id).type
                    assert holder != goal.parent_target
                    assert level.closed_sources or holder not in vocab.OPENABLE


def test_every_family_has_seen_and_unseen_goals():
    held_out = goals.unseen_pairs()
    for family in vocab.TASK_TYPES:
        assert held_out[family], family
        for split in ("train", "valid_unseen"):
            drawn = [gen.draw_game(split, i * 6 + vocab.TASK_TYPES.index(family), "easy", seed=1) for i in range(30)]
            assert any(d is not None for d in drawn), (family, split)


@pytest.mark.parametrize(
    ("difficulty", "low", "high"), [("tiny", 2, 3), ("easy", 3, 5), ("medium", 6, 12), ("full", 15, 35)]
)
def test_difficulty_sets_room_size(difficulty, low, high):
    sizes = []
    for index in range(36):
        drawn = gen.draw_game("train", index, difficulty, seed=2)
        if drawn is not None:
            scene = drawn[0]
            sizes.append(len(scene.receptacles))
            assert len({r.location for r in scene.receptacles} | {scene.agent_location}) == len(scene.receptacles) + 1
    assert sizes and min(sizes) >= low and max(sizes) <= high
    # Rooms are small enough for a two-receptacle fixture plus at least one more.
    assert max(sizes) > low or difficulty == "easy"


def test_goal_not_satisfied_at_start():
    for index in range(60):
        drawn = gen.draw_game("train", index, "medium", seed=3)
        if drawn is None:
            continue
        scene, goal, _, _ = drawn
        if goal.parent_target:
            starts = {scene.receptacle(t.receptacle_id).type for t in scene.things if t.type == goal.object_target}
            assert goal.parent_target not in starts


def test_mangle_is_upstreams_substitution():
    assert mangle("Sink|+00.71|+00.82|-01.77|SinkBasin") == (
        "Sink_bar__plus_00_dot_71_bar__plus_00_dot_82_bar__minus_01_dot_77_bar_SinkBasin"
    )
    assert mangle("loc|-4|9|1|45") == "loc_bar__minus_4_bar_9_bar_1_bar_45"


def test_unknown_arguments_rejected():
    with pytest.raises(ValueError, match="difficulty"):
        gen.get_difficulty("nightmare")
    with pytest.raises(ValueError, match="task type"):
        gen.make_game("train", 0, "easy", task_types=["pick_and_fly"])
    with pytest.raises(ValueError, match="split"):
        gen.make_game("test", 0, "easy")


@pytest.mark.slow
def test_workers_write_the_same_games(tmp_path):
    counts = {"train": 6, "valid_unseen": 3}
    generate_dataset(tmp_path / "one", counts, "easy", seed=5, workers=1)
    generate_dataset(tmp_path / "two", counts, "easy", seed=5, workers=2)

    def files(root):
        return {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    one, two = files(tmp_path / "one"), files(tmp_path / "two")
    assert one == two and len(one) == 9 * 4  # three files and an index entry per game


def _make_each_family(difficulty: str, games_per_family: int) -> None:
    """make_game (planner and replay included) succeeds for every family in every split."""
    for split in SPLITS:
        for f, family in enumerate(vocab.TASK_TYPES):
            for i in range(games_per_family):
                game = gen.make_game(split, i * 6 + f, difficulty, seed=0)
                assert game.traj_data["task_type"] == family
                assert game.game["solvable"] is True and game.game["walkthrough"]
                bound = gen.get_difficulty(difficulty).max_plan_length
                assert bound is None or len(game.game["walkthrough"]) <= bound
                params, unseen = game.traj_data["pddl_params"], split == "valid_unseen"
                pair = (params["object_target"], params["parent_target"] or params["toggle_target"])
                assert goals.pair_is_held_out(*pair) == unseen, (split, pair)
                scene_offset = game.traj_data["scene"]["scene_num"] % 100
                assert (scene_offset in goals.UNSEEN_SCENE_OFFSETS) == unseen


@pytest.mark.parametrize("difficulty", ["tiny", "easy"])
def test_small_levels_make_every_family_in_every_split(difficulty):
    _make_each_family(difficulty, games_per_family=1)


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", list(gen.DIFFICULTIES))
def test_every_level_makes_every_family_in_every_split(difficulty):
    _make_each_family(difficulty, games_per_family=3)
