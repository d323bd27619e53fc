"""Any registered seed env as an OpenEnv environment (``seed serve env``), and its clients.

Needs the ``openenv`` extra (openenv-core). Names load on first use, so importing this package
imports neither OpenEnv nor an env.
"""

from seed_envs.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "RemoteSeedEnv": "seed_envs.integrations.openenv.client",
        "SeedAction": "seed_envs.integrations.openenv.models",
        "SeedEnvClient": "seed_envs.integrations.openenv.client",
        "SeedObservation": "seed_envs.integrations.openenv.models",
        "SeedOpenEnv": "seed_envs.integrations.openenv.environment",
        "SeedState": "seed_envs.integrations.openenv.models",
        "ServerThread": "seed_envs.integrations.openenv.server",
        "create_app": "seed_envs.integrations.openenv.server",
    },
)
