"""Corridor: say which way the exit is; a toy env with a known optimal policy, for checking that
trainers learn. Procedural: needs no data.

Names load on first use, so ``import seed_envs.corridor`` is light.
"""

from seed_envs.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "CorridorEnv": "seed_envs.corridor.env",
        "corridor_for": "seed_envs.corridor.env",
    },
)
