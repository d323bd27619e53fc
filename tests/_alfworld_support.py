"""Shared helpers for the ALFWorld tests: small generated datasets and upstream engine handles.

Datasets are generated into pytest's base temp directory under a fixed name. The
generator is deterministic and resumes from what is on disk, so every test module
that asks for the same dataset pays for it once per session.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("alfworld", reason="needs the alfworld extra: pip install 'seed-agentic-rl[alfworld]'")
pytest.importorskip("fast_downward", reason="needs fast-downward-textworld (alfworld extra)")
pytest.importorskip("textworld", reason="needs textworld (alfworld extra)")

from seed_envs.alfworld.dataset import generate_dataset

#: One game per family per split (families cycle with the index).
SMALL_COUNTS = {"train": 6, "valid_seen": 6, "valid_unseen": 6}


def dataset(tmp_path_factory: pytest.TempPathFactory, difficulty: str, counts: dict[str, int], seed: int = 7) -> Path:
    root = tmp_path_factory.getbasetemp() / f"alfworld-{difficulty}-seed{seed}"
    generate_dataset(root, counts, difficulty=difficulty, seed=seed)
    return root


def upstream_game_env(expert: bool = False, facts: bool = False):
    """Upstream's engine as alfworld plays it: AlfredInfos(AlfredDemangler(PddlEnv))."""
    from seed_envs.alfworld import engine

    return engine.make_game_env(engine.request_infos(expert=expert, facts=facts), cached=False)
