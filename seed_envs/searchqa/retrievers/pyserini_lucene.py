"""Lucene BM25 through Pyserini (Anserini, Java): the engine Search-R1's BM25 server uses.

A thin adapter over :mod:`seed_envs.retrieval.pyserini` (shared with WebShop), whose
docstring says what works: ``pyserini==0.25.0`` on Java 11+ (Java 17 on Debian 12), the
``--no-deps`` install, and the placeholder ``OPENAI_API_KEY`` Pyserini 0.25 needs at import.

The index is built from the corpus jsonl with Pyserini's indexer (``JsonCollection``,
raw documents stored) and cached under ``<seed cache>/searchqa/index/pyserini-<key>/``;
``index_dir=`` uses an existing Lucene index instead (e.g. Search-R1's wiki-18 BM25 index).
Scores: Lucene BM25 with k1 = 0.9 and b = 0.4 (Pyserini's defaults).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from seed_envs.core import stable_seed
from seed_envs.retrieval.pyserini import (
    INSTALL_HINT,
    LuceneBm25,
    LuceneSearchError,
    build_lucene_index,
    is_lucene_index,
    lucene_searcher_class,
)
from seed_envs.searchqa.retrievers.base import Doc, Retriever, RetrieverError
from seed_envs.searchqa.retrievers.corpus import Corpus, file_fingerprint, index_root

__all__ = ["INSTALL_HINT", "PyseriniRetriever"]


class PyseriniRetriever(Retriever):
    """BM25 with Lucene, via Pyserini's ``LuceneSearcher``."""

    name = "pyserini"

    def __init__(
        self,
        corpus_path: str | os.PathLike[str],
        *,
        index_dir: str | os.PathLike[str] | None = None,
        k1: float = 0.9,
        b: float = 0.4,
        threads: int = 1,
        cache_root: str | os.PathLike[str] | None = None,
    ) -> None:
        lucene_searcher_class()  # a clear ImportError before any indexing
        self.corpus_path = Path(corpus_path)
        self.corpus = Corpus(self.corpus_path)  # raises MissingDataError naming the file
        self.threads = max(1, int(threads))
        if index_dir is None:
            if cache_root is None:
                cache_root = index_root()
            key = stable_seed(file_fingerprint(self.corpus_path), "pyserini-0.25-jsoncollection")
            index_dir = Path(cache_root) / f"pyserini-{key % 16**12:012x}"
            if not is_lucene_index(index_dir):
                try:
                    build_lucene_index(self.corpus_path, index_dir, threads=self.threads)
                except LuceneSearchError as error:
                    raise RetrieverError(str(error)) from None
        self.index_dir = Path(index_dir)
        self.lucene = LuceneBm25(self.index_dir, k1, b)
        self._ids: dict[str, int] | None = None

    def _contents(self, docid: str) -> Doc | None:
        raw = self.lucene.raw(docid)
        if raw:
            record = json.loads(raw)
            if isinstance(record.get("contents"), str):
                return Doc(str(record.get("id", docid)), record["contents"])
        if self._ids is None:  # an index without raw documents: look the id up in the corpus
            self._ids = {docid: i for i, (docid, _) in enumerate(self.corpus.items())}
        index = self._ids.get(docid)
        return None if index is None else self.corpus.doc(index)

    def _hits_to_docs(self, hits: list[tuple[str, float]]) -> list[Doc]:
        docs = []
        for docid, score in hits:
            doc = self._contents(docid)
            if doc is not None:
                docs.append(Doc(doc.id, doc.contents, score))
        return docs

    def _search(self, queries: list[str], topk: int) -> list[list[Doc]]:
        try:
            batch = self.lucene.batch_search(queries, topk, threads=self.threads)
        except LuceneSearchError as error:
            raise RetrieverError(str(error)) from None
        return [self._hits_to_docs(hits) for hits in batch]

    def close(self) -> None:
        self.corpus.close()
