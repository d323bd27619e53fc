"""The seed envs as a verifiers taskset, under the name verifiers imports it by.

verifiers finds a taskset by importing the top-level module its id names (``seed-envs-verifiers``
becomes ``seed_envs_verifiers``) and taking the ``Taskset`` and ``Env`` subclasses in its
``__all__``. Everything is defined in :mod:`seed_envs.integrations.verifiers`; this module is
only that name.
"""

from seed_envs.integrations.verifiers import SeedPlayerEnv, SeedTaskset

__all__ = ["SeedPlayerEnv", "SeedTaskset"]
