"""ALFWorld on its real engine (textworld's PDDL backend + alfworld's wrappers).

``gym.make("seed/ALFWorld-v0")`` plays real ALFWorld game files (``data_dir=`` or
``ALFWORLD_DATA``) or, without them, games from our generator in the same format.
Names load on first use: the engine is imported only when an env is built, so
``import seed_envs.alfworld`` is light.
"""

from seed_envs.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "ALFWorldEnv": "seed_envs.alfworld.env",
        "DirectorySource": "seed_envs.alfworld.sources",
        "GeneratedSource": "seed_envs.alfworld.sources",
        "collect_games": "seed_envs.alfworld.data",
        "download_release": "seed_envs.alfworld.download",
        "generate_dataset": "seed_envs.alfworld.dataset",
        "make_game": "seed_envs.alfworld.generate",
        "precompile_games": "seed_envs.alfworld.precompile",
    },
)
