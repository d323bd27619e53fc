"""BM25 as Anserini/Pyserini computes and ranks it, over a fixed list of documents, cached on disk.

Scores are Lucene 9's ``BM25Similarity`` in float32, with Anserini's default parameters
k1 = 0.9 and b = 0.4 (the arithmetic is written out in :mod:`seed_envs.retrieval.lucene`):

    score(q, d) = Σ_{t ∈ q} w(t) − w(t) / (1 + tf(t, d) · cache[intToByte4(|d|)])
    w(t) = count(t in q) · ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
    cache[j] = 1 / (k1 · (1 − b + b · byte4ToInt(j) / avgdl)),  avgdl = Σ_d |d| / N

that is ``idf · tf / (tf + k1 · (1 − b + b · |d| / avgdl))`` with Lucene's one-byte document
length (exact below 40 tokens, then its 4 leading bits above 24) and Lucene's float32
operations. N and avgdl count only documents that have at least one token; a document
without tokens is never returned. Anserini's query is a bag of words: each distinct token once,
weighted by its count in the query.

Ranking is Anserini's (``SimpleSearcher``): the documents with a positive score, by float32
score descending, then by document id string ascending (document order when no ids are
given); the scores reported with them are Anserini's (rounded to 4 decimals, and a run of
scores within 1e-4 of each other lowered by 1e-6 per place, ``ScoreTiesAdjusterReranker``).
``top_k(..., anserini_scores=False)`` reports Lucene's float32 scores instead, in the same order.

Tokens come from :class:`~seed_envs.retrieval.analyzer.LuceneEnglishAnalyzer`. The index
holds every (term, document) score for a query weight of 1 in a CSC matrix (one column per
vocabulary term), in ``bm25s``'s layout and files (``model`` is a ``bm25s.BM25`` over it), plus
each cell's ``1 + tf · cache[...]`` and each term's idf for query terms that occur more than
once. A query's scores are the sum of its terms' columns (added in double, rounded to float32
once, as Lucene adds its clauses), for a whole batch with one ``np.bincount``; the top k are
picked among the scores of at least half the best one when there are k of them.

The index lives in a folder (``index_dir``); :func:`index_dir_for` names one from a cache
folder and a key that identifies the documents. A folder is written under a temporary name
and renamed into place, so concurrent builders never see half an index.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seed_envs.files import staged_dir
from seed_envs.retrieval import lucene
from seed_envs.retrieval.analyzer import LuceneEnglishAnalyzer, split_words

K1 = 0.9
B = 0.4
#: Bumped whenever the index layout or its contents change.
INDEX_FORMAT = 3
#: Scores of at most this many (query, document) cells are held at once while searching
#: (1 MiB of float64: small enough to stay in cache while it is summed and partitioned).
SCORE_CELLS_PER_CHUNK = 1 << 17
_META = "seed_index.json"
_IDS = "ids.json"
_IDF = "lucene_idf.npy"
_DENOMINATORS = "lucene_tf_denominators.npy"
_ID_ORDER = "id_order.npy"

Documents = Iterable[str] | Iterable[tuple[str, str]]


def require_bm25s():
    """The ``bm25s`` module, or an ImportError that says how to install it."""
    try:
        import bm25s
    except ImportError as error:
        raise ImportError("BM25 search needs `bm25s` and `PyStemmer`: pip install bm25s PyStemmer") from error
    return bm25s


def documents_fingerprint(ids: Sequence[str], documents: Sequence[str]) -> str:
    """A short hash of (id, document) pairs, in order: a cache key for an index of them."""
    digest = hashlib.sha256()
    for doc_id, document in zip(ids, documents, strict=True):
        digest.update(str(doc_id).encode("utf-8", "replace"))
        digest.update(b"\x1f")
        digest.update(document.encode("utf-8", "replace"))
        digest.update(b"\x1e")
    return digest.hexdigest()[:20]


def index_params(analyzer: LuceneEnglishAnalyzer, k1: float, b: float) -> dict[str, Any]:
    """What, besides the documents, decides an index's contents."""
    return {"format": INDEX_FORMAT, "analyzer": analyzer.signature, "k1": float(k1), "b": float(b)}


def index_dir_for(
    cache_root: str | os.PathLike[str],
    key: str,
    analyzer: LuceneEnglishAnalyzer | None = None,
    k1: float = K1,
    b: float = B,
) -> Path:
    """``<cache_root>/bm25s-<hash>``, the hash covering ``key`` (the documents) and the parameters."""
    params = index_params(analyzer or LuceneEnglishAnalyzer(), k1, b)
    digest = hashlib.sha256(json.dumps([key, params], sort_keys=True).encode()).hexdigest()[:16]
    return Path(cache_root) / f"bm25s-{digest}"


