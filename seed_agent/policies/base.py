"""The one interface every policy back end offers.

``generate(prompts, images=None, sampling)`` returns one :class:`Completion` per prompt:
the text after the prompt's prefill, the sampled token ids, and the log-probability of
each sampled token. ``score(prompts, completion_token_ids)`` re-scores given tokens
teacher-forced (RL's old/new log-probs, and SEED's pass under ``h_skill``).

**Log-prob convention.** ``logprobs[t] = log softmax(z_t / T)[token_t]`` where ``z_t``
are the model's logits and ``T`` the sampling temperature (``T = 1`` for greedy), before
any top-p/top-k filtering. ``score(..., temperature=T)`` uses the same rule, so both
agree up to floating-point error; trainers re-score with the same ``T``.

``images``: one sequence per prompt, holding the images for that prompt's
:data:`~seed_agent.chat.IMAGE_PLACEHOLDER` marks, in order (HxWx3 uint8 arrays or PIL
images). Text-only back ends reject prompts that ask for images.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from seed_agent.chat import IMAGE_PLACEHOLDER, ChatPrompt

#: One prompt's images (numpy HxWx3 uint8 arrays or PIL images), in placeholder order.
PromptImages = Sequence[Any]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample. ``temperature=0`` means greedy."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 256
    #: Generation stops right after any of these strings appears in the new text.
    stop: tuple[str, ...] = ()
    seed: int | None = None
    #: > 1 makes tokens already generated less likely to be chosen again (CTRL's penalty: a
    #: positive logit is divided by it, a negative one multiplied). It changes the choice only:
    #: recorded log-probs follow the convention above, from the unpenalised logits.
    repetition_penalty: float = 1.0

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError("temperature must be >= 0")
        if not 0 < self.top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")
        if self.max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        if self.repetition_penalty <= 0:
            raise ValueError("repetition_penalty must be > 0")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @property
    def logprob_temperature(self) -> float:
        """The ``T`` of the log-prob convention (1 for greedy)."""
        return 1.0 if self.greedy else self.temperature


@dataclass(frozen=True)
class Completion:
    """One sampled reply. ``finish_reason``: ``stop`` (a stop string), ``eos`` or ``length``.

    ``prompt_token_ids`` are the ids the model read (local back ends; empty where the
    back end does not expose them), so a trainer can score the same row without
    tokenizing again.
    """

    text: str
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    #: Per sampled token, the entropy (nats) of the distribution the log-probs are taken from,
    #: ``softmax(z / T)`` (local back ends; empty where the back end does not expose it).
    entropies: list[float] = field(default_factory=list)
    finish_reason: str = "length"
    prompt_tokens: int = 0
    prompt_token_ids: list[int] = field(default_factory=list)
    #: The hidden states below the first trained layer, kept by a sampler that shares its weights
    #: with a learner training only the top layers (:mod:`seed_agent.policies.engine.frozen_states`).
    frozen_states: Any = field(default=None, repr=False, compare=False)


@runtime_checkable
class Policy(Protocol):
    """What rollouts and evaluation need from a model."""

    def generate(
        self,
        prompts: Sequence[ChatPrompt],
        images: Sequence[PromptImages | None] | None = None,
        sampling: SamplingParams | None = None,
    ) -> list[Completion]: ...

    def score(
        self,
        prompts: Sequence[ChatPrompt],
        completion_token_ids: Sequence[Sequence[int]],
        images: Sequence[PromptImages | None] | None = None,
        temperature: float = 1.0,
    ) -> list[list[float]]: ...


class ScoringUnsupported(NotImplementedError):
    """This back end cannot re-score tokens teacher-forced (e.g. a remote API)."""


def reusing_prefixes(policy: Any) -> contextlib.AbstractContextManager:
    """``policy.reusing_prefixes()`` where the back end has one (the transformers back end: each shared
    prompt prefix computed once over ``generate`` calls), else a context that does nothing. Wrap a
    stretch of sampling in which the weights do not change."""
    method = getattr(policy, "reusing_prefixes", None)
    return method() if method is not None else contextlib.nullcontext()


def keeping_frozen_states(policy: Any, max_bytes: int) -> contextlib.AbstractContextManager:
    """``policy.keeping_frozen_states(max_bytes)`` where the back end has it (the transformers back
    end: sampling keeps each row's hidden states below the first trained layer), else a context that
    does nothing."""
    method = getattr(policy, "keeping_frozen_states", None)
    return method(max_bytes) if method is not None else contextlib.nullcontext()


def check_images(
    prompts: Sequence[ChatPrompt], images: Sequence[PromptImages | None] | None, accepts_images: bool
) -> list[list[Any]]:
    """Per-prompt image lists, checked against the prompts' placeholders."""
    if images is not None and len(images) != len(prompts):
        raise ValueError(f"got {len(images)} image lists for {len(prompts)} prompts")
    out: list[list[Any]] = []
    for i, prompt in enumerate(prompts):
        given = list(images[i] or []) if images is not None else []
        wanted = prompt.image_count()
        if wanted != len(given):
            raise ValueError(f"prompt {i} has {wanted} image placeholder(s) but {len(given)} image(s) were given")
        if wanted and not accepts_images:
            raise ValueError("this policy is text-only; build the prompt with visual=False")
        out.append(given)
    return out


def content_parts(text: str, image_part: Callable[[int], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """``text`` as chat-template content parts: its text pieces, with ``image_part(i)`` at the
    i-th :data:`~seed_agent.chat.IMAGE_PLACEHOLDER` (default ``{"type": "image"}``)."""
    parts: list[dict[str, Any]] = []
    for i, piece in enumerate(text.split(IMAGE_PLACEHOLDER)):
        if i:
            parts.append(image_part(i - 1) if image_part is not None else {"type": "image"})
        if piece:
            parts.append({"type": "text", "text": piece})
    return parts


def render_chat(tokenizer: Any, prompt: ChatPrompt, with_images: bool) -> str:
    """The prompt as a local model reads it: chat template, assistant header, prefill.
    ``with_images`` writes image placeholders as image parts for a VLM's template."""
    messages: list[dict[str, Any]] = list(prompt.messages())
    if with_images:
        messages = [{"role": m["role"], "content": content_parts(m["content"])} for m in messages]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + prompt.prefill


def to_pil(image: Any) -> Any:
    """An RGB PIL image from an HxWx3 uint8 array or a PIL image."""
    import numpy as np
    from PIL import Image

    if not isinstance(image, Image.Image):
        image = Image.fromarray(np.asarray(image, dtype=np.uint8))
    return image.convert("RGB")
