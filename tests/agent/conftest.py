"""Fixtures for the seed_agent tests: the user's own cache, for slow tests that need a fetched model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_cache import USER_CACHE_DIR


@pytest.fixture
def user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Use the user's real cache (for slow tests that need a fetched model)."""
    if USER_CACHE_DIR:
        monkeypatch.setenv("SEED_CACHE_DIR", USER_CACHE_DIR)
    else:
        monkeypatch.delenv("SEED_CACHE_DIR", raising=False)