def id_order(ids: Sequence[str]) -> np.ndarray | None:
    """Each document's rank in id-string order (equal ids: document order), or None when the
    ids are already in that order (then document order is the id order)."""
    ranks = np.empty(len(ids), dtype=np.int64)
    ranks[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    if np.array_equal(ranks, np.arange(len(ids))):
        return None
    return ranks.astype(np.int32 if len(ids) < 2**31 else np.int64)


class Bm25Index:
    """A BM25 index over documents 0..N-1: scores and top-k for one query or a batch.

    Build or load one with :meth:`open`. ``model`` is a ``bm25s.BM25`` over the same score
    matrix; ``ids`` are the ids given to :meth:`open` as a list (None otherwise).
    """

    def __init__(
        self,
        model: Any,
        analyzer: LuceneEnglishAnalyzer,
        index_dir: Path | None = None,
        ids: list[str] | None = None,
        *,
        idf: np.ndarray,
        denominators: np.ndarray,
        tie_keys: np.ndarray | None = None,
    ) -> None:
        self.model = model
        self.analyzer = analyzer
        self.index_dir = index_dir
        self.ids = ids
        self.num_docs = int(model.scores["num_docs"])
        self.vocab: dict[str, int] = model.vocab_dict
        # Plain ndarray views of memory-mapped arrays: slicing an np.memmap costs more.
        self.idf = np.asarray(idf)
        self.tie_keys = None if tie_keys is None else np.asarray(tie_keys)
        self._data = np.asarray(model.scores["data"])
        self._indices = np.asarray(model.scores["indices"])
        self._indptr = np.asarray(model.scores["indptr"])
        self._denominators = np.asarray(denominators)

    # ------------------------------------------------------------- building and loading
    @classmethod
    def open(
        cls,
        documents: Documents | Callable[[], Documents],
        index_dir: str | os.PathLike[str] | None = None,
        *,
        ids: Sequence[str] | None = None,
        analyzer: LuceneEnglishAnalyzer | None = None,
        k1: float = K1,
        b: float = B,
        mmap: bool = False,
    ) -> Bm25Index:
        """The index of ``documents``: loaded from ``index_dir`` when it holds one built with
        the same analyzer, k1, b (and ``ids``, when given), else built and saved there.

        ``documents`` are texts, or ``(id, text)`` pairs; it may be a callable that returns
        them, so a cached index never reads them. Ids (``ids`` or the pairs') order documents
        of equal score, as Anserini does; without them document order does. Without
        ``index_dir`` the index is built in memory only. ``mmap`` maps the saved score arrays
        instead of reading them (shared between processes by the OS).
        """
        analyzer = analyzer or LuceneEnglishAnalyzer()
        params = index_params(analyzer, k1, b)
        ids = None if ids is None else [str(i) for i in ids]
        if index_dir is None:
            built = _build(_documents(documents), analyzer, k1, b, ids)
            return cls(built.model, analyzer, None, ids, **built.arrays)
        index_dir = Path(index_dir)
        if not _is_current(index_dir, params, ids):
            built = _build(_documents(documents), analyzer, k1, b, ids)
            _save(built, index_dir, params, ids)
        return cls(_load_model(index_dir, mmap), analyzer, index_dir, ids, **_load_arrays(index_dir, mmap))

    # ------------------------------------------------------------- scoring
    def tokenize(self, queries: Sequence[str]) -> list[list[str]]:
        """Each query's analysed tokens (the analyzer's output, unknown tokens included)."""
        return [self.analyzer(query) for query in queries]

    def token_ids(self, queries: Sequence[str]) -> list[np.ndarray]:
        """Each query's vocabulary ids; tokens absent from the documents are dropped."""
        vocab = self.vocab
        return [
            np.fromiter((vocab[t] for t in self.analyzer(query) if t in vocab), dtype=np.int64) for query in queries
        ]

    def clauses(self, queries: Sequence[str]) -> list[list[tuple[int, int]]]:
        """Each query as Anserini's bag of words: ``(vocabulary id, count in the query)`` per
        distinct known token, in order of first occurrence."""
        vocab, result = self.vocab, []
        for query in queries:
            counts: dict[int, int] = {}
            for token in self.analyzer(query):
                term = vocab.get(token)
                if term is not None:
                    counts[term] = counts.get(term, 0) + 1
            result.append(list(counts.items()))
        return result

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """Lucene's float32 BM25 score of every document for each query, shape ``(len(queries), num_docs)``."""
        rows = self.clauses(queries)
        if not rows:
            return np.zeros((0, self.num_docs), dtype=np.float32)
        return np.concatenate([self._score_rows(chunk).astype(np.float32) for chunk in self._chunks(rows)])

    def top_k(
        self, queries: Sequence[str], k: int, *, anserini_scores: bool = True
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each query, ``(documents, scores)`` of its best ``k`` documents with a positive
        score, ranked as Anserini ranks them (float32 score descending, then id); the scores
        are Anserini's reported ones, or Lucene's float32 ones when ``anserini_scores`` is False."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        results = []
        for chunk in self._chunks(self.clauses(queries)):
            for row in self._score_rows(chunk):
                hits, values = _top_of_row(row, k, self.tie_keys)
                results.append((hits, lucene.anserini_scores(values) if anserini_scores else values))
        return results

    def search(self, query: str, k: int, *, anserini_scores: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``top_k([query], k)[0]``."""
        return self.top_k([query], k, anserini_scores=anserini_scores)[0]

    def _chunks(self, rows: list[list[tuple[int, int]]]) -> list[list[list[tuple[int, int]]]]:
        size = max(1, SCORE_CELLS_PER_CHUNK // max(1, self.num_docs))
        return [rows[i : i + size] for i in range(0, len(rows), size)]

    def _score_rows(self, rows: list[list[tuple[int, int]]]) -> np.ndarray:
        """Scores (float64 sums of float32 clause scores) for a few queries' clauses, at once:
        the sum of each term's CSC column; a term counted c > 1 times is scored with weight c · idf."""
        data, indices, indptr, n = self._data, self._indices, self._indptr, self.num_docs
        cells, weights = [], []
        for row, clauses in enumerate(rows):
            for term, count in clauses:
                start, end = indptr[term], indptr[term + 1]
                cells.append(indices[start:end] + row * n if row else indices[start:end])
                if count == 1:
                    weights.append(data[start:end])
                else:
                    weight = lucene.clause_weight(count, self.idf[term])
                    weights.append(lucene.term_scores(weight, self._denominators[start:end]))
        if not cells:
            return np.zeros((len(rows), n))
        flat = np.bincount(
            np.concatenate(cells).astype(np.int64, copy=False),
            weights=np.concatenate(weights),
            minlength=len(rows) * n,
        )
        return flat.reshape(len(rows), n)


def _top_of_row(row: np.ndarray, k: int, tie_keys: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` positive entries of ``row`` (BM25 scores: none is negative) as float32:
    value descending, then ``tie_keys`` (default: index) ascending.

    Candidates are first the entries of at least half the best score (usually enough, and far
    fewer than all positive ones); all positive entries when fewer than ``k`` are. Of them, all
    that may round to the k-th largest float32 or above are kept: float32 rounding moves a value
    by at most 2^-24 of it, and the float32 below lies within 2^-23 of it.
    """
    best = float(row.max()) if row.size else 0.0
    if best <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    floor = best / 2
    hits = (row >= floor).nonzero()[0]
    if hits.size < k:
        floor = np.finfo(np.float64).tiny
        hits = (row > 0).nonzero()[0]
    if hits.size >= k:
        values = row[hits]
        kth = np.partition(values, hits.size - k)[hits.size - k] if hits.size > k else values.min()
        low = float(kth) * (1 - 2**-22)
        if low < floor:  # entries below the first cut may round to the k-th float32
            hits = (row >= low).nonzero()[0]
        elif hits.size > k:
            hits = hits[values >= low]
    values = row[hits].astype(np.float32)
    order = lucene.lucene_order(values, hits if tie_keys is None else tie_keys[hits])[:k]
    return hits[order], values[order]


def _documents(documents: Documents | Callable[[], Documents]) -> Documents:
    return documents() if callable(documents) else documents


class _Built:
    """A freshly built index: the ``bm25s.BM25`` container and the arrays beside it."""

    def __init__(self, model: Any, arrays: dict[str, np.ndarray | None]) -> None:
        self.model = model
        self.arrays = arrays


def _texts_and_ids(documents: Documents, ids: list[str] | None) -> tuple[Iterator[str], list[str] | None]:
    """The texts of ``documents`` and the ids that order ties: ``ids``, or the pairs' ids
    (filled in as the texts are read), or None."""
    iterator = iter(documents)
    first = next(iterator, None)
    if first is None:
        return iter(()), ids
    items = itertools.chain([first], iterator)
    if isinstance(first, str):
        return items, ids  # type: ignore[return-value]
    if ids is not None:
        raise ValueError("give ids either as (id, text) pairs or as `ids`, not both")
    pair_ids: list[str] = []

    def texts() -> Iterator[str]:
        for doc_id, text in items:  # type: ignore[misc]
            pair_ids.append(str(doc_id))
            yield text

    return texts(), pair_ids


def _build(documents: Documents, analyzer: LuceneEnglishAnalyzer, k1: float, b: float, ids: list[str] | None) -> _Built:
    """Index the documents with Lucene's statistics and float32 arithmetic (see the module docstring)."""
    bm25s = require_bm25s()
    vocab: dict[str, int] = {"": 0}  # bm25s's empty token, so its own query API takes any query
    memo: dict[str, int] = {}  # word -> its term's vocabulary id (>= 1), or -1 for a stop word

    def term_id(word: str) -> int:
        term = analyzer.term(word)
        memo[word] = -1 if term is None else vocab.setdefault(term, len(vocab))
        return memo[word]

    known = memo.get
    texts, tie_ids = _texts_and_ids(documents, ids)
    tokens, lengths, nonempty, count = array("q"), array("q"), array("q"), 0
    for position, document in enumerate(texts):
        count = position + 1
        token_ids = [i for word in split_words(document) if (i := known(word) or term_id(word)) > 0]
        if token_ids:
            tokens.extend(token_ids)
            lengths.append(len(token_ids))
            nonempty.append(position)
    if tie_ids is not None and len(tie_ids) != count:
        raise ValueError(f"{len(tie_ids)} ids for {count} documents")

    lengths_np = np.frombuffer(lengths, dtype=np.int64) if lengths else np.zeros(0, dtype=np.int64)
    docs_np = np.frombuffer(nonempty, dtype=np.int64) if nonempty else np.zeros(0, dtype=np.int64)
    # One key per token, term-major: sorting the keys gives the CSC order (term, then document).
    keys = np.frombuffer(tokens, dtype=np.int64) * max(count, 1) + np.repeat(docs_np, lengths_np)
    keys, tf = np.unique(keys, return_counts=True)
    terms, cell_docs = np.divmod(keys, max(count, 1))
    indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=len(vocab)), out=indptr[1:])

    norms = np.zeros(count, dtype=np.uint8)
    norms[docs_np] = lucene.int_to_byte4(lengths_np)
    avgdl = lucene.average_length(int(lengths_np.sum()), len(lengths_np))
    norm_inverse = lucene.norm_inverse_cache(avgdl, k1, b)
    idf = lucene.idf(np.diff(indptr), len(lengths_np))
    denominators = lucene.tf_denominators(tf, norm_inverse[norms[cell_docs]])
    data = lucene.term_scores(idf[terms], denominators)

    model = bm25s.BM25(k1=k1, b=b, method="lucene")
    model.vocab_dict = vocab
    model.unique_token_ids_set = set(vocab.values())
    model.nonoccurrence_array = None  # Lucene's BM25 gives absent terms no score
    model.scores = {
        "data": data,
        "indices": cell_docs.astype(np.int32 if count < 2**31 else np.int64),
        "indptr": indptr,
        "num_docs": count,
    }
    arrays = {"idf": idf, "denominators": denominators, "tie_keys": None if tie_ids is None else id_order(tie_ids)}
    return _Built(model, arrays)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _is_current(index_dir: Path, params: dict[str, Any], ids: list[str] | None) -> bool:
    """Whether ``index_dir`` holds a complete index with these parameters (and ids)."""
    meta = _read_json(index_dir / _META)
    if not isinstance(meta, dict) or {k: meta.get(k) for k in params} != params:
        return False
    return ids is None or _read_json(index_dir / _IDS) == ids


def _save(built: _Built, index_dir: Path, params: dict[str, Any], ids: list[str] | None) -> None:
    """Write the index under a temporary name, then rename it to ``index_dir`` (atomic).

    An index of another format or other ids there is replaced; one that another process
    has just saved with these parameters is kept.
    """
    with staged_dir(index_dir, is_complete=lambda d: _is_current(d, params, ids), replace=True) as tmp:
        built.model.save(str(tmp), show_progress=False)
        np.save(tmp / _IDF, built.arrays["idf"])
        np.save(tmp / _DENOMINATORS, built.arrays["denominators"])
        if built.arrays["tie_keys"] is not None:
            np.save(tmp / _ID_ORDER, built.arrays["tie_keys"])
        if ids is not None:
            (tmp / _IDS).write_text(json.dumps(ids), encoding="utf-8")
        meta = {**params, "num_docs": int(built.model.scores["num_docs"])}
        (tmp / _META).write_text(json.dumps(meta, sort_keys=True), encoding="utf-8")


def _load_model(index_dir: Path, mmap: bool):
    return require_bm25s().BM25.load(str(index_dir), mmap=mmap)


def _load_arrays(index_dir: Path, mmap: bool) -> dict[str, np.ndarray | None]:
    """The arrays beside the score matrix; the denominators (read only for query terms that
    occur more than once) are always memory-mapped."""
    id_order_path = index_dir / _ID_ORDER
    return {
        "idf": np.load(index_dir / _IDF),
        "denominators": np.load(index_dir / _DENOMINATORS, mmap_mode="r"),
        "tie_keys": np.load(id_order_path, mmap_mode="r" if mmap else None) if id_order_path.exists() else None,
    }
