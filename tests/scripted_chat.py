"""A scripted OpenAI-compatible chat endpoint: a stand-in for a model in the verifiers tests.

``POST <url>/chat/completions`` answers each request with ``reply(messages)``, streamed (as
server-sent ``chat.completion.chunk`` events) or not, as the request asks. Every request body
is kept in ``requests``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[list[dict[str, Any]]], str]


def message_text(message: dict[str, Any]) -> str:
    """A chat message's text (the text parts of a multimodal one)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if part.get("type") == "text")


class ScriptedChat:
    """A local chat-completions server (use as a context manager); ``url`` is its base URL."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedChat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def _answer(self, body: dict[str, Any]) -> tuple[str, bytes]:
        self.requests.append(body)
        text = self.reply(body["messages"])
        base = {"id": f"chatcmpl-{len(self.requests)}", "created": 0, "model": body.get("model", "scripted")}
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            payload = {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
            return "application/json", json.dumps(payload).encode()
        chunk = {**base, "object": "chat.completion.chunk"}
        events = [
            {
                **chunk,
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}],
            },
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**chunk, "choices": [], "usage": usage},
        ]
        stream = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
        return "text/event-stream", stream.encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        chat = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                content_type, data = chat._answer(body)
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
