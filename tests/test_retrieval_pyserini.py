"""Our BM25 against Anserini itself (Pyserini 0.25, Lucene 9, Java): the same top-k lists and
the same reported scores, on random documents, the generated WebShop catalog (500 goal
instructions) and the wiki-18 sample (the NQ sample's 17 questions and 500 generated queries).

Slow, and skipped without pyserini==0.25.0, pyjnius and a JDK.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil

import pytest
from searchqa_support import NQ_SAMPLE, WIKI18_SAMPLE

pytest.importorskip("bm25s", reason="the search extra (bm25s) is not installed")

from seed_envs.retrieval.bm25_index import Bm25Index


def _pyserini_available() -> bool:
    have = all(importlib.util.find_spec(m) is not None for m in ("pyserini", "jnius"))
    return have and bool(shutil.which("java") or os.environ.get("JAVA_HOME"))


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not _pyserini_available(), reason="needs pyserini==0.25.0, pyjnius and a JDK"),
]

#: Agreement asked of the in-process index: identical top-10 ids for at least this share of
#: queries, and on those, scores within this relative difference.
SAME_LISTS = 0.99
SCORE_RTOL = 1e-5


def agreement(ours: list[list[tuple[str, float]]], theirs: list[list[tuple[str, float]]]) -> dict:
    """The share of queries with identical id lists, the largest relative score difference on
    those, and the first few differing lists."""
    same, worst, differing = 0, 0.0, []
    for query, (mine, lucene) in enumerate(zip(ours, theirs, strict=True)):
        if [d for d, _ in mine] != [d for d, _ in lucene]:
            differing.append((query, mine, lucene))
            continue
        same += 1
        for (_, a), (_, b) in zip(mine, lucene, strict=True):
            worst = max(worst, abs(a - b) / abs(b))
    return {"same": same / len(ours), "max_rel_diff": worst, "differing": differing[:3], "queries": len(ours)}


def assert_agrees(report: dict) -> None:
    print({k: v for k, v in report.items() if k != "differing"})
    assert report["same"] >= SAME_LISTS, report["differing"]
    assert report["max_rel_diff"] <= SCORE_RTOL


def test_bm25_equals_lucene_bit_for_bit(tmp_path):
    """Random documents up to 300 tokens (lengths Lucene stores inexactly), many ties, ids out
    of string order, queries with repeated terms: every hit, in order, with Anserini's score."""
    from seed_envs.retrieval.pyserini import LuceneBm25, build_lucene_index, is_lucene_index

    rng = random.Random(1)
    words = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "kiwi", "lemon", "mango"]
    documents = [" ".join(rng.choice(words) for _ in range(rng.choice([1, 2, 3, 50, 120, 300]))) for _ in range(80)]
    documents += ["apple", "apple", "banana apple", "the of"]  # exact ties; a document without tokens
    ids = [f"doc{rng.randrange(10_000)}-{i}" for i in range(len(documents))]
    folder = build_lucene_index(zip(ids, documents, strict=True), tmp_path / "lucene")
    assert is_lucene_index(folder) and not list(tmp_path.glob("*.tmp-*"))
    lucene = LuceneBm25(folder)
    ours = Bm25Index.open(list(zip(ids, documents, strict=True)))
    queries = ["apple", "banana cherry", "kiwi kiwi mango", "fig date elder grape lemon", "apple apple apple fig"]
    for query, (hits, scores) in zip(queries, ours.top_k(queries, len(documents)), strict=True):
        mine = [(ids[i], s) for i, s in zip(hits.tolist(), scores.tolist(), strict=True)]
        assert mine == lucene.search(query, len(documents))  # same ids, same float scores
    assert lucene.search("", 3) == [] and lucene.batch_search(["apple", "", "kiwi"], 2, threads=2)[1] == []
    assert json.loads(lucene.raw(ids[0]))["contents"] == documents[0]


def wiki_queries() -> list[str]:
    """The NQ sample's questions (17), then 500 queries cut from the passages (1-8 words, a fifth of
    them with a word repeated), seeded."""
    questions = [json.loads(line)["question"] for line in NQ_SAMPLE.read_text(encoding="utf-8").splitlines()]
    passages = [json.loads(line)["contents"] for line in WIKI18_SAMPLE.read_text(encoding="utf-8").splitlines()]
    rng = random.Random(0)
    queries = []
    for _ in range(500):
        words = rng.choice(passages).split()
        size = rng.randint(1, 8)
        start = rng.randrange(max(1, len(words) - size))
        picked = words[start : start + size]
        if rng.random() < 0.2:
            picked.append(rng.choice(picked))
        queries.append(" ".join(picked))
    return questions + queries


def test_wiki18_sample_search_agrees_with_pyserini(tmp_path, monkeypatch):
    if not WIKI18_SAMPLE.is_file():
        pytest.skip(f"the wiki-18 sample is not in {WIKI18_SAMPLE.parent}")
    from seed_envs.searchqa.retrievers import make_retriever

    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "cache"))
    queries = wiki_queries()
    bm25, lucene = make_retriever("bm25s", WIKI18_SAMPLE), make_retriever("pyserini", WIKI18_SAMPLE)
    ours = [[(d.id, d.score) for d in docs] for docs in bm25.search(queries, 10)]
    theirs = [[(d.id, d.score) for d in docs] for docs in lucene.search(queries, 10)]
    assert sum(map(len, theirs)) > 8 * len(queries)  # most lists are full
    assert_agrees(agreement(ours, theirs))


def test_webshop_search_agrees_with_pyserini(tmp_path, monkeypatch):
    from seed_envs.webshop.data import load_data
    from seed_envs.webshop.generate import DEFAULT_NUM_PRODUCTS, DEFAULT_SEED, generate_catalog
    from seed_envs.webshop.search import build_engine

    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "cache"))
    data = load_data(generate_catalog(tmp_path / "catalog", DEFAULT_NUM_PRODUCTS, DEFAULT_SEED))
    queries = [goal["instruction_text"] for goal in data.goals[:500]]
    bm25, lucene = build_engine(data.products, "bm25s"), build_engine(data.products, "pyserini")
    ours, theirs = [], []
    for query in queries:
        hits, scores = bm25.index.search(query, 10)
        ours.append([(bm25.asins[i], s) for i, s in zip(hits.tolist(), scores.tolist(), strict=True)])
        theirs.append(lucene._searcher.search(query, 10))
        assert bm25.search(query, 10) == [asin for asin, _ in ours[-1]]  # the engine's own results
    assert_agrees(agreement(ours, theirs))
    # The first page of 50 (what the site ranks), ids only.
    same_50 = sum(bm25.search(q) == lucene.search(q) for q in queries[:100])
    assert same_50 >= SAME_LISTS * 100
