"""Benchmark of Search QA retrieval: our env path against raw bm25s, and batched against one by one.

All figures come from one process on the same index, as ratios, each method timed in
interleaved rounds (the median round counts), so machine noise hits every method alike:

- ``raw_bm25s``: the bm25s library alone, one query at a time: ``bm25s.tokenize`` then
  ``BM25.retrieve(k=3)`` with the passages held in memory (bm25s's own tokenizer, not the
  index's Lucene analyzer: the library's query path on the same index);
- ``retriever``: ``Bm25sRetriever.search([q], 3)`` one query at a time;
- ``env_step``: ``SearchQAEnv.step("<search> q </search>")``: parsing the turn, the
  search, and the ``<information>`` observation, one query at a time;
- ``batch``: ``Bm25sRetriever.search(queries, 3)`` in batches of 64 against one by one, on
  distinct queries and on a GRPO-like batch (each question searched by 5 group members);
  ``step_batch`` over 16 envs against stepping them one by one; the same for the HTTP
  client against a local ``seed serve retriever`` server, where a batch saves round trips.

``env_overhead`` = time(env_step) / time(raw_bm25s) - 1; the target is <= 0.10.

Run: ``python scripts/bench_searchqa.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_common import median_rounds


def run_benchmark(quick: bool = False) -> dict:
    """Measure and return queries/s and ratios (see the module docstring)."""
    import bm25s
    import Stemmer

    from seed_envs.searchqa import SearchQAEnv, step_batch
    from seed_envs.searchqa.generate import WorldConfig, ensure_world
    from seed_envs.searchqa.retrievers.bm25_retriever import Bm25sRetriever
    from seed_envs.searchqa.retrievers.http import HttpRetriever
    from seed_envs.searchqa.retrievers.server import RetrievalServer

    config = WorldConfig(
        name="bench",
        n_passages=5_000 if quick else 20_000,
        train_questions=100,
        valid_questions=200 if quick else 500,
    )
    folder = ensure_world(config)
    corpus_path = folder / "corpus.jsonl"
    records = [json.loads(line) for line in (folder / "valid_seen.jsonl").read_text().splitlines()]
    queries = [r["question"] for r in records]
    rounds = 3 if quick else 7

    retriever = Bm25sRetriever(corpus_path)
    model = retriever.model
    stemmer = Stemmer.Stemmer("porter")
    passages = [json.loads(line) for line in corpus_path.read_text(encoding="utf-8").splitlines()]
    env = SearchQAEnv(
        split="valid_seen",
        qa_files={"valid_seen": folder / "valid_seen.jsonl"},
        corpus=corpus_path,
        retriever=retriever,
    )
    actions = [f"<search> {q} </search>" for q in queries]

    def raw_bm25s() -> None:
        for query in queries:
            tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
            model.retrieve(tokens, corpus=passages, k=3, show_progress=False)

    def our_retriever() -> None:
        for query in queries:
            retriever.search([query], 3)

    def env_steps() -> float:
        stepping = 0.0  # resets are not part of the retrieval path: time the steps only
        for i, action in enumerate(actions):
            if i % 3 == 0:
                env.reset(options={"split": "valid_seen", "index": i % len(records)})
            start = time.perf_counter()
            env.step(action)
            stepping += time.perf_counter() - start
        return stepping

    def batched() -> None:
        for start in range(0, len(queries), 64):
            retriever.search(queries[start : start + 64], 3)

    # A GRPO batch: each question is searched by 5 members of its group (often verbatim).
    group_queries = [q for q in queries[: len(queries) // 5] for _ in range(5)]

    def grpo_single() -> None:
        for query in group_queries:
            retriever.search([query], 3)

    def grpo_batch() -> None:
        for start in range(0, len(group_queries), 64):
            retriever.search(group_queries[start : start + 64], 3)

    timings = median_rounds(
        {
            "raw_bm25s": raw_bm25s,
            "retriever": our_retriever,
            "env_step": env_steps,
            "batch64": batched,
            "grpo_single": grpo_single,
            "grpo_batch64": grpo_batch,
        },
        rounds,
    )
    n = len(queries)
    result: dict = {
        "passages": config.n_passages,
        "queries": n,
        "qps": {name: n / seconds for name, seconds in timings.items()},
        "env_overhead": timings["env_step"] / timings["raw_bm25s"] - 1,
        "env_overhead_vs_own_retriever": timings["env_step"] / timings["retriever"] - 1,
        "retriever_vs_raw_bm25s": timings["raw_bm25s"] / timings["retriever"],
        "batch64_speedup": timings["retriever"] / timings["batch64"],
        "grpo_group5_batch64_speedup": timings["grpo_single"] / timings["grpo_batch64"],
    }
    del result["qps"]["grpo_single"], result["qps"]["grpo_batch64"]

    # step_batch over 16 envs against stepping them one by one.
    envs = [
        SearchQAEnv(
            split="valid_seen",
            qa_files={"valid_seen": folder / "valid_seen.jsonl"},
            corpus=corpus_path,
            retriever=retriever,
        )
        for _ in range(16)
    ]

    def reset_all(offset: int) -> None:
        for i, e in enumerate(envs):
            e.reset(options={"split": "valid_seen", "index": (offset + i) % len(records)})

    def vector(batch: bool) -> Callable[[], float]:
        def run() -> float:
            stepping = 0.0
            for start in range(0, n - 15, 16):
                reset_all(start)
                chunk = actions[start : start + 16]
                began = time.perf_counter()
                if batch:
                    step_batch(envs, chunk)
                else:
                    for e, action in zip(envs, chunk, strict=True):
                        e.step(action)
                stepping += time.perf_counter() - began
            return stepping

        return run

    vec = median_rounds({"one_by_one": vector(False), "step_batch": vector(True)}, rounds)
    result["step_batch16_speedup"] = vec["one_by_one"] / vec["step_batch"]

    # The HTTP client against a local server: batching saves round trips.
    server = RetrievalServer(retriever, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = HttpRetriever(server.url, timeout=60)
        subset = queries[: 64 if quick else 128]

        def http_single() -> None:
            for query in subset:
                client.search([query], 3)

        def http_batch() -> None:
            client.search(subset, 3)

        http = median_rounds({"single": http_single, "batch": http_batch}, rounds)
    finally:
        server.shutdown()
        server.server_close()
    result["http_qps"] = {name: len(subset) / seconds for name, seconds in http.items()}
    result["http_batch_speedup"] = http["single"] / http["batch"]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller corpus and fewer rounds")
    args = parser.parse_args()
    result = run_benchmark(quick=args.quick)
    print(json.dumps(result, indent=2))
    target = "OK" if result["env_overhead"] <= 0.10 else "ABOVE TARGET"
    print(f"env path overhead vs raw bm25s: {result['env_overhead']:+.1%} (target <= +10%: {target})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
