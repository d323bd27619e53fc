"""The Ray backend of seed_envs.vector: the process backend's results and crash semantics, with
env workers as Ray actors on a local Ray instance."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from crash_env import make_crash_env  # noqa: E402
from test_vector import ACTIONS, TASKS, play_single, play_vector  # noqa: E402

from seed_envs.vector import SeedVectorEnv, WorkerStartError, make_vec  # noqa: E402
from seed_envs.vector.ray_worker import ensure_ray  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray instance for the module (starting one takes seconds)."""
    ensure_ray(num_cpus=2)
    yield
    ray.shutdown()


def crash_vec(timeout: float | None = 600.0) -> SeedVectorEnv:
    return SeedVectorEnv([make_crash_env] * 4, workers=2, backend="ray", step_timeout=timeout)


def test_ray_results_equal_single_env_results():
    expected = [play_single(task, [turn[i] for turn in ACTIONS]) for i, task in enumerate(TASKS)]
    with make_vec("seed/Sokoban-v0", 6, workers=2, backend="ray", observation_mode="text") as vec:
        assert len({w.pid for w in vec.workers}) == 2 and os.getpid() not in {w.pid for w in vec.workers}
        assert play_vector(vec) == expected


@pytest.mark.parametrize("how", ["kill", "segfault", "exit"])
def test_a_dead_actor_is_restarted_and_its_episodes_reported(how):
    with crash_vec() as vec:
        vec.reset(task_ids=[f"crash/train/{i}" for i in range(4)])
        vec.step(["a"] * 4)
        before = vec.workers[1].pid
        if how == "kill":
            os.kill(before, signal.SIGKILL)
            actions = ["a"] * 4
        else:
            actions = ["a", "a", how, "a"]  # env 2 lives on worker 1 with env 3
        observations, rewards, terminated, truncated, infos = vec.step(actions)
        assert truncated.tolist() == [False, False, True, True]
        failure = infos[2]["worker_failure"]
        assert failure["task_id"] == "crash/train/2" and "died" in failure["reason"]
        assert rewards[2] == 0 and observations[2]["text"].endswith("count 1")  # last observation repeated
        assert rewards[:2].tolist() == [1.0, 1.0] and "worker_failure" not in infos[0]
        assert vec.workers[1].restarts == 1 and vec.workers[1].pid != before and len(vec.failures) == 2
        _, _, _, truncated, _ = vec.step(["a"], env_ids=[3])
        assert truncated.tolist() == [True]  # lost until reset
        vec.reset(task_ids=["crash/train/7", "crash/train/8"], env_ids=[2, 3])
        _, rewards, _, truncated, _ = vec.step(["a"] * 4)
        assert not truncated.any() and rewards.tolist() == [1.0] * 4


def test_an_env_that_raises_is_rebuilt_and_reported_alone():
    with SeedVectorEnv([make_crash_env] * 2, workers=1, backend="ray") as vec:
        vec.reset(task_ids=["crash/train/0", "crash/train/1"])
        _, rewards, _, truncated, infos = vec.step(["raise", "a"])
        assert truncated.tolist() == [True, False] and rewards.tolist() == [0.0, 1.0]
        assert "deliberate failure" in infos[0]["worker_failure"]["error"]
        assert vec.workers[0].restarts == 0  # the actor lives on


def test_a_hung_actor_times_out_instead_of_hanging_the_run():
    with crash_vec(timeout=3.0) as vec:
        vec.reset(task_ids=[f"crash/train/{i}" for i in range(4)])
        _, _, _, truncated, infos = vec.step(["a", "hang", "a", "a"])
        assert truncated.tolist() == [True, True, False, False]
        assert "did not answer within 3 s" in infos[1]["worker_failure"]["reason"]


def failing_factory():
    raise RuntimeError("no data for this env here")


def test_an_env_that_cannot_be_built_in_an_actor_is_an_error_naming_the_cause():
    with SeedVectorEnv([failing_factory], backend="ray") as vec, pytest.raises(RuntimeError, match="no data for this"):
        vec.reset()
    with pytest.raises(ValueError, match="backend must be one of"):
        SeedVectorEnv([make_crash_env], backend="slurm")
    assert issubclass(WorkerStartError, RuntimeError)


def test_a_factory_defined_anywhere_travels_to_the_actor():
    """Ray pickles by value what it cannot import, so a closure works here, unlike with processes."""
    offset = 3

    def make() -> object:
        env = make_crash_env()
        env.unwrapped.offset = offset
        return env

    with SeedVectorEnv([make], backend="ray") as vec:
        vec.reset(task_ids=["crash/train/0"])
        assert vec.call("__getattribute__", "offset") == [3]
        ((pid, _, _),) = vec.call("data_loads")
        assert pid == vec.workers[0].pid != os.getpid()


def test_a_training_update_with_ray_env_workers_equals_one_in_process(tmp_path):
    pytest.importorskip("peft")
    from seed_rl.config import load_config
    from seed_rl.train.trainer import train

    tiny = ["model=tiny-random", "tasks_per_update=2", "group_size=2", "max_steps=3", "max_new_tokens=8"]
    tiny += ["updates=1", "progress=false", "lr=0.01"]
    local = train(load_config("sokoban_grpo", [*tiny, f"run_dir={tmp_path / 'sync'}"]))
    on_ray = train(load_config("sokoban_grpo", [*tiny, "env_backend=ray", "workers=2", f"run_dir={tmp_path / 'ray'}"]))
    keys = ("success", "invalid_rate", "loss", "tokens_generated", "tokens_scored")
    assert [{k: m[k] for k in keys} for m in on_ray] == [{k: m[k] for k in keys} for m in local]


def test_starting_ray_writes_nothing_in_the_home_folder(tmp_path):
    """A private local instance keeps token authentication without a token file in ~/.ray."""
    import shutil
    import subprocess
    import sys
    import tempfile

    home = tmp_path / "home"
    home.mkdir()
    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    script = (
        "from seed_envs.vector import make_vec\n"
        "from seed_envs.vector.ray_worker import ensure_ray\n"
        "import os\n"
        "ensure_ray(num_cpus=1)\n"
        "assert os.environ['RAY_AUTH_TOKEN']\n"
        "with make_vec('seed/EZPoints-v0', 2, workers=1, backend='ray') as vec:\n"
        "    vec.reset(seeds=[0, 1])\n"
    )
    env = {**os.environ, "HOME": str(home), "RAY_TMPDIR": str(temp), "TMPDIR": str(temp)}
    env.pop("RAY_AUTH_TOKEN", None)
    env.pop("RAY_ADDRESS", None)
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True, timeout=300)
    assert [p.name for p in home.rglob("*")] == []
    assert any(temp.iterdir())  # Ray's session files went to the temp dir
    shutil.rmtree(temp, ignore_errors=True)
