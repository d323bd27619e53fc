"""The shared retrieval package: Lucene's English analyzer, BM25 (formula, top-k, cache, batches), Pyserini."""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import time
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from searchqa_support import WIKI18_SAMPLE

from seed_envs.retrieval import analyzer as analysis
from seed_envs.retrieval.analyzer import (
    ASCII_PATTERN,
    LUCENE_STOP_WORDS,
    LuceneEnglishAnalyzer,
    java_lower,
    lucene_porter_departures,
    split_words,
    unicode_patterns,
)

bm25s = pytest.importorskip("bm25s", reason="the search extra (bm25s) is not installed")
pytest.importorskip("Stemmer", reason="the search extra (PyStemmer) is not installed")

from seed_envs.retrieval import bm25_index as bm25_module  # noqa: E402
from seed_envs.retrieval.bm25_index import Bm25Index, documents_fingerprint, index_dir_for  # noqa: E402

# ------------------------------------------------------------------ analyzer

# Each case was checked against Lucene's own EnglishAnalyzer (Pyserini 0.25, Lucene 9).
ANALYZER_CASES = [
    ("Don't STOP: 3.5mm, 1,299.99 £; v1.2 u.s.a e-mail x_y ___ a_ O'Neil's",
     ["don't", "stop", "3.5mm", "1,299.99", "v1.2", "u.s.a", "e", "mail", "x_y", "a_", "o'neil"]),
    ("東京タワー ひらがな 한국어 ภาษาไทย 🙂👍🏽 🇺🇸 ©",
     ["東", "京", "タワー", "ひ", "ら", "が", "な", "한국어", "ภาษาไทย", "🙂", "👍🏽", "🇺🇸", "©"]),
    ("İstanbul ΣΟΦΟΣ", ["istanbul", "σοφοσ"]),
    ("C++ AT&T R&D 9/11 2019-2020 I'm", ["c", "t", "r", "d", "9", "11", "2019", "2020", "i'm"]),
    ("technology possibly assembly imperceptibly anthology us es is",
     ["technolog", "possibl", "assembl", "impercept", "antholog", "us", "es"]),
    ("What's Washington D.C.'s 2nd-largest U.S. city?",
     ["what", "washington", "d.c", "s", "2nd", "largest", "u.", "citi"]),
    ("S:t foo·bar x:1 1:2 1;2 1.a 90's wi\u00adki", ["s:t", "foo·bar", "x", "1", "1", "2", "1;2", "1", "90", "s",
                                                "wi\u00adki"]),
    ("", []),
    ("the of and a an", []),
]  # fmt: skip


@pytest.mark.parametrize(("text", "tokens"), ANALYZER_CASES)
def test_analyzer_makes_lucenes_tokens(text, tokens):
    assert LuceneEnglishAnalyzer()(text) == tokens


def test_analyzer_options_and_long_tokens():
    text = "The Running dogs' owners ran"
    assert LuceneEnglishAnalyzer(stopwords=None, stemmer=None)(text) == ["the", "running", "dogs", "owners", "ran"]
    assert LuceneEnglishAnalyzer(stopwords=None)(text) == ["the", "run", "dog", "owner", "ran"]
    assert LuceneEnglishAnalyzer(stopwords=["dogs"], stemmer=None)(text) == ["the", "running", "owners", "ran"]
    assert LuceneEnglishAnalyzer(stemmer="english")("generously") == ["generous"]  # another Snowball stemmer
    assert len({LuceneEnglishAnalyzer().signature, LuceneEnglishAnalyzer(stopwords=None).signature,
                LuceneEnglishAnalyzer(stemmer=None).signature}) == 3  # fmt: skip
    assert len(LUCENE_STOP_WORDS) == 33
    # Tokens over 255 characters are cut into pieces of 255, as Lucene's StandardTokenizer does.
    assert split_words("x" * 600) == ["x" * 255, "x" * 255, "x" * 90]
    assert java_lower("ΣΑΣ İ") == "σασ i"  # Java's per-character lower case, no final sigma


