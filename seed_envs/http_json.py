"""The JSON side of this project's small HTTP servers (retrieval, policy): quiet, one reply shape."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


class JsonRequestHandler(BaseHTTPRequestHandler):
    """A request handler that answers in JSON and logs nothing per request."""

    def log_message(self, format: str, *args: object) -> None:
        pass  # one line per request would swamp training logs

    def send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
