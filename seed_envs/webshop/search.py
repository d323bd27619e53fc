"""Product search: one interface, two back ends, one index per catalog shared by every env.

Documents are built as the benchmark builds them: title, description, first feature and
an option summary (``"<name>: <v1>, <v2>, and <name>: ..."``), joined with spaces and
lower-cased. Ranking is BM25 with Lucene's parameters (k1 0.9, b 0.4).

``bm25s`` (default)
    :class:`seed_envs.retrieval.bm25_index.Bm25Index`: Anserini's BM25 ranking in-process: Lucene's
    float32 BM25 with its one-byte document lengths, over the tokens of Lucene's English
    analyzer (:mod:`seed_envs.retrieval.analyzer`: Unicode word segmentation, possessives,
    Lucene's 33 stop words, Porter stemming with Lucene's departures), index memory-mapped.
    Results are the products with a positive score, best first, ties broken by ASIN string as
    Anserini breaks them; on the default generated catalog the results equal Pyserini's.
``pyserini``
    The benchmark's own engine (Anserini through pyserini, :mod:`seed_envs.retrieval.pyserini`:
    0.25.0 on Java 11+, current releases need Java 21); the index is built with pyserini's
    indexer on first use.

Both back ends cache their index under ``seed_envs.paths.cache_dir("webshop", "index")``,
keyed by a hash of the documents, and keep the last query results in memory.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from seed_envs.paths import cache_dir
from seed_envs.retrieval.analyzer import LuceneEnglishAnalyzer
from seed_envs.retrieval.bm25_index import K1 as BM25_K1
from seed_envs.retrieval.bm25_index import B as BM25_B
from seed_envs.retrieval.bm25_index import Bm25Index, documents_fingerprint, index_dir_for
from seed_envs.retrieval.pyserini import LuceneBm25, build_lucene_index, is_lucene_index, lucene_searcher_class

#: How many products a search returns (the benchmark's top 50).
SEARCH_RETURN_N = 50


class SearchEngine(Protocol):
    """Returns the ASINs of the best products for a query, best first."""

    name: str

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[str]: ...


def product_document(product: Mapping[str, Any]) -> str:
    """The text the benchmark indexes for a product."""
    option_text = ", and ".join(f"{name}: {', '.join(values)}" for name, values in product.get("options", {}).items())
    bullets = product["BulletPoints"]
    first_bullet = bullets[0] if bullets else ""
    return " ".join([product["Title"], product["Description"], str(first_bullet), option_text]).lower()


class _ResultCache:
    """An engine's recent query results, least recently used dropped first."""

    def __init__(self, size: int = 20_000) -> None:
        self._items: OrderedDict[tuple[str, int], list[str]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: tuple[str, int]) -> list[str] | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: tuple[str, int], value: list[str]) -> None:
        with self._lock:
            self._items[key] = value
            if len(self._items) > self._size:
                self._items.popitem(last=False)

    def results(self, query: str, k: int, compute: Callable[[str, int], list[str]]) -> list[str]:
        """``compute(query, k)``, computed once while cached; a fresh list each call (callers may modify it)."""
        key = (query, k)
        result = self.get(key)
        if result is None:
            result = compute(query, k)
            self.put(key, result)
        return list(result)


class BM25sSearch:
    """The default back end: a shared :class:`~seed_envs.retrieval.bm25_index.Bm25Index` (memory-mapped, cached)."""

    name = "bm25s"

    def __init__(self, asins: Sequence[str], documents: Sequence[str], index_dir: Path | None = None) -> None:
        self.asins = list(asins)
        self.analyzer = LuceneEnglishAnalyzer()
        self._cache = _ResultCache()
        key = documents_fingerprint(self.asins, documents)
        self.index_dir = index_dir or index_dir_for(cache_dir("webshop", "index"), key, self.analyzer)
        self.index = Bm25Index.open(documents, self.index_dir, ids=self.asins, analyzer=self.analyzer, mmap=True)

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[str]:
        return self._cache.results(query, k, self._search)

    def _search(self, query: str, k: int) -> list[str]:
        positions, _ = self.index.search(query, k, anserini_scores=False)  # the order is all we need
        return [self.asins[i] for i in positions.tolist()]


class PyseriniSearch:
    """The benchmark's engine: Lucene BM25 through pyserini (optional; needs Java)."""

    name = "pyserini"

    def __init__(self, asins: Sequence[str], documents: Sequence[str], index_dir: Path | None = None) -> None:
        try:
            lucene_searcher_class()
        except ImportError as error:  # pragma: no cover - depends on the machine
            raise ImportError(
                "search_backend='pyserini' needs pyserini and a Java runtime "
                f"(see seed_envs/webshop/README.md): {error}"
            ) from error
        fingerprint = documents_fingerprint(list(asins), documents)
        self.index_dir = index_dir or cache_dir("webshop", "index") / f"pyserini-{fingerprint}"
        if not is_lucene_index(self.index_dir):
            build_pyserini_index(asins, documents, self.index_dir)
        self._searcher = LuceneBm25(self.index_dir, BM25_K1, BM25_B)
        self._cache = _ResultCache()

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[str]:
        return self._cache.results(query, k, self._search)

    def _search(self, query: str, k: int) -> list[str]:
        return [docid for docid, _ in self._searcher.search(query, k)]


def build_pyserini_index(asins: Iterable[str], documents: Iterable[str], index_dir: Path) -> None:
    """Run pyserini's Lucene indexer over the catalog (positions and document vectors stored,
    as the benchmark's indexing script does) into ``index_dir``."""
    build_lucene_index(zip(asins, documents, strict=True), index_dir, store_vectors=True)


BACKENDS = {"bm25s": BM25sSearch, "pyserini": PyseriniSearch}
_ENGINES: dict[tuple[int, str], tuple[Any, SearchEngine]] = {}
_ENGINES_LOCK = threading.Lock()


def build_engine(products: Sequence[Mapping[str, Any]], backend: str = "bm25s") -> SearchEngine:
    """A new engine over ``products`` (use :func:`shared_engine` to share one per catalog)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown search backend {backend!r}; expected one of {sorted(BACKENDS)}")
    asins = [p["asin"] for p in products]
    documents = [product_document(p) for p in products]
    return BACKENDS[backend](asins, documents)


def shared_engine(data: Any, backend: str = "bm25s") -> SearchEngine:
    """The engine for a loaded catalog, built (or loaded from disk) once per process."""
    key = (id(data), backend)
    with _ENGINES_LOCK:
        if key not in _ENGINES:  # the entry keeps ``data`` alive, so its id cannot be reused
            _ENGINES[key] = (data, build_engine(data.products, backend))
        return _ENGINES[key][1]
