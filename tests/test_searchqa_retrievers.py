"""Retrievers: bm25s ranking as Anserini ranks, its bm25s model, the disk cache, bad input, HTTP client and server."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from searchqa_support import SEARCHR1_CORPUS, WIKI18_SAMPLE, needs_samples, seed_cache

from seed_envs.retrieval.analyzer import LUCENE_STOP_WORDS
from seed_envs.retrieval.lucene import anserini_scores
from seed_envs.searchqa.data import SearchDataError
from seed_envs.searchqa.retrievers import (
    MAX_QUERY_CHARS,
    Doc,
    RetrieverError,
    RetrieverUnavailable,
    make_retriever,
    shared_retriever,
)
from seed_envs.searchqa.retrievers.corpus import Corpus
from seed_envs.searchqa.retrievers.http import HttpRetriever, doc_from_json, normalize_url
from seed_envs.searchqa.retrievers.server import RetrievalServer

bm25s = pytest.importorskip("bm25s", reason="the search extra (bm25s) is not installed")
Stemmer = pytest.importorskip("Stemmer", reason="the search extra (PyStemmer) is not installed")

pytestmark = [needs_samples, pytest.mark.usefixtures("seed_cache")]
_ = seed_cache


@pytest.fixture(scope="module")
def wiki(seed_cache):
    from seed_envs.searchqa.retrievers.bm25_retriever import Bm25sRetriever

    retriever = Bm25sRetriever(WIKI18_SAMPLE)
    yield retriever
    retriever.close()


def test_bm25s_ranks_and_reports_scores_as_anserini(wiki):
    """Passages by Lucene's float32 score, ties by id string; scores as Anserini reports them."""
    queries = [
        "Evan Morris lobbyist Genentech",  # passages 399, 747 and 848 tie
        "Horatio Hale Algonkin vocabulary",
        "nobel prize physics",
        "who won the world cup",
        "river in europe",  # the 5th and 6th passages tie
        "Washington D.C. intern",
    ]
    ids = [wiki.corpus.doc(i).id for i in range(len(wiki.corpus))]
    ours = wiki.search(queries, 5)
    for docs, raw in zip(ours, wiki.scores(queries), strict=True):
        expected = sorted(np.flatnonzero(raw > 0).tolist(), key=lambda i: (-raw[i], ids[i]))[:5]
        assert [d.id for d in docs] == [ids[i] for i in expected]
        assert [d.score for d in docs] == anserini_scores(raw[expected]).tolist()
    assert [d.id for d in ours[0]] == ["0", "748", "399", "747", "848"]
    assert ours[0][2].score - ours[0][3].score == pytest.approx(1e-6, abs=1e-7)  # a tie, lowered by 1e-6
    assert ours[0][0].title == '"Evan Morris"'


def test_bm25s_model_holds_the_same_score_matrix(wiki):
    """``retriever.model`` is a ``bm25s.BM25`` over the index's own (Lucene) score matrix."""
    model = wiki.model
    queries = ["Genentech Roche lobbying", "Algonkin"]
    ours = wiki.scores(queries)
    for query, row in zip(queries, ours, strict=True):
        tokens = wiki.tokenize([query])[0]
        np.testing.assert_allclose(row, model.get_scores(tokens), rtol=1e-5, atol=1e-6)


def test_query_analysis_is_lucenes_english_analyzer(wiki):
    """Queries are analysed as Lucene's English analyzer does (single characters and numbers
    such as 3.5 kept, possessives removed, Lucene's Porter), the same analyzer as the passages."""
    query = "What's Washington D.C.'s 2nd-largest U.S. city? 3.5 kg, 1,299 people, don't, AT&T's C++ x_y café"
    assert wiki.tokenize([query, "Technologies possibly assembly; the analogy of us", ""]) == [
        ["what", "washington", "d.c", "s", "2nd", "largest", "u.", "citi", "3.5", "kg", "1,299", "peopl",
         "don't", "t", "c", "x_y", "café"],
        ["technolog", "possibl", "assembl", "analog", "us"],
        [],
    ]  # fmt: skip
    assert wiki.analyzer is wiki.index.analyzer and wiki.stopwords == sorted(LUCENE_STOP_WORDS)


