"""Gymnasium ids of the seed envs, registered on ``import seed_envs``.

``max_episode_steps`` follows the SEED paper's settings (``seed/Corridor-v0``, a toy for
tests that trainers learn, is not one of its benchmarks). Entry points are strings,
so registering imports no env module: ``gym.make`` imports only the env it builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym


@dataclass(frozen=True)
class EnvEntry:
    id: str
    entry_point: str
    #: None: the env ends its own episodes (a remote env: the server's time limit applies).
    max_episode_steps: int | None
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: Drives a real browser (Chromium): left out of default runs over "every env".
    needs_browser: bool = False


ENVS: tuple[EnvEntry, ...] = (
    EnvEntry("seed/ALFWorld-v0", "seed_envs.alfworld.env:ALFWorldEnv", 30),
    EnvEntry("seed/Sokoban-v0", "seed_envs.sokoban.env:SokobanEnv", 15),
    EnvEntry("seed/EZPoints-v0", "seed_envs.ezpoints.env:EZPointsEnv", 8),
    EnvEntry("seed/SearchQA-v0", "seed_envs.searchqa.env:SearchQAEnv", 4),
    EnvEntry("seed/WebShop-v0", "seed_envs.webshop.env:WebShopEnv", 15),
    EnvEntry("seed/WebShopBrowser-v0", "seed_envs.webshop.browser_env:WebShopBrowserEnv", 15, needs_browser=True),
    # not a benchmark: a toy with a known optimal policy, for tests that trainers learn
    EnvEntry("seed/Corridor-v0", "seed_envs.corridor.env:CorridorEnv", 6),
)

#: Gymnasium clients of seed envs served elsewhere: not envs of their own, so not in ENVS or env_ids().
REMOTE_ENVS: tuple[EnvEntry, ...] = (
    # `gym.make("seed/Remote-v0", url=...)`: an env that `seed serve env` serves over OpenEnv
    EnvEntry("seed/Remote-v0", "seed_envs.integrations.openenv.client:RemoteSeedEnv", None),
)


def register_envs() -> None:
    """Register every id in :data:`ENVS` and :data:`REMOTE_ENVS` that is not registered yet (idempotent)."""
    for entry in (*ENVS, *REMOTE_ENVS):
        if entry.id not in gym.registry:
            gym.register(
                id=entry.id,
                entry_point=entry.entry_point,
                max_episode_steps=entry.max_episode_steps,
                kwargs=dict(entry.kwargs),
            )


def env_ids(browser: bool = True) -> list[str]:
    """All seed env ids; ``browser=False`` leaves out those that drive a real browser."""
    return [entry.id for entry in ENVS if browser or not entry.needs_browser]
