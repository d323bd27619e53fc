"""seed_envs.vector: batched reset/step over worker processes, and recovery from crashes."""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import numpy as np
import pytest
from crash_env import make_crash_env

from seed_envs.vector import SeedVectorEnv, make_vec

TASKS = [f"sokoban-6x6-b1/valid_seen/{i}" for i in range(6)]
ACTIONS = [["up", "left", "down", "right", "up", "left"], ["right"] * 6, ["down", "up", "jump", "left", "x", "up"]]


def play_single(task_id: str, actions: list[str]) -> list[tuple]:
    env = gym.make("seed/Sokoban-v0", observation_mode="text")
    obs, _ = env.reset(options={"task_id": task_id})
    trace = [obs["text"]]
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append((obs["text"], reward, terminated, truncated, info["action_valid"]))
    return trace


def play_vector(vec: SeedVectorEnv) -> list[list]:
    """The traces of ``play_single``, played by the envs of ``vec`` side by side."""
    observations, infos = vec.reset(task_ids=TASKS)
    got = [[obs["text"]] for obs in observations]
    assert [info["task_id"] for info in infos] == TASKS
    for turn in ACTIONS:
        observations, rewards, terminated, truncated, infos = vec.step(turn)
        for i in range(len(TASKS)):
            got[i].append((observations[i]["text"], rewards[i], terminated[i], truncated[i], infos[i]["action_valid"]))
    return got


@pytest.mark.parametrize(("backend", "workers"), [("sync", 1), ("process", 1), ("process", 2), ("process", 4)])
def test_vector_results_equal_single_env_results(backend, workers):
    expected = [play_single(task, [turn[i] for turn in ACTIONS]) for i, task in enumerate(TASKS)]
    with make_vec("seed/Sokoban-v0", 6, workers=workers, backend=backend, observation_mode="text") as vec:
        assert play_vector(vec) == expected


def test_a_subset_of_envs_can_be_stepped():
    with make_vec("seed/EZPoints-v0", 4, workers=2, observation_mode="text") as vec:
        vec.reset(seeds=[0, 1, 2, 3])
        observations, rewards, terminated, truncated, infos = vec.step(["+", "*"], env_ids=[3, 1])
        assert [info["formula"] for info in infos] == ["+", "*"]
        _, _, _, _, infos = vec.step(["+", "+", "+", "+"])
        assert [info["formula"] for info in infos] == ["+", "*+", "+", "++"]
        assert vec.call("expert_plan", env_ids=[0])[0] is None  # '+' is no prefix of a solution
        with pytest.raises(ValueError, match="distinct"):
            vec.step(["+", "+"], env_ids=[1, 1])
        with pytest.raises(IndexError):
            vec.step(["+"], env_ids=[9])


def crash_vec(workers: int = 2, timeout: float | None = 600.0, context: str | None = None) -> SeedVectorEnv:
    return SeedVectorEnv(
        [make_crash_env] * 4, workers=workers, backend="process", step_timeout=timeout, context=context
    )


@pytest.mark.parametrize("context", [None, "spawn"])
@pytest.mark.parametrize("how", ["kill", "segfault", "exit"])
def test_a_dead_worker_is_restarted_and_its_episodes_reported(how, context):
    with crash_vec(context=context) as vec:
        vec.reset(task_ids=[f"crash/train/{i}" for i in range(4)])
        vec.step(["a"] * 4)
        if how == "kill":
            os.kill(vec.workers[1].process.pid, signal.SIGKILL)
            actions = ["a"] * 4
        else:
            actions = ["a", "a", how, "a"]  # env 2 lives on worker 1 with env 3
        observations, rewards, terminated, truncated, infos = vec.step(actions)
        assert truncated.tolist() == [False, False, True, True]
        assert "worker_failure" in infos[2] and "worker_failure" in infos[3]
        assert infos[2]["worker_failure"]["task_id"] == "crash/train/2"
        assert rewards[2] == 0 and observations[2]["text"].endswith("count 1")  # last observation repeated
        assert rewards[:2].tolist() == [1.0, 1.0] and "worker_failure" not in infos[0]
        assert vec.workers[1].restarts == 1 and len(vec.failures) == 2
        # The lost envs stay truncated until reset; then they work on the new worker.
        _, _, _, truncated, _ = vec.step(["a"], env_ids=[3])
        assert truncated.tolist() == [True]
        observations, _ = vec.reset(task_ids=["crash/train/7", "crash/train/8"], env_ids=[2, 3])
        _, rewards, _, truncated, _ = vec.step(["a"] * 4)
        assert not truncated.any() and rewards.tolist() == [1.0] * 4


def test_envs_of_one_worker_share_read_only_data():
    with SeedVectorEnv([make_crash_env] * 6, workers=2, backend="process") as vec:
        vec.reset(task_ids=[f"crash/train/{i}" for i in range(6)])
        loads = vec.call("data_loads")
    by_pid: dict[int, set[int]] = {}
    for pid, count, catalog in loads:
        assert count == 1
        by_pid.setdefault(pid, set()).add(catalog)
    assert len(by_pid) == 2 and all(len(catalogs) == 1 for catalogs in by_pid.values())


def test_an_env_that_raises_is_rebuilt_and_reported_alone():
    for backend in ("sync", "process"):
        vec = SeedVectorEnv([make_crash_env] * 2, workers=1, backend=backend)
        vec.reset(task_ids=["crash/train/0", "crash/train/1"])
        _, rewards, _, truncated, infos = vec.step(["raise", "a"])
        assert truncated.tolist() == [True, False] and rewards.tolist() == [0.0, 1.0]
        assert "deliberate failure" in infos[0]["worker_failure"]["error"]
        vec.reset(task_ids=["crash/train/0"], env_ids=[0])
        observations, rewards, _, truncated, _ = vec.step(["a", "a"])
        assert not truncated.any() and rewards.tolist() == [1.0, 1.0]
        assert observations[0]["text"].endswith("count 1") and observations[1]["text"].endswith("count 2")
        vec.close()


def test_a_hung_worker_times_out_instead_of_hanging_the_run():
    with crash_vec(workers=2, timeout=3.0) as vec:
        vec.reset(task_ids=[f"crash/train/{i}" for i in range(4)])
        _, _, _, truncated, infos = vec.step(["a", "hang", "a", "a"])
        assert truncated.tolist() == [True, True, False, False]
        assert "did not answer" in infos[1]["worker_failure"]["reason"]


def test_gymnasium_make_vec_works_too():
    vec = gym.make_vec("seed/Sokoban-v0", num_envs=2, vectorization_mode="sync")
    obs, info = vec.reset(seed=0)
    assert obs["image"].shape == (2, 192, 192, 3) and len(obs["text"]) == 2
    _, rewards, *_ = vec.step(("up", "down"))
    assert np.allclose(rewards, -0.1) or (rewards > 0).any()
    vec.close()
