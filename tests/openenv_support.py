"""Shared helpers of the OpenEnv tests: one step as a comparable record, and lockstep play."""

from __future__ import annotations

import json
import random
from typing import Any

import gymnasium as gym
import numpy as np

from seed_envs.testing import bad_actions

#: What an agent says where the env lists no actions (text envs with open action spaces).
OPEN_ACTIONS = {
    "seed/Corridor-v0": ("left", "right"),
    "seed/SearchQA-v0": ("<search> capital </search>", "<answer> paris </answer>", "no tags"),
}


def record(obs: dict[str, Any], reward: float | None, terminated: bool, truncated: bool, info: dict) -> tuple:
    """One step as a value that compares equal exactly when the two steps are the same.

    ``info`` as JSON carries it (tuples become lists): that is what a remote env can return.
    """
    image = obs.get("image")
    frame = None if image is None else (np.asarray(image).shape, np.asarray(image).tobytes())
    return obs["text"], frame, reward, bool(terminated), bool(truncated), json.loads(json.dumps(info))


def pick(env_id: str, info: dict[str, Any], rng: random.Random) -> str:
    return rng.choice(info["available_actions"] or OPEN_ACTIONS.get(env_id, ("look",)))


def play_lockstep(
    env_id: str, local: gym.Env, remote: gym.Env, reset: dict[str, Any], seed: int, expert: bool = False
) -> tuple[int, bool]:
    """Reset both envs alike, then give both the same actions until the episode ends, asserting
    that every step is the same; returns the steps and whether the episode was won.

    ``expert``: the local env's expert plan (then random actions); else random actions with
    every third one hostile.
    """
    rng = random.Random(seed)
    hostile = bad_actions(10_000, seed=seed, huge_every=0)
    obs, info = local.reset(**reset)
    remote_obs, remote_info = remote.reset(**reset)
    assert record(remote_obs, None, False, False, remote_info) == record(obs, None, False, False, info)
    plan = list(local.unwrapped.expert_plan() or []) if expert else []
    steps = 0
    while True:
        steps += 1
        hostile_turn = not expert and steps % 3 == 0
        action = plan.pop(0) if plan else next(hostile) if hostile_turn else pick(env_id, info, rng)
        step = local.step(action)
        assert record(*remote.step(action)) == record(*step), f"step {steps} ({action[:40]!r}) differs"
        obs, _, terminated, truncated, info = step
        if terminated or truncated:
            return steps, info["won"]
