"""Shared test fixtures: the path of the read-only reference data beside the repo."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (real upstream samples); tests that need it skip if it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"reference data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep generated data out of the user's ~/.cache unless a test opts in.

    ``$ALFWORLD_DATA`` is unset too: importing upstream alfworld (as the parity tests do)
    sets it for the rest of the process, which would turn later envs to real data.
    """
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "seed-cache"))
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)


@pytest.fixture(scope="session")
def tiny_llama_policy():
    """A policy over a tiny random Llama (built in-process, nothing downloaded)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from seed_agent.tiny_models import tiny_random_policy

    return tiny_random_policy(batch_size=4)


@pytest.fixture(scope="session")
def tiny_vl_policy():
    """A policy over a tiny random Qwen2.5-VL with images."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from seed_agent.tiny_models import tiny_random_policy

    return tiny_random_policy(vlm=True, batch_size=4)
