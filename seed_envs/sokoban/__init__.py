"""Sokoban: generated rooms (solvable by construction), image/text observations. Procedural: needs no data.

Names load on first use, so ``import seed_envs.sokoban`` is light.
"""

from seed_envs.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "Room": "seed_envs.sokoban.room",
        "RoomConfig": "seed_envs.sokoban.generate",
        "SokobanEnv": "seed_envs.sokoban.env",
        "generate_room": "seed_envs.sokoban.generate",
        "render_room": "seed_envs.sokoban.render",
        "solve": "seed_envs.sokoban.solver",
    },
)
