"""The transformers back end: the model, its tokenizer and chat template, and teacher-forced
scoring, text or VLM. Sampling and the batch layout both passes share live in the generation
engine (:mod:`seed_agent.policies.engine.generation`), with its speed-ups: the policy's
:attr:`~TransformersPolicy.engine` is public, and its switches are set there (``engine.layout``:
what a batch shares, :mod:`seed_agent.policies.engine.layout`; ``engine.frozen_layers``).

So the log-probs recorded while sampling equal a teacher-forced re-score of the same
tokens, whatever else is in the batch (tested to 1e-4 in fp32 under ``h`` and
``h_skill``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Sequence
from typing import Any

import torch

from seed_agent.chat import ChatPrompt
from seed_agent.policies.base import Completion, PromptImages, SamplingParams, check_images, render_chat, to_pil
from seed_agent.policies.engine.frozen_states import FrozenStates, logprobs_from_states
from seed_agent.policies.engine.generation import GenerationEngine
from seed_agent.policies.engine.layout import GroupLayout

#: The engine's types that appear in this back end's public API (the rows a learner scores carry
#: :class:`FrozenStates`; :class:`GroupLayout` is what ``engine.layout`` answers).
__all__ = ["FrozenStates", "GroupLayout", "TransformersPolicy"]

#: Chat-template end-of-turn tokens that also end a reply.
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>")


class TransformersPolicy:
    """A causal LM (or Qwen2.5-VL-style VLM) from transformers, as a :class:`Policy`.

    For a VLM, give its ``image_processor``: each image placeholder becomes the
    tokenizer's image token, repeated once per merged patch (``t*h*w / merge_size**2``),
    and the tokenizer's chat template must accept ``{"type": "image"}`` content parts.
    ``batch_size`` bounds how many sequences go through the model at once. ``share_prefix``:
    rows of a batch that start with the same tokens (the system message, the example turn,
    the env's rules) compute that prefix once, in sampling and in scoring (the engine's
    ``layout.share_prefix`` afterwards).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        image_processor: Any = None,
        image_token: str = "<|image_pad|>",
        batch_size: int = 8,
        tokens_per_image: int = 256,
        share_prefix: bool = True,
    ) -> None:
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.image_token = image_token
        self.batch_size = int(batch_size)
        self.tokens_per_image = int(tokens_per_image)
        #: Sampling and the batch layout, with the speed-ups (shared prefixes, frozen states); its
        #: switches are public (:class:`~seed_agent.policies.engine.generation.GenerationEngine`).
        self.engine = GenerationEngine(
            model,
            lambda ids: tokenizer.decode(ids, skip_special_tokens=True),
            pad_id=_pad_id(tokenizer),
            eos_ids=_eos_ids(tokenizer, model),
            image_token_id=tokenizer.convert_tokens_to_ids(image_token) if image_processor is not None else None,
            share_prefix=share_prefix,
        )
        head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
        if head is not None and not getattr(head, "_contiguous_input", False):  # once per model
            head.register_forward_pre_hook(_contiguous_input)
            head._contiguous_input = True

    @classmethod
    def from_pretrained(
        cls, path: str, *, dtype: str = "float32", device: str = "cpu", vlm: bool = False, **kwargs: Any
    ) -> TransformersPolicy:
        """Load a model folder (or hub id, where the hub is reachable); ``vlm`` for Qwen2.5-VL-style models."""
        import transformers

        torch_dtype = getattr(torch, dtype)
        tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        if vlm:
            model = transformers.AutoModelForImageTextToText.from_pretrained(path, dtype=torch_dtype)
            image_processor = transformers.AutoImageProcessor.from_pretrained(path)
            _use_processor_chat_template(tokenizer, path)
            return cls(model.to(device).eval(), tokenizer, image_processor=image_processor, **kwargs)
        model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype)
        return cls(model.to(device).eval(), tokenizer, **kwargs)

    @property
    def model(self) -> Any:
        """The transformers model (the engine runs it; replacing it, as merging adapters does,
        replaces it there)."""
        return self.engine.model

    @model.setter
    def model(self, value: Any) -> None:
        self.engine.model = value

    # ---------------------------------------------------------- prompts
    @property
    def device(self) -> torch.device:
        return self.engine.device

    @property
    def context_length(self) -> int:
        config = self.model.config
        config = getattr(config, "text_config", None) or config
        return int(getattr(config, "max_position_embeddings", 2048))

    def render(self, prompt: ChatPrompt) -> str:
        """The prompt as the model reads it: chat template, assistant header, prefill."""
        return render_chat(self.tokenizer, prompt, with_images=self.image_processor is not None)

    def count_tokens(self, prompt: ChatPrompt) -> int:
        """Prompt length in tokens; each image counts as ``tokens_per_image``."""
        ids = self.tokenizer(self.render(prompt), add_special_tokens=False)["input_ids"]
        return len(ids) + prompt.image_count() * max(0, self.tokens_per_image - 1)

    def count_text_tokens(self, text: str) -> int:
        """The tokens of ``text`` as the model writes it in a reply (no special tokens added)."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def encode(
        self,
        prompts: Sequence[ChatPrompt],
        images: Sequence[PromptImages | None] | None = None,
    ) -> tuple[list[list[int]], list[dict[str, torch.Tensor]]]:
        """Token ids of each prompt (image placeholders expanded), and each prompt's vision inputs."""
        image_lists = check_images(prompts, images, accepts_images=self.image_processor is not None)
        ids, vision = [], []
        for prompt, imgs in zip(prompts, image_lists, strict=True):
            text = self.render(prompt)
            inputs: dict[str, torch.Tensor] = {}
            if imgs:
                inputs = dict(self.image_processor(images=[to_pil(i) for i in imgs], return_tensors="pt"))
                text = self._expand_image_tokens(text, inputs["image_grid_thw"])
                inputs = {"pixel_values": inputs["pixel_values"], "image_grid_thw": inputs["image_grid_thw"]}
            ids.append(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            vision.append(inputs)
        return ids, vision

    def _expand_image_tokens(self, text: str, grid_thw: torch.Tensor) -> str:
        """One image token per merged patch: ``t * h * w / merge_size**2`` for each image."""
        pieces = text.split(self.image_token)
        if len(pieces) - 1 != len(grid_thw):
            raise ValueError(f"the chat template wrote {len(pieces) - 1} image token(s) for {len(grid_thw)} image(s)")
        merge = int(getattr(self.image_processor, "merge_size", 1))
        out = [pieces[0]]
        for grid, piece in zip(grid_thw, pieces[1:], strict=True):
            out.append(self.image_token * (int(grid.prod()) // merge**2) + piece)
        return "".join(out)

    # ------------------------------------------ the back end's own contexts
    def keeping_frozen_states(self, max_bytes: int) -> contextlib.AbstractContextManager[None]:
        """Within the context, sampling keeps the rows' frozen states, up to ``max_bytes``
        (:meth:`GenerationEngine.keeping_frozen_states`; back ends without it are given a context that
        does nothing by :func:`seed_agent.policies.base.keeping_frozen_states`)."""
        return self.engine.keeping_frozen_states(max_bytes)

    def reusing_prefixes(self) -> contextlib.AbstractContextManager[None]:
        """Within the context (weights unchanged), sampling computes each shared prefix once
        (:meth:`GenerationEngine.reusing_prefixes`; see :func:`seed_agent.policies.base.reusing_prefixes`)."""
        return self.engine.reusing_prefixes()

    # -------------------------------------------------------- generate
    @torch.inference_mode()
    def generate(
        self,
        prompts: Sequence[ChatPrompt],
        images: Sequence[PromptImages | None] | None = None,
        sampling: SamplingParams | None = None,
    ) -> list[Completion]:
        sampling = sampling or SamplingParams()
        ids, vision = self.encode(prompts, images)
        generator = None
        if sampling.seed is not None:
            generator = torch.Generator(device=self.device).manual_seed(sampling.seed)
        out: list[Completion] = []
        for start in range(0, len(ids), self.batch_size):
            chunk = slice(start, start + self.batch_size)
            out += self.engine.generate_batch(ids[chunk], vision[chunk], sampling, generator)
        return out

    # ----------------------------------------------------------- score
    def completion_logprobs(
        self,
        prompts: Sequence[ChatPrompt],
        completion_token_ids: Sequence[Sequence[int]],
        images: Sequence[PromptImages | None] | None = None,
        temperature: float = 1.0,
    ) -> list[torch.Tensor]:
        """Per-token log-probs of each completion given its prompt, as tensors.

        Runs under the caller's grad mode, so trainers can back-propagate through it.
        """
        if len(completion_token_ids) != len(prompts):
            raise ValueError(f"got {len(completion_token_ids)} completions for {len(prompts)} prompts")
        ids, vision = self.encode(prompts, images)
        out: list[torch.Tensor] = []
        for start in range(0, len(ids), self.batch_size):
            chunk = slice(start, start + self.batch_size)
            out += self.score_ids(
                ids[chunk], [list(c) for c in completion_token_ids[chunk]], vision[chunk], temperature
            )
        return out

    def score_ids(
        self,
        prompt_ids: Sequence[Sequence[int]],
        completions: Sequence[Sequence[int]],
        vision: Sequence[dict[str, torch.Tensor]] | None = None,
        temperature: float = 1.0,
        states: Sequence[FrozenStates | None] | None = None,
        groups: Sequence[Hashable | None] | None = None,
    ) -> list[torch.Tensor]:
        """Per-token log-probs of already encoded rows, in **one** forward pass (the caller sizes
        the batch), under the caller's grad mode. ``vision``: per-row vision inputs from :meth:`encode`.
        ``states``: the rows' :class:`FrozenStates` from sampling; where every row has them, the
        pass starts at the engine's layer ``frozen_layers`` (:meth:`_score_from_states`; ``groups``
        unused). ``groups``: a label per row; rows labelled alike compute their common prefix once
        (:meth:`BatchLayout.group_layout`; not with images, where every row runs whole)."""
        vision = list(vision) if vision is not None else [{} for _ in prompt_ids]
        stack = self.engine.frozen_stack(vision) if states is not None and all(s is not None for s in states) else None
        if stack is not None:
            return self._score_from_states(stack, prompt_ids, completions, states, temperature)
        sequences = [list(p) + list(c) for p, c in zip(prompt_ids, completions, strict=True)]
        keep = max(len(c) for c in completions) + 1
        output, batch = self.engine.prefix_forward(
            sequences, vision, logits_to_keep=keep, use_cache=False, groups=groups
        )
        logits = output.logits[:, :-1, :].float() / temperature
        targets = batch.input_ids[:, -keep + 1 :] if keep > 1 else batch.input_ids[:, :0]
        token_lp = torch.log_softmax(logits, dim=-1).gather(-1, targets[..., None])[..., 0]
        return [token_lp[row, token_lp.shape[1] - len(c) :] for row, c in enumerate(completions)]

    def _score_from_states(
        self,
        stack: Any,
        prompt_ids: Sequence[Sequence[int]],
        completions: Sequence[Sequence[int]],
        states: Sequence[FrozenStates],
        temperature: float,
    ) -> list[torch.Tensor]:
        """:meth:`score_ids` from the sampler's states below the engine's ``frozen_layers``: each row runs
        as ``prompt + completion[:-1]`` (the last token predicts nothing) through the layers above,
        with the same shared prefix and layout as the full pass."""
        engine = self.engine
        sequences = [list(p) + list(c[:-1]) for p, c in zip(prompt_ids, completions, strict=True)]
        for sequence, state in zip(sequences, states, strict=True):
            if len(state) != len(sequence) or state.layer != engine.frozen_layers:
                raise ValueError(
                    f"frozen states of {len(state)} tokens at layer {state.layer} for a row of {len(sequence)} "
                    f"tokens at layer {engine.frozen_layers}: they belong to another row or model"
                )
        own = max(len(c) for c in completions)
        shared = engine.layout.shared_prefix_length(sequences, [{} for _ in sequences], own=own)
        return logprobs_from_states(
            stack, engine.frozen_layers, states, completions, shared, temperature, engine.cache_arg
        )

    @torch.inference_mode()
    def score(
        self,
        prompts: Sequence[ChatPrompt],
        completion_token_ids: Sequence[Sequence[int]],
        images: Sequence[PromptImages | None] | None = None,
        temperature: float = 1.0,
    ) -> list[list[float]]:
        return [t.tolist() for t in self.completion_logprobs(prompts, completion_token_ids, images, temperature)]


def _use_processor_chat_template(tokenizer: Any, path: str) -> None:
    """VLM folders often keep the image-aware chat template beside the processor, not in the
    tokenizer config: use it (``chat_template.jinja`` or ``chat_template.json``) when present."""
    import json
    from pathlib import Path

    folder = Path(path)
    if (folder / "chat_template.jinja").is_file():
        tokenizer.chat_template = (folder / "chat_template.jinja").read_text(encoding="utf-8")
    elif (folder / "chat_template.json").is_file():
        tokenizer.chat_template = json.loads((folder / "chat_template.json").read_text(encoding="utf-8"))[
            "chat_template"
        ]


def _contiguous_input(module: Any, args: tuple) -> tuple | None:
    """The LM head's input, made contiguous where it is not float32. The model slices the last
    ``logits_to_keep`` positions out of its hidden states; in bf16 torch's matmul multiplies that
    strided slice as a batched matmul over a copy of the head's weight per row (for a batch of 16,
    16 copies of a 49152 x 576 matrix), which took a third of a prefill's time. A contiguous input
    is one matmul. (float32 folds the slice into one matmul itself: left as it is.)"""
    if args[0].dtype == torch.float32:
        return None
    return (args[0].contiguous(), *args[1:])


def _pad_id(tokenizer: Any) -> int:
    for value in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0):
        if value is not None:
            return int(value)
    return 0


def _eos_ids(tokenizer: Any, model: Any) -> frozenset[int]:
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    config_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(config_eos, int):
        ids.add(config_eos)
    elif isinstance(config_eos, (list, tuple)):
        ids.update(int(i) for i in config_eos)
    vocab = tokenizer.get_vocab()
    ids.update(vocab[t] for t in END_OF_TURN_TOKENS if t in vocab)
    return frozenset(ids)
