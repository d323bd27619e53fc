"""Shared helpers of the Search QA tests (paths to the real samples, a per-session cache)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "searchqa"
WIKI18_SAMPLE = SHARED / "wiki18_sample_1000.jsonl"
NQ_SAMPLE = SHARED / "nq_test_16.jsonl"
SEARCHR1_CORPUS = SHARED / "searchr1_corpus_10.jsonl"

needs_samples = pytest.mark.skipif(not WIKI18_SAMPLE.is_file(), reason=f"real Search-R1 samples not found in {SHARED}")


@pytest.fixture(scope="session", autouse=False)
def seed_cache(tmp_path_factory: pytest.TempPathFactory):
    """A seed cache folder shared by every Search QA test of a session."""
    folder = tmp_path_factory.getbasetemp() / "seed-cache-searchqa"
    folder.mkdir(exist_ok=True)
    previous = os.environ.get("SEED_CACHE_DIR")
    os.environ["SEED_CACHE_DIR"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("SEED_CACHE_DIR", None)
    else:
        os.environ["SEED_CACHE_DIR"] = previous
