"""Retrievers behind one interface, and a per-process cache so envs share one.

``make_retriever(spec, corpus_path, **options)`` builds a back end from a spec:

==========================  ==================================================  =========================
spec                        back end                                            needs
==========================  ==================================================  =========================
``"bm25s"`` (default)       Lucene-style BM25 in process, index cached on disk  ``bm25s``, ``PyStemmer``
``"pyserini"``              Lucene BM25 through Pyserini (Java)                 ``pyserini``, a JDK
``"dense"``                 sentence-transformers encoder + faiss inner product ``sentence-transformers``,
                                                                                ``faiss-cpu``
``"http://host:port"``      a Search-R1 retrieval server (``POST /retrieve``)   nothing
==========================  ==================================================  =========================

``shared_retriever(...)`` returns the same object for the same arguments within a
process: the envs of a vector worker all search one index, loaded once. The back-end
modules are light; each imports its dependencies (the "needs" column) when built.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from seed_envs.searchqa.retrievers.base import (
    MAX_QUERY_CHARS,
    Doc,
    Retriever,
    RetrieverError,
    RetrieverUnavailable,
)
from seed_envs.searchqa.retrievers.bm25_retriever import Bm25sRetriever
from seed_envs.searchqa.retrievers.dense import DenseRetriever
from seed_envs.searchqa.retrievers.http import HttpRetriever
from seed_envs.searchqa.retrievers.pyserini_lucene import PyseriniRetriever

BACKENDS = ("bm25s", "pyserini", "dense", "http")

_SHARED: dict[tuple, Retriever] = {}
_LOCK = threading.Lock()


def is_url(spec: str) -> bool:
    return spec.startswith(("http://", "https://"))


def make_retriever(spec: str, corpus_path: str | os.PathLike[str] | None = None, **options: Any) -> Retriever:
    """A new retriever for ``spec`` (see the module docstring) over ``corpus_path``."""
    if is_url(spec) or spec == "http":
        url = options.pop("url", None) or spec
        return HttpRetriever(url, **options)
    if spec not in BACKENDS:
        raise ValueError(f"unknown retriever {spec!r}; expected one of {', '.join(BACKENDS[:3])} or a URL")
    if corpus_path is None:
        raise ValueError(f"the {spec} retriever needs a corpus file")
    if spec == "bm25s":
        return Bm25sRetriever(corpus_path, **options)
    if spec == "pyserini":
        return PyseriniRetriever(corpus_path, **options)
    return DenseRetriever(corpus_path, **options)


def shared_retriever(spec: str, corpus_path: str | os.PathLike[str] | None = None, **options: Any) -> Retriever:
    """The process-wide retriever for these arguments, built on first use."""
    key = (
        spec,
        str(Path(corpus_path).resolve()) if corpus_path else None,
        tuple(sorted((name, repr(value)) for name, value in options.items())),
    )
    with _LOCK:
        retriever = _SHARED.get(key)
        if retriever is None:
            retriever = _SHARED[key] = make_retriever(spec, corpus_path, **options)
        return retriever


def clear_shared_retrievers() -> None:
    """Close and forget every shared retriever of this process."""
    with _LOCK:
        for retriever in _SHARED.values():
            retriever.close()
        _SHARED.clear()


__all__ = [
    "BACKENDS",
    "MAX_QUERY_CHARS",
    "Doc",
    "Retriever",
    "RetrieverError",
    "RetrieverUnavailable",
    "clear_shared_retrievers",
    "make_retriever",
    "shared_retriever",
]