def test_porter_departures_of_lucenes_stemmer():
    # Published Porter (PyStemmer) -> Lucene's reference implementation.
    assert lucene_porter_departures("technologi") == "technolog"
    assert lucene_porter_departures("possibli") == "possibl"
    assert lucene_porter_departures("imperceptibli") == "impercept"
    assert lucene_porter_departures("assembli") == "assembl"
    assert lucene_porter_departures("citi") == "citi"
    # m = 0 before the suffix: no rule applies (as Lucene: nobly -> nobli, geology -> geologi).
    assert lucene_porter_departures("nobli") == "nobli"
    assert lucene_porter_departures("geologi") == "geologi"
    words = "nobly ably humbly terribly sensibly capably feebly doubly bly analogy apology logic geology ology"
    assert LuceneEnglishAnalyzer()(words) == [
        "nobli",
        "abli",
        "humbl",
        "terribl",
        "sensibl",
        "capabl",
        "feebli",
        "doubli",
        "bly",
        "analog",
        "apolog",
        "logic",
        "geologi",
        "ologi",
    ]  # fmt: skip  (Lucene's own output)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("abcxyzAZ0189 _.,;:'-\t\n"), max_size=60))
def test_ascii_pattern_equals_the_unicode_patterns(text):
    """The ASCII fast path gives exactly the tokens of the general patterns."""
    lowered = java_lower(text)
    bmp, full = unicode_patterns()
    expected = bmp.findall(lowered)
    assert ASCII_PATTERN.findall(lowered) == expected == full.findall(lowered)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_analyzer_never_fails_and_bmp_equals_full_pattern(text):
    tokens = LuceneEnglishAnalyzer()(text)
    assert all(isinstance(t, str) and t for t in tokens)
    bmp, full = unicode_patterns()
    lowered = java_lower(text)
    if not analysis._SUPPLEMENTARY.search(lowered):
        assert bmp.findall(lowered) == full.findall(lowered)


