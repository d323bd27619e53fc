"""BM25 with ``bm25s``, the in-process default retriever: Anserini's ranking without Java.

A thin adapter over :class:`seed_envs.retrieval.bm25_index.Bm25Index` (shared with WebShop's
search): Lucene 9's BM25 in float32 with Pyserini's default parameters k1 = 0.9 and b = 0.4,

    score(q, d) = Σ_{t ∈ q} c(t) · idf(t) · tf(t, d) / (tf(t, d) + k1 · (1 − b + b · L(d) / avgdl))
    idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5)),

(c(t): the count of t in the query; L(d): Lucene's one-byte length of d, exact below 40
tokens) over the tokens of Lucene's English analyzer (:mod:`seed_envs.retrieval.analyzer`:
Unicode word segmentation, possessives removed, Lucene's 33 stop words, Porter stemming with
Lucene's departures), which gives the tokens Pyserini's own analyzer gives. Passages are
ranked as Anserini ranks them (score, then passage id string) and reported with Anserini's
scores (4 decimals, ties lowered by 1e-6 a place): on the wiki-18 sample the results equal
Pyserini's, scores included.

The index is built once per corpus file and cached on disk under
``<seed cache>/searchqa/index/bm25s-<key>/``; ``key`` covers the file's path, size and
modification time, the analyzer and the parameters, so an edited corpus gets a new index.
Passages with score 0 (no query term in common) are not returned, as in Lucene.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from seed_envs.extras import install_hint
from seed_envs.retrieval.analyzer import LUCENE_STOP_WORDS, LuceneEnglishAnalyzer
from seed_envs.retrieval.bm25_index import Bm25Index, index_dir_for, require_bm25s
from seed_envs.searchqa.retrievers.base import Doc, Retriever, RetrieverError
from seed_envs.searchqa.retrievers.corpus import Corpus, file_fingerprint, index_root

__all__ = ["Bm25sRetriever"]


def _stopword_list(stopwords: str | Sequence[str] | None) -> list[str]:
    """``"en"``/``"english"`` -> Lucene's 33 English stopwords; ``None`` -> none."""
    if stopwords is None:
        return []
    if isinstance(stopwords, str):
        if stopwords not in ("en", "english"):
            raise ValueError(f"stopwords must be 'en', None or a list of words, got {stopwords!r}")
        return sorted(LUCENE_STOP_WORDS)
    return [str(word) for word in stopwords]


class Bm25sRetriever(Retriever):
    """Lucene-style BM25 over a jsonl corpus, index cached on disk."""

    name = "bm25s"

    def __init__(
        self,
        corpus_path: str | os.PathLike[str],
        *,
        k1: float = 0.9,
        b: float = 0.4,
        stemmer: str | None = "porter",
        stopwords: str | Sequence[str] | None = "en",
        cache_root: str | os.PathLike[str] | None = None,
    ) -> None:
        try:
            require_bm25s()
            self.analyzer = LuceneEnglishAnalyzer(_stopword_list(stopwords), stemmer)
        except ImportError as error:
            raise ImportError(f"the bm25s retriever needs `bm25s` and `PyStemmer`: {install_hint('search')}") from error
        self.corpus_path = Path(corpus_path)
        self.k1, self.b = k1, b
        self.stopwords = sorted(self.analyzer.stopwords)
        if not self.corpus_path.is_file():
            Corpus(self.corpus_path)  # raises MissingDataError naming the file
        root = Path(cache_root) if cache_root is not None else index_root()
        self.index_dir = index_dir_for(root, file_fingerprint(self.corpus_path), self.analyzer, k1, b)
        self.corpus = Corpus(self.corpus_path, offsets_cache=self.index_dir.with_suffix(".offsets.npy"))
        if not len(self.corpus):
            raise RetrieverError(f"corpus {self.corpus_path} has no passages")
        # Memory-mapped: the vector workers of a machine share one copy of the score matrix.
        self.index = Bm25Index.open(self.corpus.items, self.index_dir, analyzer=self.analyzer, k1=k1, b=b, mmap=True)
        self.model = self.index.model
        self.num_docs = self.index.num_docs
        if self.num_docs != len(self.corpus):
            raise RetrieverError(
                f"index {self.index_dir} has {self.num_docs} passages but {self.corpus_path} has "
                f"{len(self.corpus)}; delete the index folder to rebuild it"
            )

    def tokenize(self, queries: list[str]) -> list[list[str]]:
        """Queries as lists of analysed tokens (Lucene's English analyzer)."""
        return self.index.tokenize(queries)

    def scores(self, queries: list[str]) -> np.ndarray:
        """Lucene's float32 BM25 score of every passage for each query, shape (len(queries), num_docs)."""
        return self.index.scores(queries)

    def _search(self, queries: list[str], topk: int) -> list[list[Doc]]:
        return [
            [self.corpus.doc(i, score) for i, score in zip(hits.tolist(), scores.tolist(), strict=True)]
            for hits, scores in self.index.top_k(queries, topk)
        ]

    def close(self) -> None:
        self.corpus.close()