def test_batch_equals_one_by_one(wiki):
    queries = ["Evan Morris", "Horatio Hale", "Evan Morris", "the of and", "", "Roche 2005"]
    batch = wiki.search(queries, 3)
    single = [wiki.search([q], 3)[0] for q in queries]
    assert batch == single
    assert batch[0] == batch[2] and batch[0] is not batch[2]


def test_bad_queries(wiki):
    assert wiki.search([], 3) == []
    empty, stop, huge, unicode = wiki.search(["", "the a an of", "lobbyist " * 12_000, "\x00\ud800🙂"], 3)
    assert empty == [] and stop == [] and unicode == []  # nothing matches: no passage, as in Lucene
    assert huge and huge[0].id == "0"  # a 100 KB query is cut, not fatal
    t0 = time.perf_counter()
    wiki.search(["x" * 100_000], 3)
    assert time.perf_counter() - t0 < 5
    with pytest.raises(TypeError):
        wiki.search("a single string", 3)
    with pytest.raises(TypeError):
        wiki.search([b"bytes"], 3)
    with pytest.raises(ValueError):
        wiki.search(["q"], 0)
    assert len(wiki.search(["Evan Morris"], 1000)[0]) <= 1000
    assert MAX_QUERY_CHARS >= 256


def test_topk_larger_than_corpus(seed_cache):
    retriever = make_retriever("bm25s", SEARCHR1_CORPUS)
    docs = retriever.search(["the"], 50)[0] + retriever.search(["corpus"], 50)[0]
    assert len({d.id for d in retriever.search(["a b c d e f g"], 50)[0]}) <= 10
    assert all(isinstance(d, Doc) for d in docs)


def test_index_is_cached_on_disk(seed_cache, tmp_path):
    from seed_envs.searchqa.retrievers.bm25_retriever import Bm25sRetriever

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": f"d{i}", "contents": f'"T{i}"\nword{i} common'}) + "\n" for i in range(20))
    )
    first = Bm25sRetriever(corpus, cache_root=tmp_path / "idx")
    stamp = (first.index_dir / "params.index.json").stat().st_mtime_ns
    second = Bm25sRetriever(corpus, cache_root=tmp_path / "idx")
    assert second.index_dir == first.index_dir
    assert (second.index_dir / "params.index.json").stat().st_mtime_ns == stamp  # loaded, not rebuilt
    assert second.search(["word7"], 3)[0][0].id == "d7"
    # Editing the corpus gives a new index.
    time.sleep(0.01)
    corpus.write_text(corpus.read_text() + json.dumps({"id": "new", "contents": '"N"\nzebra'}) + "\n")
    third = Bm25sRetriever(corpus, cache_root=tmp_path / "idx")
    assert third.index_dir != first.index_dir
    assert third.search(["zebra"], 3)[0][0].id == "new"


def test_corpus_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "contents": "ok"}\nnot json\n')
    corpus = Corpus(bad)
    assert corpus.doc(0).contents == "ok"
    with pytest.raises(SearchDataError, match="passage 1 is not valid JSON"):
        corpus.doc(1)
    gz = tmp_path / "c.jsonl.gz"
    gz.write_bytes(b"")
    with pytest.raises(SearchDataError, match="decompress"):
        Corpus(gz)
    with pytest.raises(ValueError, match="unknown retriever"):
        make_retriever("elastic", bad)


def test_shared_retriever_is_one_object_per_process(seed_cache):
    a = shared_retriever("bm25s", WIKI18_SAMPLE)
    b = shared_retriever("bm25s", str(WIKI18_SAMPLE))
    assert a is b
    assert shared_retriever("bm25s", WIKI18_SAMPLE, k1=1.2) is not a


# ------------------------------------------------------------------ HTTP