#: Long runs that a backtracking tokenizer could re-scan from every character, ``n`` characters long.
HOSTILE_TEXTS: dict[str, Callable[[int], str]] = {
    "underscores": lambda n: "_" * n,
    "accent then underscores": lambda n: "é" + "_" * (n - 1),
    "letter dots": lambda n: "a." * (n // 2),
    "digit commas": lambda n: "1," * (n // 2),
    "combining accents": lambda n: "a." + "\u0301" * (n - 2),
    "emoji joiners": lambda n: "🙂\u200d" * (n // 2),
    "katakana underscores": lambda n: "ア_" * (n // 2),
    "quotes": lambda n: "'" * n,
    "one long word": lambda n: "x" * n,
}


def cpu_seconds(analyzer: LuceneEnglishAnalyzer, text: str, repeats: int = 5) -> float:
    """The least CPU time of this process over ``repeats`` analyses of ``text``."""
    best = math.inf
    for _ in range(repeats):
        start = time.process_time()
        analyzer(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("name", HOSTILE_TEXTS)
def test_hostile_inputs_are_linear(name):
    """A text 4 times longer takes under 8 times the CPU time (linear: about 4, measured 3.0 to 5.0;
    a tokenizer re-scanning from every character: about 16). Two times of one process compared, the
    least of 5 runs each; no time limit of its own."""
    analyzer, make = LuceneEnglishAnalyzer(), HOSTILE_TEXTS[name]
    analyzer("é")  # builds the non-ASCII patterns outside the timing
    short, long = cpu_seconds(analyzer, make(20_000)), cpu_seconds(analyzer, make(80_000))
    assert long < 8 * short, f"{name}: {long:.4f} s at 80,000 characters, {short:.4f} s at 20,000"


def test_analyzer_is_thread_safe():
    import concurrent.futures

    analyzer = LuceneEnglishAnalyzer()
    texts = [f"running jumps {i} technology's possibly" for i in range(400)]
    expected = [analyzer(t) for t in texts]
    analyzer._stems.clear()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert list(pool.map(analyzer, texts)) == expected


# ------------------------------------------------------------------ BM25

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A quick brown dog outpaces a quick red fox; quick quick.",
    "the of and",  # no token after stop words: not counted in N or avgdl, never returned
    "Lazy dogs sleep all day, and lazy cats sleep more than the lazy dogs do.",
    "",
    "Foxes and dogs: a field guide to foxes, dogs, wolves and jackals of the world, 2nd edition, 3.5 stars",
    # 58 tokens: Lucene scores it as 56 tokens long (its one-byte length keeps 4 bits of 58 - 24).
    " ".join(["dog fox wolf jackal hyena"] * 11) + " lazy quick red",
]


def lucene_length(n: int) -> int:
    """The length Lucene stores for a document of n tokens, stated directly: exact below 24,
    else 24 plus n - 24 cut to its 4 most significant bits (SmallFloat.intToByte4/byte4ToInt)."""
    if n < 24:
        return n
    rest = n - 24
    shift = max(0, rest.bit_length() - 4)
    return 24 + ((rest >> shift) << shift)


def lucene_bm25(documents, query, k1=0.9, b=0.4):
    """Lucene's BM25 written out in double precision: for each distinct query token t counted
    c times, c * idf * tf / (tf + k1 * (1 - b + b * L(d) / avgdl)) with idf = ln(1 + (N - df +
    0.5)/(df + 0.5)), L(d) Lucene's stored length, N and avgdl (of exact lengths) over the
    documents that have tokens."""
    analyzer = LuceneEnglishAnalyzer()
    docs = [analyzer(d) for d in documents]
    counted = [d for d in docs if d]
    n, avgdl = len(counted), sum(map(len, counted)) / len(counted)
    query_counts = {t: analyzer(query).count(t) for t in analyzer(query)}
    scores = []
    for doc in docs:
        total = 0.0
        for term, count in query_counts.items():
            tf = doc.count(term)
            if tf:
                df = sum(term in d for d in counted)
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                total += count * idf * tf / (tf + k1 * (1 - b + b * lucene_length(len(doc)) / avgdl))
        scores.append(total)
    return np.array(scores)


@pytest.fixture(scope="module")
def tiny():
    return Bm25Index.open(CORPUS)


@pytest.mark.parametrize("query", ["quick fox", "lazy dogs sleeping", "fox fox quick", "3.5 stars 2nd", "the",
                                   "wolves", "unknown words", "dog's", "hyena jackal jackal jackal red"])  # fmt: skip
def test_bm25_scores_equal_lucenes_formula(tiny, query):
    scores = tiny.scores([query])[0]
    assert scores.dtype == np.float32
    np.testing.assert_allclose(scores, lucene_bm25(CORPUS, query), rtol=2e-6, atol=1e-9)


def test_long_documents_are_scored_with_lucenes_one_byte_length(tiny):
    long_doc = tiny.analyzer(CORPUS[-1])
    assert len(long_doc) == 58 and lucene_length(58) == 56
    exact = lucene_bm25(CORPUS, "hyena", 0.9, 0.4)  # only the long document has "hyena"
    assert exact[-1] > 0 and exact[:-1].sum() == 0
    np.testing.assert_allclose(tiny.scores(["hyena"])[0][-1], exact[-1], rtol=2e-6)
    # The exact length would give a lower score (a longer document): the difference shows.
    n_docs, avgdl = 5, sum(len(tiny.analyzer(d)) for d in CORPUS) / 5
    idf = math.log(1 + (n_docs - 1 + 0.5) / 1.5)
    with_exact_length = idf * 11 / (11 + 0.9 * (0.6 + 0.4 * 58 / avgdl))
    assert abs(tiny.scores(["hyena"])[0][-1] - with_exact_length) > 1e-4


def test_bm25_with_other_parameters():
    index = Bm25Index.open(CORPUS, k1=1.2, b=0.75)
    np.testing.assert_allclose(index.scores(["quick lazy dog"])[0], lucene_bm25(CORPUS, "quick lazy dog", 1.2, 0.75),
                               rtol=2e-6)  # fmt: skip


def _wiki_passages() -> list[str]:
    if not WIKI18_SAMPLE.is_file():
        pytest.skip("the wiki-18 sample is not in ../shared/data/searchqa")
    with open(WIKI18_SAMPLE, encoding="utf-8") as handle:
        return [json.loads(line)["contents"] for line in handle if line.strip()]


def test_bm25_equals_lucenes_formula_on_real_passages():
    passages = _wiki_passages()[:300]
    index = Bm25Index.open(passages)
    assert sum(len(index.analyzer(p)) >= 40 for p in passages) > 250  # lengths Lucene stores inexactly
    for query in ["Evan Morris lobbyist Genentech", "river in Europe river", "the 1,299 U.S. dollars"]:
        np.testing.assert_allclose(index.scores([query])[0], lucene_bm25(passages, query), rtol=2e-6, atol=1e-9)


def test_bm25_equals_the_bm25s_library_where_lengths_are_exact():
    """Sentences of real passages (under 40 tokens, where Lucene's lengths are exact): the
    bm25s library's own Lucene scoring gives the same scores (up to float32)."""
    sentences = [s for p in _wiki_passages()[:200] for s in p.split(". ") if s.strip()]
    index = Bm25Index.open(sentences)
    short = np.array([0 < len(index.analyzer(s)) < 40 for s in sentences])
    assert short.sum() > 0.9 * len(sentences)
    sentences = [s for s, keep in zip(sentences, short, strict=True) if keep]
    index = Bm25Index.open(sentences)
    model = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    model.index(index.analyzer.many(sentences), show_progress=False)
    for query in ["Evan Morris lobbyist Genentech", "river in Europe", "the 1,299 U.S. dollars"]:
        expected = model.get_scores(index.analyzer(query))
        np.testing.assert_allclose(index.scores([query])[0], expected, rtol=1e-5, atol=1e-6)


def test_top_k_order_ties_and_zeros():
    documents = ["apple", "banana", "apple", "apple banana", "cherry", "apple", ""]
    index = Bm25Index.open(documents)
    hits, raw = index.search("apple", 10, anserini_scores=False)
    assert hits.tolist() == [0, 2, 5, 3]  # the three equal scores in document order, then the longer doc
    assert raw.dtype == np.float32 and raw[0] == raw[1] == raw[2] > raw[3] > 0
    # Reported as Anserini reports them: rounded to 4 decimals, a tie lowered by 1e-6 a place.
    hits_again, reported = index.search("apple", 10)
    assert hits_again.tolist() == hits.tolist()
    first = np.float32(round(float(raw[0]), 4))
    assert reported.tolist() == [first, first - np.float32(1e-6), first - np.float32(2e-6),
                                 np.float32(round(float(raw[3]), 4))]  # fmt: skip
    assert index.search("apple", 2)[0].tolist() == [0, 2]  # a tie at the cut: document order decides
    assert index.search("apple banana", 1)[0].tolist() == [3]
    assert index.search("cherry", 10)[0].tolist() == [4]  # only positive scores
    assert index.search("durian", 10)[0].tolist() == []
    assert index.search("", 10)[0].tolist() == []
    with pytest.raises(ValueError):
        index.search("apple", 0)


def test_ties_are_broken_by_id_string(tmp_path):
    documents = ["apple", "banana", "apple", "apple banana", "cherry", "apple", ""]
    ids = ["d2", "d1", "d10", "d3", "d0", "d05", "d4"]  # string order: d0 < d05 < d1 < d10 < d2 < d3 < d4
    by_ids = Bm25Index.open(documents, ids=ids)
    by_pairs = Bm25Index.open(list(zip(ids, documents, strict=True)), tmp_path / "index", mmap=True)
    for index in (by_ids, by_pairs):
        assert index.search("apple", 10)[0].tolist() == [5, 2, 0, 3]  # d05, d10, d2, then the longer doc
        assert index.search("apple", 1)[0].tolist() == [5]
    assert by_ids.ids == ids and by_pairs.ids is None
    reloaded = Bm25Index.open(lambda: pytest.fail("read the documents"), tmp_path / "index")
    assert reloaded.search("apple", 10)[0].tolist() == [5, 2, 0, 3]
    with pytest.raises(ValueError, match="not both"):
        Bm25Index.open(list(zip(ids, documents, strict=True)), ids=ids)


def test_repeated_query_terms_weigh_their_count():
    """Anserini's bag of words: a term repeated c times is one clause of weight c * idf,
    computed in float32 from the stored tf denominators (not c times the stored score)."""
    documents = [" ".join(["wolf"] * n + ["fox"] * (n % 3)) for n in range(1, 60)] + ["moose"]
    index = Bm25Index.open(documents)
    for query in ["wolf wolf", "wolf fox wolf fox fox", "wolf " * 7]:
        np.testing.assert_allclose(index.scores([query])[0], lucene_bm25(documents, query), rtol=2e-6)
    once, twice = index.scores(["wolf", "wolf wolf"])
    np.testing.assert_allclose(twice, 2 * once, rtol=1e-6)
    assert index.clauses(["wolf fox wolf zzz", ""]) == [[(index.vocab["wolf"], 2), (index.vocab["fox"], 1)], []]


def test_batch_equals_one_by_one(monkeypatch):
    documents = [f"word{i % 7} common {'rare' if i % 13 == 0 else ''} item{i}" for i in range(300)]
    index = Bm25Index.open(documents)
    queries = ["word3 common", "rare", "item42 word1", "", "nothing", "word3 common", "common rare rare"]
    single = [index.search(q, 5) for q in queries]
    for cells in (1 << 17, 700, 1):  # one chunk, chunks of two queries, one query per chunk
        monkeypatch.setattr(bm25_module, "SCORE_CELLS_PER_CHUNK", cells)
        batch = index.top_k(queries, 5)
        for (hits, scores), (one_hits, one_scores) in zip(batch, single, strict=True):
            assert hits.tolist() == one_hits.tolist() and scores.tolist() == one_scores.tolist()
        np.testing.assert_array_equal(index.scores(queries), np.stack([index.scores([q])[0] for q in queries]))
    assert index.top_k([], 3) == [] and index.scores([]).shape == (0, 300)


def test_index_is_cached_reused_and_invalidated(tmp_path):
    calls = []

    def documents():
        calls.append(1)
        return CORPUS

    analyzer = LuceneEnglishAnalyzer()
    folder = index_dir_for(tmp_path, documents_fingerprint(["a"], ["x"]), analyzer)
    first = Bm25Index.open(documents, folder, analyzer=analyzer)
    stamp = (folder / "seed_index.json").stat().st_mtime_ns
    second = Bm25Index.open(documents, folder, analyzer=analyzer, mmap=True)
    assert len(calls) == 1  # loaded, not rebuilt: the documents were not even read
    assert (folder / "seed_index.json").stat().st_mtime_ns == stamp
    np.testing.assert_array_equal(first.scores(["quick dog"]), second.scores(["quick dog"]))
    assert not [p for p in tmp_path.iterdir() if p != folder]  # no temporary folder left behind
    # The folder name covers the documents' key, the analyzer and the parameters.
    names = {
        folder,
        index_dir_for(tmp_path, documents_fingerprint(["a"], ["y"]), analyzer),
        index_dir_for(tmp_path, documents_fingerprint(["a"], ["x"]), LuceneEnglishAnalyzer(stopwords=None)),
        index_dir_for(tmp_path, documents_fingerprint(["a"], ["x"]), analyzer, k1=1.2),
    }
    assert len(names) == 4
    # Same folder, other parameters or ids, or a broken index: rebuilt in place.
    Bm25Index.open(documents, folder, analyzer=analyzer, k1=1.2)
    assert len(calls) == 2
    ids = [f"d{i}" for i in range(len(CORPUS))]
    with_ids = Bm25Index.open(documents, folder, analyzer=analyzer, ids=ids)
    assert len(calls) == 3 and with_ids.ids == ids
    Bm25Index.open(documents, folder, analyzer=analyzer, ids=ids)
    assert len(calls) == 3
    Bm25Index.open(documents, folder, analyzer=analyzer, ids=ids[::-1])
    assert len(calls) == 4
    (folder / "seed_index.json").unlink()
    rebuilt = Bm25Index.open(documents, folder, analyzer=analyzer)
    assert len(calls) == 5 and rebuilt.num_docs == len(CORPUS)
    assert json.loads((folder / "seed_index.json").read_text())["format"] == bm25_module.INDEX_FORMAT
    # An index of an older format (exact lengths, document-order ties) is rebuilt.
    meta = json.loads((folder / "seed_index.json").read_text())
    (folder / "seed_index.json").write_text(json.dumps({**meta, "format": 2}))
    Bm25Index.open(documents, folder, analyzer=analyzer)
    assert len(calls) == 6
    with pytest.raises(ValueError, match=f"2 ids for {len(CORPUS)} documents"):
        Bm25Index.open(CORPUS, tmp_path / "other", ids=["a", "b"])


def test_fingerprint_and_empty_corpus():
    assert documents_fingerprint(["a", "b"], ["x", "y"]) != documents_fingerprint(["b", "a"], ["x", "y"])
    assert documents_fingerprint(["a"], ["x"]) == documents_fingerprint(["a"], ["x"])
    empty = Bm25Index.open(["the", ""])
    assert empty.num_docs == 2 and empty.search("the", 3)[0].tolist() == []
    assert empty.scores(["the", "x"]).shape == (2, 2) and not empty.scores(["the"]).any()
    none = Bm25Index.open([])
    assert none.num_docs == 0 and none.top_k(["x", ""], 3)[0][0].tolist() == []


# ------------------------------------------------------------------ Lucene itself (optional)


def _pyserini_available() -> bool:
    import importlib.util

    have = all(importlib.util.find_spec(m) is not None for m in ("pyserini", "jnius"))
    return have and bool(shutil.which("java") or os.environ.get("JAVA_HOME"))


needs_pyserini = pytest.mark.skipif(not _pyserini_available(), reason="needs pyserini==0.25.0, pyjnius and a JDK")


def _lucene_analyzer():
    from seed_envs.retrieval.pyserini import openai_placeholder

    with openai_placeholder():
        from pyserini.analysis import Analyzer, get_lucene_analyzer
    return Analyzer(get_lucene_analyzer())


@needs_pyserini
@pytest.mark.slow
def test_analyzer_equals_lucenes_on_real_and_generated_text():
    lucene, ours = _lucene_analyzer(), LuceneEnglishAnalyzer()
    texts = [text for text, _ in ANALYZER_CASES]
    if WIKI18_SAMPLE.is_file():
        with open(WIKI18_SAMPLE, encoding="utf-8") as handle:
            texts += [json.loads(line)["contents"] for line in handle if line.strip()]
    rng = random.Random(0)
    alphabet = (
        [chr(c) for c in range(0x20, 0x7F)] * 20 + list("aeiouy sS'.,") * 20 + [chr(c) for c in range(0xA0, 0x250)]
        + [chr(c) for c in range(0x370, 0x460)] + [chr(c) for c in range(0x2000, 0x2070)]
        + list("東京ひらがなアイスภาษาไทย한국어🙂👍🏽❤️✅©™★→\u200d\ufe0f\u0301\u00ad\u0130\u03a3") * 3
    )  # fmt: skip
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 40))) for _ in range(3000)]
    mismatches = [(text, lucene.analyze(text), ours(text)) for text in texts if lucene.analyze(text) != ours(text)]
    assert not mismatches, mismatches[:5]
