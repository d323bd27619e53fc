"""seed/ALFWorld-v0: the seed contract, hostile input, experts, task selection."""

from __future__ import annotations

import gymnasium as gym
import pytest
from _alfworld_support import SMALL_COUNTS, dataset

import seed_envs  # noqa: F401  (registers the ids)
from seed_envs.alfworld.env import ALFWorldEnv, task_sentence
from seed_envs.alfworld.vocab import TASK_TYPES
from seed_envs.core import SPLITS
from seed_envs.testing import check_seed_env, fuzz_env


@pytest.fixture(scope="module")
def easy_root(tmp_path_factory):
    return dataset(tmp_path_factory, "easy", SMALL_COUNTS)


@pytest.fixture
def env(easy_root):
    env = gym.make("seed/ALFWorld-v0", data_dir=str(easy_root))
    yield env
    env.close()


def test_registered_with_seed_step_limit(easy_root):
    assert gym.spec("seed/ALFWorld-v0").max_episode_steps == 30
    env = gym.make("seed/ALFWorld-v0", data_dir=str(easy_root), max_episode_steps=50)
    assert env.spec.max_episode_steps == 50
    env.close()


def test_check_seed_env(env):
    check_seed_env(env)


class AdmissibleBeforeStep(gym.Wrapper):
    """Records the admissible commands just before each step (what decides validity)."""

    admissible: frozenset = frozenset()

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.admissible = frozenset(info["available_actions"])
        return obs, info

    def step(self, action):
        self.valid_now = isinstance(action, str) and action.strip() in self.admissible
        out = self.env.step(action)
        self.admissible = frozenset(out[-1]["available_actions"])
        return out


def test_fuzz_10k_hostile_actions(easy_root):
    env = AdmissibleBeforeStep(gym.make("seed/ALFWorld-v0", data_dir=str(easy_root)))
    env.valid_now = False
    invalid = fuzz_env(env, n=10_000, is_valid=lambda action: env.valid_now)
    assert invalid > 9_000
    env.close()


def test_observation_and_info_as_upstream(env):
    obs, info = env.reset(options={"split": "train", "index": 0})
    assert obs["text"].startswith("-= Welcome to TextWorld, ALFRED! =-\n\n")
    assert "\n\nYour task is to: " in obs["text"]
    assert info["task"] == task_sentence(obs["text"]) and info["task"].endswith(".")
    assert info["task_type"] in TASK_TYPES
    actions = info["available_actions"]
    assert actions == sorted(actions) and {"help", "inventory", "look"} <= set(actions)
    assert "expert_plan" not in info


def test_invalid_command_keeps_episode_going(env):
    obs, info = env.reset(options={"split": "valid_seen", "index": 0})
    plan = env.unwrapped.expert_plan()
    for bad in ("put the apple in the fridge", "Go To Nowhere", "", "open"):
        obs, reward, terminated, truncated, info = env.step(bad)
        assert obs["text"] == "Nothing happens."
        assert (reward, terminated, truncated, info["action_valid"]) == (0.0, False, False, False)
    assert env.unwrapped.expert_plan() == plan  # nothing changed
    for command in plan:
        obs, reward, terminated, truncated, info = env.step(command)
        assert info["action_valid"]
    assert terminated and info["won"] and reward == 1.0 and info["score"] == 1.0


def test_anchor_is_the_text_after_the_last_accepted_command(env):
    """verl-agent's anchor: where an accepted command left the agent; "Nothing happens." is not a state."""
    obs, info = env.reset(options={"split": "train", "index": 0})
    start = info["anchor"]
    assert start == obs["text"]
    here, there = [a for a in info["available_actions"] if a.startswith("go to ")][:2]
    obs, *_, info = env.step(here)
    arrived = info["anchor"]
    assert arrived == obs["text"] and arrived != start
    # Another episode of the task: a rejected command, a detour, then the same place.
    env.reset(options={"split": "train", "index": 0})
    obs, *_, info = env.step("jump over the moon")
    assert obs["text"] == "Nothing happens." and not info["action_valid"] and info["anchor"] == start
    *_, info = env.step(there)
    assert info["anchor"] not in (start, arrived)
    *_, info = env.step(here)
    assert info["anchor"] == arrived


