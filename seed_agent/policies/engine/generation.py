"""The forward passes of a transformers model over left-padded batches, and the decode loop.

Both sampling and scoring lay a batch out the same way:

- **left padding**, so every sequence's last token sits in the last column;
- **explicit position ids**, counted over real tokens only: ``p = cumsum(mask) - 1``
  (text models), or the model's 3-D multimodal rope index (Qwen2.5-VL-style VLMs, from
  ``model.model.get_rope_index``), continued by ``+1`` per generated token. (For a
  RoPE text model a uniform shift of positions changes nothing, but image positions
  are not a shift, and models with absolute positions need them too.)
- log-probs as in :mod:`seed_agent.policies.base`: ``log softmax(z / T)`` in float32.

Sampling runs its own decode loop over the model's KV cache rather than ``model.generate``, so
that positions and log-probs are exactly the ones scored.

The speed-ups, each switched here and nowhere else:

- ``layout.share_prefix``: rows that start with the same tokens compute that prefix once, in
  sampling and in scoring (:meth:`GenerationEngine.prefix_forward`);
- ``layout.share_groups``: in scoring, rows labelled as one group (the steps of an episode under
  ``h_skill``) also compute their common prefix past the batch's once;

both answered by :attr:`GenerationEngine.layout` (:mod:`seed_agent.policies.engine.layout`), which
alone decides what a batch shares;
- :meth:`GenerationEngine.reusing_prefixes`: within it, sampling keeps each shared prefix over
  calls (:mod:`seed_agent.policies.engine.prefix_store`);
- :meth:`GenerationEngine.keeping_frozen_states`: within it, sampling keeps each row's hidden
  states entering layer ``frozen_layers``, where scoring may start
  (:mod:`seed_agent.policies.engine.frozen_states`);
- identical prompts in a sampling batch (a group at its first turn) run their prefill once.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from seed_agent.policies.base import Completion, SamplingParams
from seed_agent.policies.engine.frozen_states import FrozenStates, capture_inputs, decoder_stack, row_states
from seed_agent.policies.engine.layout import MIN_SHARED_PREFIX, BatchLayout, GroupLayout
from seed_agent.policies.engine.prefix_store import PrefixStore, SharedPrefix
from seed_agent.policies.engine.sampling import cut_after_stop, penalise_repeats, sample_tokens

#: Rows per pass of :meth:`GenerationEngine.states_of`.
STATES_ROWS = 8


@dataclass
class EncodedBatch:
    """A left-padded batch ready for the model."""

    input_ids: torch.Tensor  # (B, L)
    attention_mask: torch.Tensor  # (B, L)
    position_ids: torch.Tensor  # (B, L) or (3, B, L)
    vision: dict[str, torch.Tensor]  # pixel_values, image_grid_thw (VLMs with images)


class GenerationEngine:
    """Batched passes of ``model`` (see the module docstring): the layout, shared prefixes, frozen
    states, and sampling. ``decode`` turns token ids into text (for stop strings and replies).

    Its public switches: :attr:`layout` (what a batch shares: ``layout.share_prefix``,
    ``layout.share_groups``), :attr:`frozen_layers`, and the contexts :meth:`reusing_prefixes` and
    :meth:`keeping_frozen_states`."""

    def __init__(
        self,
        model: Any,
        decode: Any,
        *,
        pad_id: int,
        eos_ids: frozenset[int],
        image_token_id: int | None = None,
        share_prefix: bool = True,
    ) -> None:
        self.model = model
        self.decode = decode
        self.pad_id = pad_id
        self.eos_ids = eos_ids
        self.image_token_id = image_token_id
        #: What a batch shares, and whether: the one owner of the layout questions
        #: (:class:`~seed_agent.policies.engine.layout.BatchLayout`).
        self.layout = BatchLayout(share_prefix=share_prefix)
        #: > 0: the bottom ``frozen_layers`` decoder layers never train (a learner set it), so
        #: sampling keeps each row's hidden states entering layer ``frozen_layers``
        #: (``Completion.frozen_states``) and scoring may start there.
        self.frozen_layers = 0
        #: Within :meth:`keeping_frozen_states`, the bytes of states sampling may still keep.
        self.states_room: int | None = None
        #: Greedy decoding drops a row from the batch once it stops (the others decode without it).
        self.prune_finished = True
        #: Shared prefixes already computed, within :meth:`reusing_prefixes` (else None).
        self.prefix_store: PrefixStore | None = None
        params = inspect.signature(model.forward).parameters
        self.cache_arg = "cache" if "cache" in params else "past_key_values"
        self._rope_index = getattr(getattr(model, "model", None), "get_rope_index", None)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    # ----------------------------------------------------------- layout
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

    def forward(
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
            self.cache_arg: cache,
        }
        if cache is None:
            kwargs.update(batch.vision)
        return self.model(**kwargs)

    # --------------------------------------------------- shared prefixes
    def prefix_forward(
        self,
        sequences: Sequence[Sequence[int]],
        vision: Sequence[dict],
        logits_to_keep: int,
        use_cache: bool,
        prefix: SharedPrefix | None = None,
        groups: Sequence[Hashable | None] | None = None,
    ) -> tuple[Any, EncodedBatch]:
        """The first forward pass over left-padded ``sequences``. With a shared prefix of ``P`` tokens
        (:meth:`BatchLayout.shared_prefix_length`) the prefix runs once (:meth:`shared_prefix`, or given as
        ``prefix``), its keys and values are repeated for every row, and the rows' own tokens run
        after it, laid out ``[prefix | padding | own tokens]`` with positions counted over real
        tokens: the same attention, positions and logits as the unshared pass, to float error.
        Gradients flow into the prefix from every row. ``groups`` (a label per row): rows labelled
        alike also compute their common prefix past ``P`` once (:meth:`BatchLayout.group_layout`,
        :meth:`_grouped_forward`). Returns the output and the batch of the rows' own tokens."""
        grouped = groups and prefix is None
        layout = self.layout.group_layout(sequences, vision, groups, logits_to_keep) if grouped else None
        prefix = prefix if prefix is not None else self.shared_prefix(sequences, vision, logits_to_keep)
        if layout is not None:  # (its batch prefix is ``prefix``: both from shared_prefix_length)
            return self._grouped_forward(sequences, prefix, layout, logits_to_keep)
        if not prefix.length:
            batch = self.batch(sequences, vision)
            return self.forward(batch, logits_to_keep=logits_to_keep, use_cache=use_cache), batch
        shared, cache = prefix.length, prefix.cache
        cache.batch_repeat_interleave(len(sequences))
        rest = self.batch([list(s[shared:]) for s in sequences], [{} for _ in sequences])
        rest.position_ids = rest.position_ids + shared
        rest.attention_mask = torch.cat(
            [torch.ones_like(rest.attention_mask[:, :1]).expand(-1, shared), rest.attention_mask], dim=1
        )
        return self.forward(rest, logits_to_keep=logits_to_keep, cache=cache, use_cache=True), rest

    def _grouped_forward(
        self, sequences: Sequence[Sequence[int]], prefix: SharedPrefix, layout: GroupLayout, logits_to_keep: int
    ) -> tuple[Any, EncodedBatch]:
        """:meth:`prefix_forward` with each group's segment computed once: one row per group runs
        its segment after ``prefix`` (the segment's cache then holds ``[prefix | padding |
        segment]``), each row takes its group's keys and values, and its own tokens run after
        them, laid out ``[prefix | padding | segment | padding | own tokens]`` with positions
        counted over real tokens. Same output and returned batch as :meth:`prefix_forward`."""
        heads = [sequences[rows[0]][: layout.ends[rows[0]]] for rows in layout.groups]
        none = [{} for _ in heads]
        output, segments = self.prefix_forward(heads, none, logits_to_keep=1, use_cache=True, prefix=prefix)
        index = torch.tensor(layout.group_of_rows(), device=segments.attention_mask.device)
        cache = cache_of(output)
        cache.batch_select_indices(index)
        own = [list(s[end:]) for s, end in zip(sequences, layout.ends, strict=True)]
        rest = self.batch(own, [{} for _ in own])
        starts = torch.tensor(layout.ends, dtype=rest.position_ids.dtype, device=rest.position_ids.device)
        rest.position_ids = rest.position_ids + starts[:, None]
        rest.attention_mask = torch.cat([segments.attention_mask[index], rest.attention_mask], dim=1)
        return self.forward(rest, logits_to_keep=logits_to_keep, cache=cache, use_cache=True), rest

    def shared_prefix(
        self, sequences: Sequence[Sequence[int]], vision: Sequence[dict], logits_to_keep: int, sampling: bool = False
    ) -> SharedPrefix:
        """The prefix every row shares, with its keys and values (a cache for one row). When
        ``sampling``, also its hidden states entering layer ``frozen_layers`` (where that is set),
        and within :meth:`reusing_prefixes` a prefix computed before is taken from the store."""
        shared = self.layout.shared_prefix_length(sequences, vision, own=logits_to_keep)
        if not shared:
            return SharedPrefix(0)
        ids = tuple(sequences[0][:shared])
        store = self.prefix_store if sampling else None
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
        stack = self.frozen_stack([{}]) if sampling else None
        with contextlib.ExitStack() as scope:
            seen = scope.enter_context(capture_inputs(stack.layers[self.frozen_layers])) if stack else None
            output = self.forward(batch, logits_to_keep=1, cache=base.cache if base else None, use_cache=True)
        states = seen[0][0] if seen else None
        if states is not None and base is not None:
            states = torch.cat([base.states, states]) if base.states is not None else None
        return SharedPrefix(len(ids), cache_of(output), states)

    @contextlib.contextmanager
    def reusing_prefixes(self) -> Iterator[None]:
        """Within the context the weights must not change: sampling computes each shared prefix
        once (its keys and values and its frozen states) and takes it from a store after that, over
        every ``generate`` call (a rollout's turns all start with the same system message, example
        and rules)."""
        self.prefix_store = PrefixStore()
        try:
            yield
        finally:
            self.prefix_store = None

    # ----------------------------------------------------- frozen states
    @contextlib.contextmanager
    def keeping_frozen_states(self, max_bytes: int) -> Iterator[None]:
        """Within the context, sampling keeps each row's states entering layer ``frozen_layers``
        (where a learner set it), up to ``max_bytes`` in all: once a batch's would not fit, rows
        get none and their passes run whole. Outside it (evaluation, the analyzer) none are kept."""
        self.states_room = int(max_bytes)
        try:
            yield
        finally:
            self.states_room = None

    def frozen_stack(self, vision: Sequence[dict]) -> Any:
        """The decoder stack when passes may start at layer ``frozen_layers`` (else None)."""
        if self.frozen_layers <= 0 or any(vision):
            return None
        return decoder_stack(self.model)

    @torch.no_grad()
    def states_of(
        self, prompt_ids: Sequence[Sequence[int]], completions: Sequence[Sequence[int]]
    ) -> list[FrozenStates] | None:
        """Each row's hidden states entering layer ``frozen_layers``, as sampling keeps them
        (:class:`FrozenStates` of ``prompt + completion[:-1]``), from a pass over the frozen layers
        only: the pass stops where the first trained layer begins. For rows trained more than once
        (Stage 1's epochs), so that every pass with gradient starts there. The prefix every row
        shares runs once (its states shared by every row, not copied); the rows' own tokens run
        :data:`STATES_ROWS` at a time, in order of length (less padding). None where no layer is
        frozen (or the model's stack does not allow a pass from a middle layer)."""
        stack = self.frozen_stack([{}])
        if stack is None:
            return None
        sequences = [list(p) + list(c[:-1]) for p, c in zip(prompt_ids, completions, strict=True)]
        first_trained = stack.layers[self.frozen_layers]
        shared = self.layout.shared_prefix_length(sequences, [{} for _ in sequences])
        prefix_cache = None
        prefix_states = torch.zeros((0, stack.config.hidden_size), dtype=stack.head.weight.dtype, device=self.device)
        if shared:
            from transformers import DynamicCache

            prefix_cache = DynamicCache(config=stack.config)  # filled for the frozen layers only
            batch = self.batch([sequences[0][:shared]], [{}])
            with capture_inputs(first_trained) as seen, _stopping_at(first_trained):
                self.forward(batch, logits_to_keep=1, cache=prefix_cache, use_cache=True)
            prefix_states = seen[0][0]
        out: list[FrozenStates | None] = [None] * len(sequences)
        order = sorted(range(len(sequences)), key=lambda r: len(sequences[r]))
        for start in range(0, len(order), STATES_ROWS):
            rows = order[start : start + STATES_ROWS]
            chunk = [sequences[r] for r in rows]
            with capture_inputs(first_trained) as seen, _stopping_at(first_trained):
                if prefix_cache is None:
                    self.forward(self.batch(chunk, [{} for _ in chunk]), logits_to_keep=1, use_cache=False)
                else:  # (the pass extends and repeats the prefix's cache in place: each chunk gets a copy)
                    prefix = SharedPrefix(shared, copy.deepcopy(prefix_cache))
                    self.prefix_forward(chunk, [{} for _ in chunk], logits_to_keep=1, use_cache=True, prefix=prefix)
            hidden = seen[0]
            for place, (row, seq) in enumerate(zip(rows, chunk, strict=True)):
                own = hidden[place, hidden.shape[1] - (len(seq) - shared) :].clone()
                out[row] = FrozenStates(self.frozen_layers, prefix_states, own)
        return out

    # ---------------------------------------------------------- sampling
    def generate_batch(
        self, ids: Sequence[Sequence[int]], vision: Sequence[dict], sampling: SamplingParams, generator: Any
    ) -> list[Completion]:
        """Sample a reply for each row of one batch of encoded prompts."""
        size = len(ids)
        stack = self.frozen_stack(vision) if self.states_room else None
        prefix = self.shared_prefix(ids, vision, logits_to_keep=1, sampling=True)
        distinct = distinct_rows(ids) if not any(vision) else (list(range(size)), None)
        with contextlib.ExitStack() as scope:
            seen = scope.enter_context(capture_inputs(stack.layers[self.frozen_layers])) if stack else None
            prune = self.prune_finished and sampling.greedy and seen is None
            tokens, logprobs, entropies, finish = self._decode(
                ids, vision, prefix, distinct, sampling, generator, prune=prune
            )
        states: list[FrozenStates | None] = [None] * size
        if stack and (not prefix.length or prefix.states is not None):
            sources = distinct[1]  # (the prompts' pass ran once per distinct prompt)
            states = list(row_states(seen, self.frozen_layers, ids, prefix.states, tokens, sources))
            used = sum(s.own.numel() * s.own.element_size() for s in states)
            if prefix.states is not None:
                used += prefix.states.numel() * prefix.states.element_size()
            if used > self.states_room:
                states, self.states_room = [None] * size, 0  # full: keep no more
            else:
                self.states_room -= used
        completions = []
        for row in range(size):
            text = self.decode(tokens[row])
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
            output, batch = self.prefix_forward(ids, vision, logits_to_keep=1, use_cache=True, prefix=prefix)
            return output.logits[:, -1, :], cache_of(output), batch
        once = [ids[i] for i in distinct]
        output, batch = self.prefix_forward(once, [{} for _ in once], logits_to_keep=1, use_cache=True, prefix=prefix)
        index = torch.tensor(rows, device=output.logits.device)
        cache = cache_of(output)
        cache.batch_select_indices(index)
        batch.attention_mask, batch.position_ids = batch.attention_mask[index], batch.position_ids[index]
        return output.logits[index, -1, :], cache, batch

    def _decode(
        self, ids, vision, prefix: SharedPrefix, distinct, sampling: SamplingParams, generator, prune: bool = False
    ) -> tuple[list[list[int]], list[list[float]], list[list[float]], list[str]]:
        """The rows' prefill after ``prefix`` and the decode loop of :meth:`generate_batch`: each
        row's sampled tokens, their log-probs, the entropy of each token's distribution, and why
        it stopped ("" while running). With ``prune``, a row that stops leaves the batch (its cache
        rows are dropped), so the rest decode without it; only where that changes no draw (greedy)
        and no hidden states are being kept per position."""
        size, temperature = len(ids), sampling.logprob_temperature
        tokens: list[list[int]] = [[] for _ in range(size)]
        logprobs: list[list[float]] = [[] for _ in range(size)]
        entropies: list[list[float]] = [[] for _ in range(size)]
        finish = [""] * size
        stop_tail = max((len(s) for s in sampling.stop), default=0) + 8
        logits, cache, batch = self._prefill(ids, vision, prefix, distinct)
        next_pos = batch.position_ids[..., -1:] + 1
        mask = batch.attention_mask
        live = list(range(size))  # the rows in the batch's tensors, in order
        for step in range(sampling.max_new_tokens):
            logits = logits.float()
            previous = [tokens[row] for row in live]
            chosen = sample_tokens(
                self._sampleable(penalise_repeats(logits, previous, sampling.repetition_penalty)), sampling, generator
            )
            log_p = torch.log_softmax(logits / temperature, dim=-1)
            lp = log_p.gather(-1, chosen[:, None])[:, 0]
            entropy = -(log_p.exp() * log_p).nan_to_num().sum(dim=-1)
            for i, row in enumerate(live):
                if finish[row]:
                    continue
                token = int(chosen[i])
                tokens[row].append(token)
                logprobs[row].append(float(lp[i]))
                entropies[row].append(float(entropy[i]))
                if token in self.eos_ids:
                    finish[row] = "eos"
                elif sampling.stop and self._hits_stop(tokens[row], sampling.stop, stop_tail):
                    finish[row] = "stop"
            if all(finish) or step == sampling.max_new_tokens - 1:
                break
            if prune and any(finish[row] for row in live):
                keep = [i for i, row in enumerate(live) if not finish[row]]
                index = torch.tensor(keep, device=chosen.device)
                cache.batch_select_indices(index)
                mask, chosen = mask[index], chosen[index]
                next_pos = next_pos.index_select(-2, index)  # (rows, 1), or (3, rows, 1) with M-RoPE
                live = [live[i] for i in keep]
            feed = chosen.clone()
            for i, row in enumerate(live):
                if finish[row]:
                    feed[i] = self.pad_id
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            batch.attention_mask = mask
            output = self.forward(batch, 1, cache=cache, input_ids=feed[:, None], position_ids=next_pos)
            logits, cache = output.logits[:, -1, :], cache_of(output)
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
        tail = self.decode(tokens[-tail_tokens:])
        return any(s in tail for s in stop)


class _Stop(Exception):
    """Raised to end a forward pass at a layer (:func:`_stopping_at`)."""


@contextlib.contextmanager
def _stopping_at(layer: torch.nn.Module) -> Iterator[None]:
    """Within the context, a forward pass ends where it would enter ``layer`` (after the hooks
    registered before this one, e.g. :func:`capture_inputs`, have seen its input)."""

    def stop(_module: Any, _args: tuple, _kwargs: dict) -> None:
        raise _Stop

    handle = layer.register_forward_pre_hook(stop, with_kwargs=True)
    try:
        yield
    except _Stop:
        pass
    finally:
        handle.remove()


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


def cache_of(output: Any) -> Any:
    """The KV cache of a model output (``cache`` or ``past_key_values``, by transformers version)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def _merge_vision(vision: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    present = [v for v in vision if v]
    if not present:
        return {}
    return {key: torch.cat([v[key] for v in present], dim=0) for key in present[0]}
