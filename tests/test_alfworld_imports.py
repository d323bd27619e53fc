"""The ALFWorld package's light modules import no engine (the CLI builds --help from them)."""

from __future__ import annotations

import subprocess
import sys

ENGINE_PACKAGES = ("textworld", "fast_downward", "alfworld", "tatsu", "spacy")


def test_light_modules_import_no_engine():
    code = (
        "import sys, seed_envs, seed_envs.alfworld, seed_envs.alfworld.cli, seed_envs.alfworld.data, "
        "seed_envs.alfworld.dataset, seed_envs.alfworld.download, seed_envs.alfworld.precompile, "
        "seed_envs.alfworld.sources, seed_envs.alfworld.generate, seed_envs.alfworld.vocab; "
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {ENGINE_PACKAGES!r}); "
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_registered_without_importing_the_env():
    code = (
        "import sys, gymnasium as gym, seed_envs; spec = gym.spec('seed/ALFWorld-v0'); "
        "assert spec.max_episode_steps == 30 and spec.entry_point == 'seed_envs.alfworld.env:ALFWorldEnv'; "
        "sys.exit(1 if 'seed_envs.alfworld.env' in sys.modules else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
