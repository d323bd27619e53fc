"""How seed_rl builds envs: the keywords for ``gym.make``, shared by play, training and evaluation."""

from __future__ import annotations

import inspect
from typing import Any

import gymnasium as gym

import seed_envs  # noqa: F401  (registers the ids)


def env_kwargs(env_id: str, split: str, visual: bool, extra: dict[str, Any]) -> dict[str, Any]:
    """``gym.make`` keywords: the split; text observations unless ``visual`` (for envs that offer both)."""
    kwargs = {"split": split, **extra}
    entry = gym.spec(env_id).entry_point
    env_class = gym.envs.registration.load_env_creator(entry) if isinstance(entry, str) else entry
    if "observation_mode" in inspect.signature(env_class).parameters and "observation_mode" not in kwargs:
        kwargs["observation_mode"] = "both" if visual else "text"
    return kwargs


def make_env(env_id: str, split: str, visual: bool, extra: dict[str, Any]) -> Any:
    """One env as ``seed play`` builds it (see :func:`env_kwargs`)."""
    return gym.make(env_id, **env_kwargs(env_id, split, visual, extra))
