"""Reusing the rollout's hidden states below the first trained layer.

With LoRA in the top ``k`` decoder layers only, the layers below them never change during
training: a token's hidden state entering the first trained layer is a function of the tokens
before it and nothing else. The sampler computes exactly those states while it reads each prompt
and feeds back each sampled token, so it can keep them (:class:`FrozenStates`), and every later
pass over the same row (the pass with gradient, a re-score, the KL reference, whose lower layers
are the same weights) can start at the first trained layer (:func:`forward_from_states`). On
SmolLM2 with the demo's ``lora_layers=10`` of 30 that skips two thirds of the layers of each
training forward.

The states are those the sampler computed: to float error in float32 the same as a full pass
(tested to 1e-5 on log-probs and gradients), and in bf16 as close as the sampler's own log-probs
are to the learner's (the gap the importance-sampling correction already covers).

Only plain decoder stacks qualify (:func:`decoder_stack`): a ``model.layers`` / ``rotary_emb`` /
``norm`` text model with full attention in every layer, under SDPA. Others keep the full pass.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

#: Attention implementations whose masks are SDPA's boolean masks (True attends).
BOOLEAN_MASK_ATTENTION = ("sdpa",)


@dataclass(frozen=True)
class FrozenStates:
    """The hidden states entering decoder layer ``layer`` for each token of a row read so far:
    ``prefix`` (shared by the rows of one sampling batch, not copied) followed by ``own``; both
    ``(tokens, hidden)``. A row scored with them is ``prompt + completion[:-1]``: the last sampled
    token is never read (nothing is predicted after it)."""

    layer: int
    prefix: torch.Tensor
    own: torch.Tensor

    def __len__(self) -> int:
        return self.prefix.shape[0] + self.own.shape[0]

    def span(self, start: int, stop: int | None = None) -> torch.Tensor:
        """The states of tokens ``start:stop``, copied only where the span crosses into ``own``."""
        stop = len(self) if stop is None else stop
        cut = self.prefix.shape[0]
        if stop <= cut:
            return self.prefix[start:stop]
        if start >= cut:
            return self.own[start - cut : stop - cut]
        return torch.cat([self.prefix[start:], self.own[: stop - cut]])


@dataclass(frozen=True)
class DecoderStack:
    """The parts of a decoder-only text model a pass from layer ``k`` runs."""

    layers: Sequence[torch.nn.Module]
    rotary: torch.nn.Module
    norm: torch.nn.Module
    head: torch.nn.Module
    config: Any


def decoder_stack(model: Any) -> DecoderStack | None:
    """``model``'s decoder stack, or None where a pass from a middle layer is not supported (vision
    models, sliding-window or mixed attention, masks other than SDPA's)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = base.config
    if getattr(config, "text_config", None) is not None or getattr(config, "vision_config", None) is not None:
        return None
    decoder = base.get_decoder() if hasattr(base, "get_decoder") else getattr(base, "model", None)
    parts = [getattr(decoder, name, None) for name in ("layers", "rotary_emb", "norm")]
    head = base.get_output_embeddings() if hasattr(base, "get_output_embeddings") else None
    if any(p is None for p in parts) or head is None:
        return None
    if getattr(config, "_attn_implementation", None) not in BOOLEAN_MASK_ATTENTION:
        return None
    layer_types = getattr(config, "layer_types", None) or ["full_attention"]
    if any(kind != "full_attention" for kind in layer_types) or getattr(config, "use_sliding_window", False):
        return None
    layers, rotary, norm = parts
    return DecoderStack(layers=layers, rotary=rotary, norm=norm, head=head, config=config)


@contextlib.contextmanager
def capture_inputs(layer: torch.nn.Module) -> Iterator[list[torch.Tensor]]:
    """Every hidden-state tensor that enters ``layer`` while the context is open, in order."""
    seen: list[torch.Tensor] = []

    def hook(_module: Any, args: tuple, kwargs: dict) -> None:
        seen.append(args[0] if args else kwargs["hidden_states"])

    handle = layer.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        yield seen
    finally:
        handle.remove()


