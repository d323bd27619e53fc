"""EZPoints: two cards in an image, build a formula that makes 12. Procedural: needs no data.

Names load on first use, so ``import seed_envs.ezpoints`` is light.
"""

from seed_envs.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "Card": "seed_envs.ezpoints.cards",
        "EZPointsEnv": "seed_envs.ezpoints.env",
        "deal_for": "seed_envs.ezpoints.generate",
        "evaluate": "seed_envs.ezpoints.cards",
        "render_frame": "seed_envs.ezpoints.render",
    },
)
