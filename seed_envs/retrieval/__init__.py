"""Lexical retrieval shared by the envs that search text (WebShop's product search, Search QA).

- :mod:`~seed_envs.retrieval.analyzer`: Lucene's English analyzer (the tokens Anserini makes).
- :mod:`~seed_envs.retrieval.bm25_index`: a BM25 index that scores and ranks as Anserini does
  (in ``bm25s``'s layout), cached on disk, with batched scoring.
- :mod:`~seed_envs.retrieval.lucene`: Lucene's float32 BM25 arithmetic, its one-byte document
  lengths, and Anserini's score-tie rule.
- :mod:`~seed_envs.retrieval.pyserini`: the same through Pyserini/Lucene itself (optional, Java).

``bm25s``, ``PyStemmer`` and ``pyserini`` are imported only when used.
"""

from seed_envs.retrieval.analyzer import LUCENE_STOP_WORDS, LuceneEnglishAnalyzer
from seed_envs.retrieval.bm25_index import Bm25Index, documents_fingerprint, index_dir_for

__all__ = ["LUCENE_STOP_WORDS", "Bm25Index", "LuceneEnglishAnalyzer", "documents_fingerprint", "index_dir_for"]