@pytest.fixture
def server(wiki):
    srv = RetrievalServer(wiki, port=0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def post(url, body: bytes):
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_http_round_trip_equals_in_process(server, wiki):
    client = HttpRetriever(server.url.removesuffix("/retrieve"), timeout=10)
    queries = ["Evan Morris lobbyist", "", "x" * 100_000, "Horatio Hale"]
    assert client.search(queries, 3) == wiki.search(queries, 3)
    assert client.search([], 3) == []
    client.ping()


def test_server_speaks_search_r1_api(server):
    status, reply = post(
        server.url, b'{"queries": ["Washington lobbyist Genentech river"], "topk": 2, "return_scores": true}'
    )
    assert status == 200
    entry = reply["result"][0][0]
    assert set(entry) == {"document", "score"} and set(entry["document"]) == {"id", "contents"}
    assert len(reply["result"][0]) == 2
    status, reply = post(server.url, b'{"queries": ["Washington river"]}')  # defaults: server topk, no scores
    assert status == 200 and set(reply["result"][0][0]) == {"id", "contents"} and len(reply["result"][0]) == 3
    for body in (
        b"not json",
        b'{"queries": "x"}',
        b'{"queries": [1]}',
        b'{"queries": [], "topk": -1}',
        b'{"queries": [], "topk": "3"}',
        b"[]",
        b'{"queries": [], "return_scores": "yes"}',
    ):
        status, reply = post(server.url, body)
        assert status == 400 and "error" in reply, body
    status, _ = post(server.url.replace("/retrieve", "/other"), b"{}")
    assert status == 404
    with urllib.request.urlopen(server.url.replace("/retrieve", "/health"), timeout=5) as response:
        assert json.loads(response.read())["status"] == "ok"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_dead_server_fails_fast_with_a_clear_error():
    client = HttpRetriever(f"http://127.0.0.1:{free_port()}", timeout=3)
    t0 = time.perf_counter()
    with pytest.raises(RetrieverUnavailable, match=r"no retrieval server answers at http://127\.0\.0\.1:\d+/retrieve"):
        client.search(["q"], 3)
    assert time.perf_counter() - t0 < 3


class _SlowHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        for _ in range(20):  # trickle bytes: each read succeeds, the whole reply never comes in time
            try:
                self.wfile.write(b" ")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.1)


def test_slow_server_times_out():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _SlowHandler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        client = HttpRetriever(f"http://127.0.0.1:{srv.server_address[1]}", timeout=0.5)
        t0 = time.perf_counter()
        with pytest.raises(RetrieverUnavailable, match=r"did not answer within 0\.5 s"):
            client.search(["q"], 3)
        assert time.perf_counter() - t0 < 1.5
    finally:
        srv.shutdown()
        srv.server_close()


def test_bad_server_replies_and_urls():
    assert normalize_url("http://localhost:8000") == "http://localhost:8000/retrieve"
    assert normalize_url("http://h:1/custom") == "http://h:1/custom"
    with pytest.raises(ValueError):
        normalize_url("ftp://x")
    # Search-R1's own BM25 server returns title/text/contents without an id.
    doc = doc_from_json({"document": {"title": "T", "text": "x", "contents": '"T"\nx'}, "score": 1.5}, "r")
    assert doc == Doc("", '"T"\nx', 1.5)
    assert doc_from_json({"id": "7", "contents": "c"}, "r") == Doc("7", "c", 0.0)
    with pytest.raises(RetrieverError):
        doc_from_json({"document": {"id": "1"}}, "r")
    with pytest.raises(RetrieverError):
        doc_from_json({"document": {"contents": "c"}, "score": "high"}, "r")
    client = HttpRetriever("http://127.0.0.1:1")
    with pytest.raises(RetrieverError, match="2 result lists for 1 queries"):
        client._parse({"result": [[], []]}, 1, 3)
    with pytest.raises(RetrieverError, match="without a 'result' list"):
        client._parse({"error": "x"}, 1, 3)
