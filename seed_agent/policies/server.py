"""Serve any local :class:`Policy` behind an OpenAI-compatible chat endpoint on 127.0.0.1.

``POST /v1/chat/completions`` and ``GET /v1/models``, with the vLLM extensions that
:class:`~seed_agent.policies.http.HttpPolicy` uses (``continue_final_message``,
``include_stop_str_in_output``, ``top_k``, ``repetition_penalty``). Image parts must be ``data:`` URLs. Meant
for sharing one loaded model between processes (an analyzer, ``seed play``) and for
testing the HTTP client; it serves one request at a time.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from http.server import ThreadingHTTPServer
from typing import Any

from seed_agent.chat import IMAGE_PLACEHOLDER, ChatPrompt, Message, Section
from seed_agent.policies.base import Policy, SamplingParams
from seed_envs.http_json import JsonRequestHandler


def prompt_from_messages(messages: list[dict[str, Any]], continue_final: bool) -> tuple[ChatPrompt, list[Any]]:
    """A :class:`ChatPrompt` (and its images) from OpenAI-style chat messages."""
    images: list[Any] = []
    flat = [(m["role"], _flatten(m.get("content"), images)) for m in messages]
    prefill = ""
    if continue_final and flat and flat[-1][0] == "assistant":
        prefill = flat.pop()[1]
    system = flat.pop(0)[1] if flat and flat[0][0] == "system" else ""
    if not flat or flat[-1][0] != "user":
        raise ValueError("the last message (before any assistant prefill) must be from the user")
    examples = tuple(Message(role, text) for role, text in flat[:-1])
    prompt = ChatPrompt(system=system, sections=(Section("text", flat[-1][1]),), examples=examples, prefill=prefill)
    return prompt, images


def _flatten(content: Any, images: list[Any]) -> str:
    if isinstance(content, str):
        return content
    text = []
    for part in content or []:
        if part.get("type") == "text":
            text.append(part.get("text", ""))
        elif part.get("type") == "image_url":
            images.append(_decode_image(part["image_url"]["url"]))
            text.append(IMAGE_PLACEHOLDER)
    return "".join(text)


def _decode_image(url: str) -> Any:
    from PIL import Image

    if not url.startswith("data:"):
        raise ValueError("only data: URLs are accepted for images")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")


def make_handler(policy: Policy, model_name: str) -> type[JsonRequestHandler]:
    lock = threading.Lock()

    class Handler(JsonRequestHandler):
        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self.send_json(200, {"object": "list", "data": [{"id": model_name, "object": "model"}]})
            else:
                self.send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self.send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                prompt, images = prompt_from_messages(body["messages"], bool(body.get("continue_final_message")))
                sampling = SamplingParams(
                    temperature=float(body.get("temperature", 1.0)),
                    top_p=float(body.get("top_p", 1.0)),
                    top_k=int(body.get("top_k", 0)),
                    max_new_tokens=int(body.get("max_tokens") or 256),
                    stop=tuple(body.get("stop") or ()),
                    seed=body.get("seed"),
                    repetition_penalty=float(body.get("repetition_penalty", 1.0)),
                )
            except (KeyError, TypeError, ValueError, json.JSONDecodeError) as error:
                self.send_json(400, {"error": {"message": f"bad request: {error}"}})
                return
            with lock:
                completion = policy.generate([prompt], images=[images], sampling=sampling)[0]
            text = completion.text
            if completion.finish_reason == "stop" and not body.get("include_stop_str_in_output"):
                ends = [text.find(s) for s in sampling.stop if s in text]
                text = text[: min(ends)] if ends else text
            choice: dict[str, Any] = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "length" if completion.finish_reason == "length" else "stop",
            }
            if body.get("logprobs"):
                choice["logprobs"] = {
                    "content": [
                        {"token": str(t), "logprob": lp}
                        for t, lp in zip(completion.token_ids, completion.logprobs, strict=False)
                    ]
                }
            self.send_json(
                200,
                {
                    "id": f"chatcmpl-{time.time_ns()}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model_name,
                    "choices": [choice],
                    "usage": {
                        "prompt_tokens": completion.prompt_tokens,
                        "completion_tokens": len(completion.token_ids),
                        "total_tokens": completion.prompt_tokens + len(completion.token_ids),
                    },
                },
            )

    return Handler


def serve_policy(
    policy: Policy, host: str = "127.0.0.1", port: int = 0, model_name: str = "default"
) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start serving in a daemon thread; returns the server (``server.server_address``) and thread.

    Call ``server.shutdown()`` then ``server.server_close()`` to stop.
    """
    server = ThreadingHTTPServer((host, port), make_handler(policy, model_name))
    thread = threading.Thread(target=server.serve_forever, name="seed-policy-server", daemon=True)
    thread.start()
    return server, thread
