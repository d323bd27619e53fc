"""A policy behind an OpenAI-compatible HTTP API (``POST {base_url}/chat/completions``).

For evaluating API models, and for running the skill analyzer on an external model
(SEED's Stage 1). Requests run concurrently, one per prompt. Standard library only.

Differences from the local back ends, and how they are handled:

- **Prefill.** Chat APIs cannot start the reply for the model. With
  ``server_extensions=True`` (vLLM, SGLang, ``seed_agent.policies.server``) the prefill is
  sent as a final assistant message with ``continue_final_message``; otherwise it is
  left out and the parser accepts the reply with or without it.
- **Stop strings.** OpenAI servers drop the stop string from the text. It is put back
  (``include_stop_str_in_output`` where the server supports it; otherwise the closing
  tag that matches the last opened tag), so that ``<action>x</action>`` parses.
- **Token ids** are not returned by these APIs; ``Completion.token_ids`` stays empty,
  and ``logprobs`` holds the server's per-token log-probs when ``logprobs=True``.
- **Scoring** (teacher-forced re-scoring) is not offered: :meth:`score` raises
  :class:`~seed_agent.policies.base.ScoringUnsupported`. RL uses a local back end.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from seed_agent.chat import ChatPrompt
from seed_agent.policies.base import (
    Completion,
    PromptImages,
    SamplingParams,
    ScoringUnsupported,
    check_images,
    content_parts,
    to_pil,
)
from seed_envs.images import png_data_url

FINISH_REASONS = {"stop": "stop", "length": "length", "eos": "eos"}


class HttpPolicy:
    """An OpenAI-compatible chat endpoint as a :class:`Policy` (generation only)."""

    def __init__(
        self,
        base_url: str,
        model: str = "default",
        *,
        api_key: str | None = None,
        timeout: float = 300.0,
        max_workers: int = 8,
        logprobs: bool = False,
        server_extensions: bool = True,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        if not self.base_url.endswith("/v1"):
            self.base_url += "/v1"
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.timeout = timeout
        self.max_workers = max_workers
        self.logprobs = logprobs
        self.server_extensions = server_extensions

    def generate(
        self,
        prompts: Sequence[ChatPrompt],
        images: Sequence[PromptImages | None] | None = None,
        sampling: SamplingParams | None = None,
    ) -> list[Completion]:
        sampling = sampling or SamplingParams()
        image_lists = check_images(prompts, images, accepts_images=True)
        jobs = list(zip(prompts, image_lists, strict=True))
        with ThreadPoolExecutor(max_workers=max(1, min(self.max_workers, len(jobs)))) as pool:
            return list(pool.map(lambda job: self._one(job[0], job[1], sampling), jobs))

    def score(self, prompts, completion_token_ids, images=None, temperature: float = 1.0) -> list[list[float]]:
        raise ScoringUnsupported("an HTTP chat API cannot re-score given tokens; use TransformersPolicy for RL")

    # --------------------------------------------------------- requests
    def payload(self, prompt: ChatPrompt, images: list[Any], sampling: SamplingParams) -> dict[str, Any]:
        """The JSON body for one prompt."""
        messages: list[dict[str, Any]] = [dict(m) for m in prompt.messages()]
        if images:

            def image_part(i: int) -> dict[str, Any]:
                return {"type": "image_url", "image_url": {"url": image_data_url(images[i])}}

            messages[-1]["content"] = content_parts(messages[-1]["content"], image_part)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": sampling.max_new_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
        }
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if self.logprobs:
            body["logprobs"] = True
        if self.server_extensions:
            body["include_stop_str_in_output"] = True
            if sampling.top_k > 0:
                body["top_k"] = sampling.top_k
            if sampling.repetition_penalty != 1.0:
                body["repetition_penalty"] = sampling.repetition_penalty
            if prompt.prefill:
                messages.append({"role": "assistant", "content": prompt.prefill})
                body["continue_final_message"] = True
                body["add_generation_prompt"] = False
        return body

    def _one(self, prompt: ChatPrompt, images: list[Any], sampling: SamplingParams) -> Completion:
        reply = self._post("/chat/completions", self.payload(prompt, images, sampling))
        choice = reply["choices"][0]
        text = choice["message"].get("content") or ""
        finish = FINISH_REASONS.get(choice.get("finish_reason") or "", "stop")
        if finish == "stop" and sampling.stop and not any(s in text for s in sampling.stop):
            text = restore_stop(prompt.prefill + text, sampling.stop)[len(prompt.prefill) :]
        logprobs = [float(t["logprob"]) for t in ((choice.get("logprobs") or {}).get("content") or [])]
        usage = reply.get("usage") or {}
        return Completion(
            text=text,
            token_ids=[],
            logprobs=logprobs,
            finish_reason=finish,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
        )

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.base_url + path,
            data=json.dumps(body).encode("utf-8"),
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key or 'none'}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", "replace")[:1000]
            raise RuntimeError(f"{self.base_url + path} answered {error.code}: {detail}") from error


def restore_stop(text: str, stop: Sequence[str]) -> str:
    """Put back the stop string a server removed: the closing tag of the last opened tag
    among ``stop`` (``</x>`` for ``<x>``), or else the first stop string."""
    best, best_at = stop[0], -1
    for s in stop:
        if s.startswith("</"):
            at = text.rfind("<" + s[2:])
            if at > best_at:
                best, best_at = s, at
    return text + best


def image_data_url(image: Any) -> str:
    """A PNG ``data:`` URL for an HxWx3 uint8 array or a PIL image."""
    return png_data_url(to_pil(image))
