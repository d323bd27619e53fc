"""A client for Search-R1's retrieval server API.

Request: ``POST /retrieve`` with ``{"queries": [...], "topk": k, "return_scores": true}``.
Reply: ``{"result": [[{"document": {"id", "contents"}, "score"}, ...], ...]}``, one list
per query (with ``return_scores`` false, each entry is the document itself). Search-R1's
BM25 server returns documents as ``{"title", "text", "contents"}`` without an ``id``;
we accept both.

Nothing hangs: every request has a total deadline (``timeout`` seconds, covering the
connection, the upload and the whole reply). A server that is down, refuses, or is
slow raises :class:`RetrieverUnavailable` with the address and what to do.
"""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlsplit

from seed_envs.searchqa.retrievers.base import Doc, Retriever, RetrieverError, RetrieverUnavailable

HINT = "start one with `seed serve retriever` (or Search-R1's retrieval_launch.sh) and check the URL"


def normalize_url(url: str) -> str:
    """``http://host:port`` -> ``http://host:port/retrieve``; other paths are kept."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    path = parts.path if parts.path not in ("", "/") else "/retrieve"
    return f"{parts.scheme}://{parts.netloc}{path}"


def doc_from_json(entry: object, where: str) -> Doc:
    """A :class:`Doc` from one result entry (with or without the score wrapper)."""
    if not isinstance(entry, dict):
        raise RetrieverError(f"{where}: expected an object, got {type(entry).__name__}")
    document, score = (entry["document"], entry.get("score", 0.0)) if "document" in entry else (entry, 0.0)
    if not isinstance(document, dict):
        raise RetrieverError(f"{where}: 'document' must be an object")
    contents = document.get("contents")
    if not isinstance(contents, str):
        title, text = document.get("title"), document.get("text")
        if not isinstance(title, str) or not isinstance(text, str):
            raise RetrieverError(f"{where}: document has neither 'contents' nor 'title' and 'text'")
        contents = f'"{title}"\n{text}'
    try:
        score = float(score)
    except (TypeError, ValueError):
        raise RetrieverError(f"{where}: score {score!r} is not a number") from None
    return Doc(id=str(document.get("id", "")), contents=contents, score=score)


class HttpRetriever(Retriever):
    """Search through a running retrieval server."""

    name = "http"

    def __init__(self, url: str, *, timeout: float = 30.0, max_batch: int = 512) -> None:
        self.url = normalize_url(url)
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.timeout = float(timeout)
        self.max_batch = max(1, int(max_batch))
        parts = urlsplit(self.url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or (443 if self._https else 80)
        self._path = parts.path + (f"?{parts.query}" if parts.query else "")

    def _search(self, queries: list[str], topk: int) -> list[list[Doc]]:
        results: list[list[Doc]] = []
        for start in range(0, len(queries), self.max_batch):
            chunk = queries[start : start + self.max_batch]
            reply = self._post({"queries": chunk, "topk": topk, "return_scores": True})
            results.extend(self._parse(reply, len(chunk), topk))
        return results

    def _parse(self, reply: object, expected: int, topk: int) -> list[list[Doc]]:
        if not isinstance(reply, dict) or not isinstance(reply.get("result"), list):
            raise RetrieverError(f"{self.url} replied without a 'result' list")
        rows = reply["result"]
        if len(rows) != expected:
            raise RetrieverError(f"{self.url} returned {len(rows)} result lists for {expected} queries")
        parsed = []
        for q, row in enumerate(rows):
            if not isinstance(row, list):
                raise RetrieverError(f"{self.url}: result {q} is not a list")
            parsed.append([doc_from_json(e, f"{self.url} result {q}.{i}") for i, e in enumerate(row[:topk])])
        return parsed

    def _post(self, payload: dict) -> object:
        body = json.dumps(payload).encode("utf-8")
        deadline = time.monotonic() + self.timeout
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        connection = cls(self._host, self._port, timeout=self.timeout)
        try:
            connection.request("POST", self._path, body=body, headers={"Content-Type": "application/json"})
            if connection.sock is not None:
                connection.sock.settimeout(max(1e-3, deadline - time.monotonic()))
            response = connection.getresponse()
            data = self._read(connection, response, deadline)
        except TimeoutError:
            raise RetrieverUnavailable(
                f"the retrieval server at {self.url} did not answer within {self.timeout:g} s; {HINT}"
            ) from None
        except (ConnectionError, OSError, http.client.HTTPException) as error:
            raise RetrieverUnavailable(
                f"no retrieval server answers at {self.url} ({type(error).__name__}: {error}); {HINT}"
            ) from None
        finally:
            connection.close()
        if response.status != 200:
            raise RetrieverError(f"{self.url} answered HTTP {response.status}: {data[:300].decode('utf-8', 'replace')}")
        try:
            return json.loads(data)
        except ValueError:
            raise RetrieverError(f"{self.url} replied with invalid JSON: {data[:120]!r}") from None

    def _read(self, connection: http.client.HTTPConnection, response, deadline: float) -> bytes:
        chunks = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            if connection.sock is not None:
                connection.sock.settimeout(remaining)
            chunk = response.read1(1 << 16) if hasattr(response, "read1") else response.read(1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)

    def ping(self) -> None:
        """Raise :class:`RetrieverUnavailable` unless the server answers an empty request."""
        self._post({"queries": [], "topk": 1, "return_scores": True})