def test_put_syntax_is_move(env):
    """alfworld 0.4.x: placing is ``move X to Y``; ``put X in/on Y`` does nothing."""
    task_id = next(t for t in env.unwrapped.task_ids("train") if "/pick_and_place_simple-" in t)
    env.reset(options={"task_id": task_id})
    plan = env.unwrapped.expert_plan()
    for command in plan[:-1]:
        env.step(command)
    last = plan[-1]
    assert last.startswith("move ") and " to " in last
    obj, recep = last[len("move ") :].split(" to ")
    obs, *_ = env.step(f"put {obj} in/on {recep}")
    assert obs["text"] == "Nothing happens."
    obs, _reward, terminated, _, info = env.step(last)
    assert terminated and info["won"]


@pytest.mark.parametrize("split", SPLITS)
def test_expert_wins_every_task_type(easy_root, split):
    env = gym.make("seed/ALFWorld-v0", data_dir=str(easy_root), expert=True, split=split)
    seen = set()
    for task_id in env.unwrapped.task_ids(split):
        _, info = env.reset(options={"task_id": task_id})
        seen.add(info["task_type"])
        for _ in range(30):
            plan = info["expert_plan"]
            assert plan == env.unwrapped.expert_plan()
            _obs, reward, terminated, _truncated, info = env.step(plan[0])
            if terminated:
                break
        assert info["won"] and reward == 1.0, task_id
    assert seen == set(TASK_TYPES)
    env.close()


def test_same_task_id_same_game(env, easy_root):
    _, info = env.reset(seed=3)
    task_id = info["task_id"]
    first = [env.reset(options={"task_id": task_id})[0]["text"]]
    first += [env.step(a)[0]["text"] for a in env.unwrapped.expert_plan()]
    other = gym.make("seed/ALFWorld-v0", data_dir=str(easy_root))
    other.reset(options={"split": "valid_unseen", "index": 1})
    second = [other.reset(options={"task_id": task_id})[0]["text"]]
    second += [other.step(a)[0]["text"] for a in other.unwrapped.expert_plan()]
    assert first == second
    other.close()


def test_task_types_filter(easy_root):
    wanted = ["pick_heat_then_place_in_recep", "pick_two_obj_and_place"]
    env = gym.make("seed/ALFWorld-v0", data_dir=str(easy_root), task_types=wanted)
    ids = env.unwrapped.task_ids("train")
    assert len(ids) == 2 and all(i.split("/")[1].split("-")[0] in wanted for i in ids)
    for _ in range(5):
        _, info = env.reset()
        assert info["task_type"] in wanted
    env.close()
    with pytest.raises(ValueError, match="unknown task types"):
        ALFWorldEnv(data_dir=str(easy_root), task_types=["pick_and_fly"])


def test_split_argument_and_ids(easy_root):
    for split in SPLITS:
        env = ALFWorldEnv(split=split, data_dir=str(easy_root))
        _, info = env.reset(seed=0)
        assert info["split"] == split and info["task_id"].startswith(f"{split}/")
        env.close()


def test_difficulty_and_data_dir_are_exclusive(easy_root):
    with pytest.raises(ValueError, match="difficulty"):
        ALFWorldEnv(data_dir=str(easy_root), difficulty="easy")


def test_alfworld_data_variable(easy_root, monkeypatch):
    monkeypatch.setenv("ALFWORLD_DATA", str(easy_root))
    env = ALFWorldEnv()
    _, info = env.reset(seed=1)
    assert str(easy_root) in info["gamefile"]
    env.close()