def forward_from_states(
    stack: DecoderStack,
    first_layer: int,
    prefix: torch.Tensor | None,
    rest: torch.Tensor,
    rest_mask: torch.Tensor,
    logits_to_keep: int,
    cache_arg: str,
) -> torch.Tensor:
    """Logits of the last ``logits_to_keep`` positions of each row, from layer ``first_layer`` up.

    ``prefix``: ``(P, h)`` states every row shares (or None); ``rest``: ``(B, R, h)`` each row's
    own states, left-padded, with ``rest_mask`` ``(B, R)`` (1 = token). The layout and positions
    are those of the full pass with a shared prefix (``[prefix | padding | own tokens]``,
    positions counted over real tokens), so the logits match it to float error. Gradients flow
    into the prefix's keys and values from every row, as in the full pass."""
    from transformers import DynamicCache

    layers = stack.layers[first_layer:]
    batch, length = rest_mask.shape
    shared = 0 if prefix is None else prefix.shape[0]
    cache = None
    if shared:
        cache = DynamicCache(config=stack.config)
        positions = torch.arange(shared, device=prefix.device)[None]
        hidden = prefix[None]
        embeddings = stack.rotary(hidden, position_ids=positions)
        for layer in layers:  # no mask: causal over the prefix alone
            hidden = layer(
                hidden,
                attention_mask=None,
                position_ids=positions,
                position_embeddings=embeddings,
                use_cache=True,
                **{cache_arg: cache},
            )
            hidden = hidden[0] if isinstance(hidden, tuple) else hidden  # (older layers return a tuple)
        cache.batch_repeat_interleave(batch)
    positions = (rest_mask.cumsum(-1) - 1).clamp(min=0) + shared
    real = rest_mask.bool()
    causal = torch.ones(length, length, dtype=torch.bool, device=real.device).tril()
    own = causal[None] & real[:, None, :]  # a key of its own row at or before the query
    own |= torch.eye(length, dtype=torch.bool, device=real.device)[None] & ~real[:, :, None]  # padding: itself
    mask = torch.cat([real.new_ones(batch, length, shared), own], dim=-1)[:, None]
    hidden = rest
    embeddings = stack.rotary(hidden, position_ids=positions)
    for layer in layers:
        hidden = layer(
            hidden,
            attention_mask=mask,
            position_ids=positions,
            position_embeddings=embeddings,
            use_cache=cache is not None,
            **{cache_arg: cache},
        )
        hidden = hidden[0] if isinstance(hidden, tuple) else hidden
    hidden = stack.norm(hidden[:, -logits_to_keep:])
    return stack.head(hidden)


def assemble(
    states: Sequence[FrozenStates], shared: int, dtype: torch.dtype
) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor]:
    """The inputs of :func:`forward_from_states` for rows whose first ``shared`` tokens are the
    same: the prefix's states (row 0's), and every row's own states left-padded with their mask.
    Built outside inference mode, so that autograd may save them."""
    prefix = states[0].span(0, shared).to(dtype) if shared else None
    own = [s.span(shared) for s in states]
    length = max(o.shape[0] for o in own)
    hidden = own[0].shape[-1]
    rest = own[0].new_zeros((len(own), length, hidden), dtype=dtype)
    mask = torch.zeros((len(own), length), dtype=torch.long, device=rest.device)
    for row, values in enumerate(own):
        if values.shape[0]:
            rest[row, length - values.shape[0] :] = values
            mask[row, length - values.shape[0] :] = 1
    if prefix is not None:
        prefix = prefix.clone()
    return prefix, rest, mask


def row_states(
    seen: Sequence[torch.Tensor],
    layer: int,
    prompts: Sequence[Sequence[int]],
    prefix: torch.Tensor | None,
    sampled: Sequence[Sequence[int]],
    sources: Sequence[int] | None = None,
) -> list[FrozenStates]:
    """Each row's :class:`FrozenStates` from one sampling batch: ``prefix``, the shared prefix's
    states ``(P, h)`` (None: no shared prefix), and what :func:`capture_inputs` saw after it: the
    prompts' pass ``(U, R, h)`` over the tokens after the prefix (left-padded; row ``r``'s prompt
    is its row ``sources[r]``, or ``r``), then one ``(B, 1, h)`` per decode step. A row that sampled
    ``n`` tokens fed the first ``n - 1`` of them back, in the first ``n - 1`` decode steps."""
    prompt_pass, decoded = seen[0], seen[1:]
    prefix = prefix if prefix is not None else prompt_pass.new_zeros((0, prompt_pass.shape[-1]))
    width = prompt_pass.shape[1]
    out = []
    for row, (prompt, tokens) in enumerate(zip(prompts, sampled, strict=True)):
        own = len(prompt) - prefix.shape[0]
        fed = [step[row] for step in decoded[: max(0, len(tokens) - 1)]]
        source = sources[row] if sources is not None else row
        out.append(FrozenStates(layer, prefix, torch.cat([prompt_pass[source, width - own :], *fed])))
    return out


def logprobs_from_states(
    stack: DecoderStack,
    first_layer: int,
    states: Sequence[FrozenStates],
    completions: Sequence[Sequence[int]],
    shared: int,
    temperature: float,
    cache_arg: str,
) -> list[torch.Tensor]:
    """Per-token log-probs ``log softmax(z / T)`` (float32) of each row's completion, from the
    rows' states entering layer ``first_layer``, whose first ``shared`` tokens are the same."""
    keep = max(len(c) for c in completions)
    prefix, rest, mask = assemble(states, shared, stack.head.weight.dtype)
    logits = forward_from_states(stack, first_layer, prefix, rest, mask, keep, cache_arg)
    targets = torch.zeros((len(completions), keep), dtype=torch.long, device=logits.device)
    for row, c in enumerate(completions):
        targets[row, keep - len(c) :] = torch.tensor(list(c), dtype=torch.long, device=logits.device)
    token_lp = torch.log_softmax(logits.float() / temperature, dim=-1).gather(-1, targets[..., None])[..., 0]
    return [token_lp[row, keep - len(c) :] for row, c in enumerate(completions)]
