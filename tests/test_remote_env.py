"""seed/Remote-v0: each seed env served over OpenEnv passes the seed contract and plays the local
env's trajectories (same task, same actions: same text, image, reward, end and info)."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("openenv", reason="the openenv extra (openenv-core) is not installed")

from openenv_support import pick, play_lockstep, record

import seed_envs  # noqa: F401  (registers the ids)
from seed_envs.integrations.openenv.server import ServerThread, create_app
from seed_envs.testing import check_seed_env

REPLAY_STEPS = {"seed/SearchQA-v0": ["<search> capital </search>", "no tags", "<answer> x </answer>"]}


def alfworld_kwargs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from _alfworld_support import SMALL_COUNTS, dataset  # skips without the alfworld extra

    return {"data_dir": str(dataset(tmp_path_factory, "easy", SMALL_COUNTS))}


def webshop_kwargs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    for module in ("bm25s", "rapidfuzz", "jinja2"):
        pytest.importorskip(module, reason="the webshop extra is not installed")
    from webshop_fixtures import REAL_ATTRIBUTE_FILE, write_products

    if not REAL_ATTRIBUTE_FILE.is_file():
        pytest.skip(f"the WebShop sample {REAL_ATTRIBUTE_FILE} is missing")
    data_dir: Path = write_products(tmp_path_factory.mktemp("webshop-remote"))
    return {"data_dir": str(data_dir), "attributes_file": str(REAL_ATTRIBUTE_FILE), "type_matcher": "lexicon"}


def searchqa_kwargs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("bm25s", reason="the search extra (bm25s) is not installed")
    return {"dataset": "world-easy"}


#: env id -> its gym.make kwargs for these tests (a data env skips where its extra or data is missing).
CASES = {
    "seed/Sokoban-v0": lambda _: {},
    "seed/EZPoints-v0": lambda _: {},
    "seed/Corridor-v0": lambda _: {},
    "seed/ALFWorld-v0": alfworld_kwargs,
    "seed/WebShop-v0": webshop_kwargs,
    "seed/SearchQA-v0": searchqa_kwargs,
}


@pytest.fixture(scope="module", params=sorted(CASES))
def served(request, tmp_path_factory):
    """(env id, its kwargs, the URL of a server of it)."""
    env_id = request.param
    kwargs = CASES[env_id](tmp_path_factory)
    with ServerThread(create_app(env_id, kwargs, max_sessions=4)) as server:
        yield env_id, kwargs, server.url


@pytest.fixture
def remote(served):
    env = gym.make("seed/Remote-v0", url=served[2])
    yield env
    env.close()


def test_the_remote_env_passes_the_seed_contract(served, remote):
    env_id, kwargs, _ = served
    local = gym.make(env_id, **kwargs)
    assert remote.unwrapped.remote_env_id == env_id
    assert remote.observation_space == local.observation_space and remote.action_space == local.action_space
    check_seed_env(remote, replay_steps=REPLAY_STEPS.get(env_id))
    local.close()


def test_the_remote_env_plays_the_local_trajectory(served, remote):
    env_id, kwargs, _ = served
    local = gym.make(env_id, **kwargs)
    resets = [
        {"options": {"split": "valid_seen", "index": 0}},
        {"options": {"split": "valid_unseen", "index": 1}},
        {"seed": 3},  # a task drawn by the seed, on the server as here
        {},  # the next draw of the same generator
    ]
    played = [play_lockstep(env_id, local, remote, reset, seed=i, expert=i % 2 == 0) for i, reset in enumerate(resets)]
    assert any(won for _, won in played[::2]), "the expert won no episode, so no winning step was compared"
    local.close()


def test_concurrent_sessions_play_their_own_trajectories(served):
    """Four sessions play four tasks at once, from four threads; each plays what the local env
    plays alone (the server calls its envs one at a time: ALFWorld's parser is process-wide)."""
    env_id, kwargs, url = served
    played: dict[int, tuple[list[str], list[tuple]]] = {}

    def play(index: int) -> None:
        env, rng = gym.make("seed/Remote-v0", url=url), random.Random(index)
        _, info = env.reset(options={"split": "valid_seen", "index": index})
        actions, records = [], []
        for _ in range(8):
            actions.append(pick(env_id, info, rng))
            *step, info = env.step(actions[-1])
            records.append(record(*step, info))
            if step[2] or step[3]:
                break
        env.close()
        played[index] = (actions, records)

    threads = [threading.Thread(target=play, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(played) == [0, 1, 2, 3], "a session failed (its error is printed above)"
    local = gym.make(env_id, **kwargs)
    for index, (actions, records) in played.items():
        local.reset(options={"split": "valid_seen", "index": index})
        assert [record(*local.step(action)) for action in actions] == records, f"session {index} differs"
    local.close()


def test_the_time_limit_is_the_served_envs(served, remote):
    env_id, kwargs, _ = served
    limit = gym.spec(env_id).max_episode_steps
    remote.reset(options={"split": "valid_seen", "index": 2})
    for step in range(1, limit + 1):
        *_, terminated, truncated, info = remote.step("a" * (remote.unwrapped.max_action_length + 1))
        assert info["action_valid"] is False and not terminated
        assert truncated == (step == limit)


def test_an_image_comes_back_as_the_same_array():
    with ServerThread(create_app("seed/Sokoban-v0", {"dim_room": [7, 7], "tile_size": 16})) as server:
        remote = gym.make("seed/Remote-v0", url=server.url, render_mode="rgb_array")
        local = gym.make("seed/Sokoban-v0", dim_room=(7, 7), tile_size=16, render_mode="rgb_array")
        obs, _ = remote.reset(seed=11)
        expected, _ = local.reset(seed=11)
        assert obs["image"].shape == (112, 112, 3) and obs["image"].dtype == np.uint8
        assert np.array_equal(obs["image"], expected["image"]) and np.array_equal(remote.render(), obs["image"])
        remote.close()


def test_a_closed_remote_env_and_a_non_string_action_are_clear_errors():
    with ServerThread(create_app("seed/Corridor-v0")) as server:
        remote = gym.make("seed/Remote-v0", url=server.url).unwrapped
        remote.reset(seed=0)
        with pytest.raises(TypeError, match="str actions"):
            remote.step(3)
        remote.close()
        remote.close()  # idempotent
        with pytest.raises(RuntimeError, match="closed; make a new one"):
            remote.reset()
    with pytest.raises(ConnectionError, match="Failed to connect"):
        gym.make("seed/Remote-v0", url=server.url, connect_timeout_s=2)  # the server is gone
