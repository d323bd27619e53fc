"""The one retriever interface: ``search(queries, topk) -> list[list[Doc]]``.

Every back end (bm25s, pyserini, dense, HTTP) subclasses :class:`Retriever` and
implements ``_search`` for a non-empty batch of cleaned queries. The base class owns
the input rules, so every back end treats bad input alike:

- a query is a str; it is cut to :data:`MAX_QUERY_CHARS` characters (Lucene-style
  engines reject queries with more than 1,024 clauses, and no real query is longer);
- an empty or all-whitespace query is searched as-is and may return no passages;
- ``topk`` must be a positive int; a back end returns at most ``topk`` passages,
  fewer when fewer match.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

#: Queries are cut to this many characters before any back end sees them.
MAX_QUERY_CHARS = 1024
#: Largest topk any back end is asked for.
MAX_TOPK = 1000


class RetrieverError(RuntimeError):
    """A retriever could not answer (bad index, bad server reply)."""


class RetrieverUnavailable(RetrieverError):
    """A remote retriever could not be reached, or did not answer in time."""


@dataclass(frozen=True)
class Doc:
    """One retrieved passage. ``contents`` is ``Title\\ntext`` as in the corpus jsonl."""

    id: str
    contents: str
    score: float = 0.0

    @property
    def title(self) -> str:
        """The first line of ``contents`` (wiki-18 keeps it in double quotes)."""
        return self.contents.split("\n", 1)[0]

    @property
    def text(self) -> str:
        """Everything after the first line of ``contents``."""
        parts = self.contents.split("\n", 1)
        return parts[1] if len(parts) > 1 else ""

    def to_json(self, with_score: bool = True) -> dict:
        """The Search-R1 server's shape: ``{"document": {"id", "contents"}, "score"}``."""
        document = {"id": self.id, "contents": self.contents}
        return {"document": document, "score": self.score} if with_score else document


def clean_queries(queries: Sequence[str]) -> list[str]:
    """Check that ``queries`` is a sequence of str and cut each to :data:`MAX_QUERY_CHARS`."""
    if isinstance(queries, str):
        raise TypeError("queries must be a list of str, not a single str")
    cleaned = []
    for query in queries:
        if not isinstance(query, str):
            raise TypeError(f"every query must be a str, got {type(query).__name__}")
        cleaned.append(query[:MAX_QUERY_CHARS])
    return cleaned


def check_topk(topk: int) -> int:
    """``topk`` if it is an int in ``[1, MAX_TOPK]``; TypeError if it is no int, else ValueError."""
    if isinstance(topk, bool) or not isinstance(topk, int):
        raise TypeError(f"topk must be an int, got {type(topk).__name__}")
    if not 1 <= topk <= MAX_TOPK:
        raise ValueError(f"topk must be in [1, {MAX_TOPK}], got {topk}")
    return topk


class Retriever(ABC):
    """Search a passage collection for a batch of queries at once."""

    #: A short name for logs and the server's banner.
    name: str = "retriever"

    def search(self, queries: Sequence[str], topk: int = 3) -> list[list[Doc]]:
        """The top ``topk`` passages for each query, best first, one list per query."""
        cleaned = clean_queries(queries)
        topk = check_topk(topk)
        if not cleaned:
            return []
        # A batch from a GRPO group often repeats a query: search each distinct one once.
        distinct = list(dict.fromkeys(cleaned))
        results = self._search(distinct, topk)
        if len(results) != len(distinct):
            raise RetrieverError(f"{self.name} returned {len(results)} result lists for {len(distinct)} queries")
        by_query = dict(zip(distinct, results, strict=True))
        return [list(by_query[query]) for query in cleaned]

    @abstractmethod
    def _search(self, queries: list[str], topk: int) -> list[list[Doc]]:
        """Search a non-empty batch of cleaned queries."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (files, connections). Default: nothing to release."""

    def __enter__(self) -> Retriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
