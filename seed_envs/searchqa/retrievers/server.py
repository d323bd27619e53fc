"""Serve any retriever over Search-R1's API: ``POST /retrieve``.

Request ``{"queries": [str], "topk": int | null, "return_scores": bool}``; reply
``{"result": [[{"document": {"id", "contents"}, "score"}]]}`` with scores, else
``{"result": [[{"id", "contents"}]]}``, as Search-R1's ``retrieval_server.py``. A missing
``topk`` means the server's default. Bad requests get HTTP 400 with ``{"error"}``;
``GET /health`` says what is served. Standard library only; binds 127.0.0.1 unless
told otherwise.
"""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer

from seed_envs.http_json import JsonRequestHandler
from seed_envs.searchqa.retrievers.base import Retriever, RetrieverError, check_topk

#: Largest request body accepted (bytes) and most queries per request.
MAX_BODY_BYTES = 16 << 20
MAX_QUERIES = 4096


class RequestError(ValueError):
    """A request the server refuses (HTTP 400/413)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def parse_request(body: bytes, default_topk: int) -> tuple[list[str], int, bool]:
    """(queries, topk, return_scores) from a request body, or RequestError."""
    try:
        payload = json.loads(body)
    except ValueError:
        raise RequestError("the body is not valid JSON") from None
    if not isinstance(payload, dict):
        raise RequestError("the body must be a JSON object")
    queries = payload.get("queries")
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise RequestError("'queries' must be a list of strings")
    if len(queries) > MAX_QUERIES:
        raise RequestError(f"at most {MAX_QUERIES} queries per request, got {len(queries)}", 413)
    try:
        topk = check_topk(payload.get("topk") or default_topk)
    except (TypeError, ValueError) as error:
        raise RequestError(f"bad 'topk': {error}") from None
    return_scores = payload.get("return_scores", False)
    if not isinstance(return_scores, bool):
        raise RequestError("'return_scores' must be true or false")
    return queries, topk, return_scores


class RetrievalServer(ThreadingHTTPServer):
    """A threaded HTTP server answering ``/retrieve`` from one retriever."""

    daemon_threads = True

    def __init__(self, retriever: Retriever, host: str = "127.0.0.1", port: int = 8000, topk: int = 3) -> None:
        self.retriever = retriever
        self.default_topk = topk
        self.lock = threading.Lock()
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/retrieve"

    def answer(self, body: bytes) -> dict:
        queries, topk, return_scores = parse_request(body, self.default_topk)
        with self.lock:
            results = self.retriever.search(queries, topk)
        return {"result": [[doc.to_json(with_score=return_scores) for doc in row] for row in results]}


class _Handler(JsonRequestHandler):
    server: RetrievalServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("", "/health"):
            self.send_json(200, {"status": "ok", "retriever": self.server.retriever.name, "endpoint": "POST /retrieve"})
        else:
            self.send_json(404, {"error": f"no such path {self.path!r}; use POST /retrieve"})

    def do_POST(self) -> None:
        if self.path.split("?")[0].rstrip("/") != "/retrieve":
            self.send_json(404, {"error": f"no such path {self.path!r}; use POST /retrieve"})
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY_BYTES:
            self.close_connection = True
            self.send_json(413, {"error": f"the body must be 0..{MAX_BODY_BYTES} bytes with a Content-Length"})
            return
        body = self.rfile.read(length)
        try:
            self.send_json(200, self.server.answer(body))
        except RequestError as error:
            self.send_json(error.status, {"error": str(error)})
        except RetrieverError as error:
            self.send_json(503, {"error": f"retriever failed: {error}"})
