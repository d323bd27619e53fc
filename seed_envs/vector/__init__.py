"""Vectorized seed envs: several envs per worker process, batched reset/step, crash recovery."""

from seed_envs.vector.env import BACKENDS, SeedVectorEnv, make_vec
from seed_envs.vector.launch import WorkerStartError
from seed_envs.vector.workers import WorkerDied, make_registered_env

__all__ = ["BACKENDS", "SeedVectorEnv", "WorkerDied", "WorkerStartError", "make_registered_env", "make_vec"]
