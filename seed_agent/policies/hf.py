"""The transformers back end: batched sampling and teacher-forced scoring, text or VLM.

Both passes lay a batch out the same way:

- **left padding**, so every sequence's last token sits in the last column;
- **explicit position ids**, counted over real tokens only: ``p = cumsum(mask) - 1``
  (text models), or the model's 3-D multimodal rope index (Qwen2.5-VL-style VLMs, from
  ``model.model.get_rope_index``), continued by ``+1`` per generated token. (For a
  RoPE text model a uniform shift of positions changes nothing, but image positions
  are not a shift, and models with absolute positions need them too.)
- log-probs as in :mod:`seed_agent.policies.base`: ``log softmax(z / T)`` in float32.

So the log-probs recorded while sampling equal a teacher-forced re-score of the same
tokens, whatever else is in the batch (tested to 1e-4 in fp32 under ``h`` and
``h_skill``). Sampling runs its own decode loop over the model's KV cache rather than
``model.generate``, so that positions and log-probs are exactly the ones scored.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from seed_agent.chat import ChatPrompt
from seed_agent.policies.base import Completion, PromptImages, SamplingParams, check_images, render_chat, to_pil
from seed_agent.policies.frozen_states import (
    FrozenStates,
    capture_inputs,
    decoder_stack,
    logprobs_from_states,
    row_states,
)
from seed_agent.policies.prefix_store import PrefixStore, SharedPrefix
from seed_agent.policies.sampling import cut_after_stop, penalise_repeats, sample_tokens

#: A prefix shorter than this is not worth a pass of its own.
MIN_SHARED_PREFIX = 32
#: Chat-template end-of-turn tokens that also end a reply.
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>")


@dataclass
class EncodedBatch:
    """A left-padded batch ready for the model."""

    input_ids: torch.Tensor  # (B, L)
    attention_mask: torch.Tensor  # (B, L)
    position_ids: torch.Tensor  # (B, L) or (3, B, L)
    vision: dict[str, torch.Tensor]  # pixel_values, image_grid_thw (VLMs with images)


class TransformersPolicy:
    """A causal LM (or Qwen2.5-VL-style VLM) from transformers, as a :class:`Policy`.

    For a VLM, give its ``image_processor``: each image placeholder becomes the
    tokenizer's image token, repeated once per merged patch (``t*h*w / merge_size**2``),
    and the tokenizer's chat template must accept ``{"type": "image"}`` content parts.
    ``batch_size`` bounds how many sequences go through the model at once. ``share_prefix``:
    rows of a batch that start with the same tokens (the system message, the example turn,
    the env's rules) compute that prefix once, in sampling and in scoring.
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
        self.model = model
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.image_token = image_token
        self.image_token_id = tokenizer.convert_tokens_to_ids(image_token) if image_processor is not None else None
        self.batch_size = int(batch_size)
        self.tokens_per_image = int(tokens_per_image)
        self.share_prefix = bool(share_prefix)
        #: > 0: the bottom ``frozen_layers`` decoder layers never train (a learner set it), so
        #: sampling keeps each row's hidden states entering layer ``frozen_layers``
        #: (``Completion.frozen_states``) and scoring may start there (:meth:`score_ids`).
        self.frozen_layers = 0
        #: Within :meth:`keeping_frozen_states`, the bytes of states sampling may still keep.
        self._states_room: int | None = None
        #: Shared prefixes already computed, within :meth:`reusing_prefixes` (else None).
        self._prefix_store: PrefixStore | None = None
        self.pad_id = _pad_id(tokenizer)
        self.eos_ids = _eos_ids(tokenizer, model)
        params = inspect.signature(model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._rope_index = getattr(getattr(model, "model", None), "get_rope_index", None)
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

    # ---------------------------------------------------------- prompts
    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

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

    # --------------------------------------------------------- batches
    def batch(self, sequences: Sequence[Sequence[int]], vision: Sequence[dict[str, torch.Tensor]]) -> EncodedBatch:
        """Left-pad ``sequences`` and compute their position ids."""
        length = max(len(s) for s in sequences)
        input_ids = torch.full((len(sequences), length), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(sequences), length), dtype=torch.long)
        for row, seq in enumerate(sequences):
            if seq:
                input_ids[row, length - len(seq) :] = torch.tensor(list(seq), dtype=torch.long)
                attention_mask[row, length - len(seq) :] = 1
        merged = _merge_vision(vision)
        device = self.device
        input_ids, attention_mask = input_ids.to(device), attention_mask.to(device)
        merged = {k: v.to(device) for k, v in merged.items()}
        position_ids = self._positions(input_ids, attention_mask, merged)
        return EncodedBatch(input_ids, attention_mask, position_ids, merged)

    def _positions(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, vision: dict[str, torch.Tensor]
    ) -> torch.Tensor:
        if vision and self._rope_index is not None:
            token_types = (input_ids == self.image_token_id).int()
            positions, _ = self._rope_index(
                input_ids,
                mm_token_type_ids=token_types,
                image_grid_thw=vision.get("image_grid_thw"),
                attention_mask=attention_mask,
            )
            return positions
        return (attention_mask.cumsum(-1) - 1).clamp(min=0)

    def _forward(
        self,
        batch: EncodedBatch,
        logits_to_keep: int,
        cache: Any = None,
        input_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        use_cache: bool = True,
    ) -> Any:
        kwargs = {
            "input_ids": batch.input_ids if input_ids is None else input_ids,
            "attention_mask": batch.attention_mask,
            "position_ids": batch.position_ids if position_ids is None else position_ids,
            "use_cache": use_cache,
            "logits_to_keep": logits_to_keep,
            self._cache_arg: cache,
        }
        if cache is None:
            kwargs.update(batch.vision)
        return self.model(**kwargs)

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
            out += self._generate_batch(ids[chunk], vision[chunk], sampling, generator)
        return out

    def shared_prefix_length(self, sequences: Sequence[Sequence[int]], vision: Sequence[dict], own: int = 1) -> int:
        """How many leading tokens every sequence shares, when that is worth computing once: at
        least :data:`MIN_SHARED_PREFIX` tokens, more than one row, no images, and sharing on.
        Each sequence keeps at least ``own`` tokens of its own (those whose logits are read).
        0 means "do not share"."""
        if not self.share_prefix or len(sequences) < 2 or any(vision):
            return 0
        first, shortest = sequences[0], min(len(s) for s in sequences)
        n = 0
        while n < shortest - own and all(s[n] == first[n] for s in sequences):
            n += 1
        return n if n >= MIN_SHARED_PREFIX else 0

    def _prefix_forward(
        self,
        sequences: Sequence[Sequence[int]],
        vision: Sequence[dict],
        logits_to_keep: int,
        use_cache: bool,
        prefix: SharedPrefix | None = None,
    ) -> tuple[Any, EncodedBatch]:
        """The first forward pass over left-padded ``sequences``. With a shared prefix of ``P`` tokens
        (see :meth:`shared_prefix_length`) the prefix runs once (:meth:`_shared_prefix`, or given as
        ``prefix``), its keys and values are repeated for every row, and the rows' own tokens run
        after it, laid out ``[prefix | padding | own tokens]`` with positions counted over real
        tokens: the same attention, positions and logits as the unshared pass, to float error.
        Gradients flow into the prefix from every row. Returns the output and the batch of the
        rows' own tokens."""
        prefix = prefix if prefix is not None else self._shared_prefix(sequences, vision, logits_to_keep)
        if not prefix.length:
            batch = self.batch(sequences, vision)
            return self._forward(batch, logits_to_keep=logits_to_keep, use_cache=use_cache), batch
        shared, cache = prefix.length, prefix.cache
        cache.batch_repeat_interleave(len(sequences))
        rest = self.batch([list(s[shared:]) for s in sequences], [{} for _ in sequences])
        rest.position_ids = rest.position_ids + shared
        rest.attention_mask = torch.cat(
            [torch.ones_like(rest.attention_mask[:, :1]).expand(-1, shared), rest.attention_mask], dim=1
        )
        return self._forward(rest, logits_to_keep=logits_to_keep, cache=cache, use_cache=True), rest

    def _shared_prefix(
        self, sequences: Sequence[Sequence[int]], vision: Sequence[dict], logits_to_keep: int, sampling: bool = False
    ) -> SharedPrefix:
        """The prefix every row shares, with its keys and values (a cache for one row). When
        ``sampling``, also its hidden states entering layer ``frozen_layers`` (where that is set),
        and within :meth:`reusing_prefixes` a prefix computed before is taken from the store."""
        shared = self.shared_prefix_length(sequences, vision, own=logits_to_keep)
        if not shared:
            return SharedPrefix(0)
        ids = tuple(sequences[0][:shared])
        store = self._prefix_store if sampling else None
        if store is None:
            return self._prefix_pass(ids, None, sampling)
        known, common = store.closest(ids)
        base = None
        if known is not None and common == len(known):  # a stored prefix of these ids: extend it
            base = store.get(known)
        elif common >= MIN_SHARED_PREFIX:  # a longer stored prefix shares the first `common` tokens
            base = self._prefix_pass(ids[:common], None, sampling)
            store.put(ids[:common], base)  # (the store keeps a copy: `base` is ours to extend)
        if base is not None and base.length == shared:
            return base
        prefix = self._prefix_pass(ids, base, sampling)
        store.put(ids, prefix)
        return prefix

    def _prefix_pass(self, ids: tuple[int, ...], base: SharedPrefix | None, sampling: bool) -> SharedPrefix:
        """The one-row pass over prefix ``ids``, or over those after ``base`` (whose cache it
        extends); when ``sampling``, with the states entering layer ``frozen_layers``."""
        done = base.length if base is not None else 0
        batch = self.batch([list(ids[done:])], [{}])
        batch.position_ids = batch.position_ids + done
        batch.attention_mask = torch.ones((1, len(ids)), dtype=torch.long, device=batch.input_ids.device)
        stack = self._frozen_stack([{}]) if sampling else None
        with contextlib.ExitStack() as scope:
            seen = scope.enter_context(capture_inputs(stack.layers[self.frozen_layers])) if stack else None
            output = self._forward(batch, logits_to_keep=1, cache=base.cache if base else None, use_cache=True)
        states = seen[0][0] if seen else None
        if states is not None and base is not None:
            states = torch.cat([base.states, states]) if base.states is not None else None
        return SharedPrefix(len(ids), _cache_of(output), states)

    @contextlib.contextmanager
    def keeping_frozen_states(self, max_bytes: int) -> Iterator[None]:
        """Within the context, sampling keeps each row's states entering layer ``frozen_layers``
        (where a learner set it), up to ``max_bytes`` in all: once a batch's would not fit, rows
        get none and their passes run whole. Outside it (evaluation, the analyzer) none are kept."""
        self._states_room = int(max_bytes)
        try:
            yield
        finally:
            self._states_room = None

    @contextlib.contextmanager
    def reusing_prefixes(self) -> Iterator[None]:
        """Within the context the weights must not change: sampling computes each shared prefix
        once (its keys and values and its frozen states) and takes it from a store after that, over
        every ``generate`` call (a rollout's turns all start with the same system message, example
        and rules)."""
        self._prefix_store = PrefixStore()
        try:
            yield
        finally:
            self._prefix_store = None

    def _frozen_stack(self, vision: Sequence[dict]) -> Any:
        """The decoder stack when passes may start at layer ``frozen_layers`` (else None)."""
        if self.frozen_layers <= 0 or any(vision):
            return None
        return decoder_stack(self.model)

    def _generate_batch(self, ids, vision, sampling: SamplingParams, generator) -> list[Completion]:
        size = len(ids)
        stack = self._frozen_stack(vision) if self._states_room else None
        prefix = self._shared_prefix(ids, vision, logits_to_keep=1, sampling=True)
        distinct = distinct_rows(ids) if not any(vision) else (list(range(size)), None)
        with contextlib.ExitStack() as scope:
            seen = scope.enter_context(capture_inputs(stack.layers[self.frozen_layers])) if stack else None
            tokens, logprobs, entropies, finish = self._decode(ids, vision, prefix, distinct, sampling, generator)
        states: list[FrozenStates | None] = [None] * size
        if stack and (not prefix.length or prefix.states is not None):
            sources = distinct[1]  # (the prompts' pass ran once per distinct prompt)
            states = list(row_states(seen, self.frozen_layers, ids, prefix.states, tokens, sources))
            used = sum(s.own.numel() * s.own.element_size() for s in states)
            if prefix.states is not None:
                used += prefix.states.numel() * prefix.states.element_size()
            if used > self._states_room:
                states, self._states_room = [None] * size, 0  # full: keep no more
            else:
                self._states_room -= used
        completions = []
        for row in range(size):
            text = self.tokenizer.decode(tokens[row], skip_special_tokens=True)
            if finish[row] == "stop":
                text = cut_after_stop(text, sampling.stop)
            completions.append(
                Completion(
                    text=text,
                    token_ids=tokens[row],
                    logprobs=logprobs[row],
                    entropies=entropies[row],
                    finish_reason=finish[row] or "length",
                    prompt_tokens=len(ids[row]),
                    prompt_token_ids=list(ids[row]),
                    frozen_states=states[row],
                )
            )
        return completions

    def _prefill(
        self, ids, vision, prefix: SharedPrefix, distinct: tuple[list[int], list[int] | None]
    ) -> tuple[torch.Tensor, Any, EncodedBatch]:
        """The prompts' pass after ``prefix``: each row's last logits, the cache and the batch's
        layout. Identical prompts (a group's episodes at their first turn, or after the same
        actions; ``distinct`` is :func:`distinct_rows` of ``ids``) run once, and their cache and
        logits are repeated for each row."""
        distinct, rows = distinct
        if rows is None:
            output, batch = self._prefix_forward(ids, vision, logits_to_keep=1, use_cache=True, prefix=prefix)
            return output.logits[:, -1, :], _cache_of(output), batch
        once = [ids[i] for i in distinct]
        output, batch = self._prefix_forward(once, [{} for _ in once], logits_to_keep=1, use_cache=True, prefix=prefix)
        index = torch.tensor(rows, device=output.logits.device)
        cache = _cache_of(output)
        cache.batch_select_indices(index)
        batch.attention_mask, batch.position_ids = batch.attention_mask[index], batch.position_ids[index]
        return output.logits[index, -1, :], cache, batch

    def _decode(
        self, ids, vision, prefix: SharedPrefix, distinct, sampling: SamplingParams, generator
    ) -> tuple[list[list[int]], list[list[float]], list[list[float]], list[str]]:
        """The rows' prefill after ``prefix`` and the decode loop of :meth:`_generate_batch`: each
        row's sampled tokens, their log-probs, the entropy of each token's distribution, and why
        it stopped ("" while running)."""
        size, temperature = len(ids), sampling.logprob_temperature
        tokens: list[list[int]] = [[] for _ in range(size)]
        logprobs: list[list[float]] = [[] for _ in range(size)]
        entropies: list[list[float]] = [[] for _ in range(size)]
        finish = [""] * size
        stop_tail = max((len(s) for s in sampling.stop), default=0) + 8
        logits, cache, batch = self._prefill(ids, vision, prefix, distinct)
        next_pos = batch.position_ids[..., -1:] + 1
        mask = batch.attention_mask
        for step in range(sampling.max_new_tokens):
            logits = logits.float()
            chosen = sample_tokens(
                self._sampleable(penalise_repeats(logits, tokens, sampling.repetition_penalty)), sampling, generator
            )
            log_p = torch.log_softmax(logits / temperature, dim=-1)
            lp = log_p.gather(-1, chosen[:, None])[:, 0]
            entropy = -(log_p.exp() * log_p).nan_to_num().sum(dim=-1)
            for row in range(size):
                if finish[row]:
                    continue
                token = int(chosen[row])
                tokens[row].append(token)
                logprobs[row].append(float(lp[row]))
                entropies[row].append(float(entropy[row]))
                if token in self.eos_ids:
                    finish[row] = "eos"
                elif sampling.stop and self._hits_stop(tokens[row], sampling.stop, stop_tail):
                    finish[row] = "stop"
            if all(finish) or step == sampling.max_new_tokens - 1:
                break
            feed = chosen.clone()
            for row in range(size):
                if finish[row]:
                    feed[row] = self.pad_id
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            batch.attention_mask = mask
            output = self._forward(batch, 1, cache=cache, input_ids=feed[:, None], position_ids=next_pos)
            logits, cache = output.logits[:, -1, :], _cache_of(output)
            next_pos = next_pos + 1
        return tokens, logprobs, entropies, finish

    def _sampleable(self, logits: torch.Tensor) -> torch.Tensor:
        """``logits`` with a VLM's image placeholder token ruled out: a reply containing it would
        not match the images when the row is scored. (Its log-prob is recorded from the logits
        before this, as scoring computes it.)"""
        if self.image_token_id is None:
            return logits
        out = logits.clone()
        out[:, self.image_token_id] = float("-inf")
        return out

    def _hits_stop(self, tokens: list[int], stop: Sequence[str], tail_tokens: int) -> bool:
        tail = self.tokenizer.decode(tokens[-tail_tokens:], skip_special_tokens=True)
        return any(s in tail for s in stop)

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
    ) -> list[torch.Tensor]:
        """Per-token log-probs of already encoded rows, in **one** forward pass (the caller sizes
        the batch), under the caller's grad mode. ``vision``: per-row vision inputs from :meth:`encode`.
        ``states``: the rows' :class:`FrozenStates` from sampling; where every row has them, the
        pass starts at layer ``frozen_layers`` (:meth:`_score_from_states`)."""
        vision = list(vision) if vision is not None else [{} for _ in prompt_ids]
        stack = self._frozen_stack(vision) if states is not None and all(s is not None for s in states) else None
        if stack is not None:
            return self._score_from_states(stack, prompt_ids, completions, states, temperature)
        sequences = [list(p) + list(c) for p, c in zip(prompt_ids, completions, strict=True)]
        keep = max(len(c) for c in completions) + 1
        output, batch = self._prefix_forward(sequences, vision, logits_to_keep=keep, use_cache=False)
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
        """:meth:`score_ids` from the sampler's states below layer ``frozen_layers``: each row runs
        as ``prompt + completion[:-1]`` (the last token predicts nothing) through the layers above,
        with the same shared prefix and layout as the full pass."""
        sequences = [list(p) + list(c[:-1]) for p, c in zip(prompt_ids, completions, strict=True)]
        for sequence, state in zip(sequences, states, strict=True):
            if len(state) != len(sequence) or state.layer != self.frozen_layers:
                raise ValueError(
                    f"frozen states of {len(state)} tokens at layer {state.layer} for a row of {len(sequence)} "
                    f"tokens at layer {self.frozen_layers}: they belong to another row or model"
                )
        shared = self.shared_prefix_length(sequences, [{} for _ in sequences], own=max(len(c) for c in completions))
        return logprobs_from_states(
            stack, self.frozen_layers, states, completions, shared, temperature, self._cache_arg
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


def distinct_rows(ids: Sequence[Sequence[int]]) -> tuple[list[int], list[int] | None]:
    """The first row of each distinct sequence in ``ids``, and for every row the position of its
    sequence among those (None when all rows differ)."""
    first: dict[tuple[int, ...], int] = {}
    rows = [first.setdefault(tuple(seq), len(first)) for seq in ids]
    if len(first) == len(ids):
        return list(range(len(ids))), None
    distinct = [0] * len(first)
    for row, position in reversed(list(enumerate(rows))):
        distinct[position] = row
    return distinct, rows


def _cache_of(output: Any) -> Any:
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def _merge_vision(vision: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    present = [v for v in vision if v]
    if not present:
        return {}
    return {key: torch.cat([v[key] for v in present], dim=0) for key in present[0]}


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