def test_generated_on_first_use_into_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    env = gym.make("seed/ALFWorld-v0", difficulty="easy", split="valid_unseen")
    assert env.unwrapped.task_count("valid_unseen") == 134
    obs, info = env.reset(options={"index": 4})
    gamefile = info["gamefile"]
    assert gamefile.startswith(str(tmp_path / "alfworld" / "generated" / "easy-seed0-gen"))
    assert "/json_2.1.1/valid_unseen/" in gamefile
    env.close()
    # A second env (another process would do the same) finds the game already made.
    again = ALFWorldEnv(difficulty="easy", split="valid_unseen")
    assert again.task_id_for("valid_unseen", 4) == info["task_id"]
    assert again.reset(options={"task_id": info["task_id"]})[0]["text"] == obs["text"]
    again.close()


def test_easy_rooms_are_small(tmp_path, monkeypatch):
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path))
    env = ALFWorldEnv(difficulty="easy")
    for index in range(6):
        _, info = env.reset(options={"index": index})
        goes = [a for a in info["available_actions"] if a.startswith("go to ")]
        assert 3 <= len(goes) <= 5
        assert len(env.expert_plan()) <= 10
    env.close()


def test_a_second_env_in_a_process_still_uses_generated_games(tmp_path):
    """alfworld.info sets $ALFWORLD_DATA on import; that must not turn later envs to real data."""
    import os
    import subprocess
    import sys

    code = (
        "import os, gymnasium as gym, seed_envs\n"
        "for _ in range(2):\n"
        "    env = gym.make('seed/ALFWorld-v0', difficulty='tiny')\n"
        "    env.reset(options={'index': 0})\n"
        "print(os.environ.get('ALFWORLD_DATA'))\n"
    )
    environ = {k: v for k, v in os.environ.items() if k != "ALFWORLD_DATA"}
    environ["SEED_CACHE_DIR"] = str(tmp_path)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "None"


def test_listing_generated_task_ids_makes_no_game(tmp_path, monkeypatch):
    """Ids of a generated set come from (split, index, seed): listing thousands makes no game;
    a game is made when a reset first needs it, once, and any env finds it on disk after."""
    from seed_envs.alfworld import sources
    from seed_envs.alfworld.sources import task_type_of

    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path))
    made = []
    real_make_game = sources.make_game
    monkeypatch.setattr(sources, "make_game", lambda *args, **kw: made.append(args) or real_make_game(*args, **kw))
    env = ALFWorldEnv(difficulty="tiny", generator_seed=4)
    ids = env.task_ids("train", limit=1000)
    others = [env.task_id_for(split, i) for split in ("valid_seen", "valid_unseen") for i in range(100)]
    assert made == [] and not any(env.source.root.rglob("game.tw-pddl"))
    assert len(ids) == 1000 and len(set(ids + others)) == len(ids) + len(others)
    assert all(t.startswith("train/") for t in ids) and others[0].startswith("valid_seen/")
    assert [task_type_of(t) for t in ids[: 2 * len(TASK_TYPES)]] == 2 * list(TASK_TYPES)

    _, info = env.reset(options={"task_id": ids[7]})
    assert len(made) == 1 and made[0][:2] == ("train", 7)
    assert info["task_id"] == ids[7] and info["task_type"] == task_type_of(ids[7]) == TASK_TYPES[7 % len(TASK_TYPES)]
    assert len(list(env.source.root.rglob("game.tw-pddl"))) == 1
    env.reset(options={"split": "train", "index": 7})
    env.close()

    again = ALFWorldEnv(difficulty="tiny", generator_seed=4)
    assert again.task_id_for("train", 7) == ids[7]
    again.reset(options={"task_id": ids[7]})  # read from disk, not made again
    assert len(made) == 1
    for wrong in (ids[7].replace("G4", "G5"), ids[7].replace("train/", "valid_seen/"), "train/x/trial_G4_t000007"):
        with pytest.raises(ValueError, match="not a game of this generated set"):
            again.reset(options={"task_id": wrong})
    again.close()
