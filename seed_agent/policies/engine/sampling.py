"""Choosing each next token: repetition penalty, greedy or temperature / top-k / top-p sampling,
and cutting a reply after its stop string."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from seed_agent.policies.base import SamplingParams


def penalise_repeats(logits: torch.Tensor, previous: Sequence[Sequence[int]], penalty: float) -> torch.Tensor:
    """``logits`` with each row's already generated tokens made less likely (``penalty`` > 1)."""
    if penalty == 1.0 or not any(previous):
        return logits
    out = logits.clone()
    for row, tokens in enumerate(previous):
        if tokens:
            ids = torch.tensor(sorted(set(tokens)), device=logits.device)
            values = out[row, ids]
            out[row, ids] = torch.where(values > 0, values / penalty, values * penalty)
    return out


def sample_tokens(logits: torch.Tensor, sampling: SamplingParams, generator: torch.Generator | None) -> torch.Tensor:
    """One token per row: argmax when greedy, else from ``softmax(z / T)`` after top-k / top-p."""
    if sampling.greedy:
        return logits.argmax(dim=-1)
    z = logits / sampling.temperature
    if sampling.top_k > 0 and sampling.top_k < z.shape[-1]:
        kth = torch.topk(z, sampling.top_k, dim=-1).values[:, -1:]
        z = z.masked_fill(z < kth, float("-inf"))
    if sampling.top_p < 1.0:
        sorted_z, order = torch.sort(z, descending=True, dim=-1)
        sorted_probs = torch.softmax(sorted_z, dim=-1)
        drop = sorted_probs.cumsum(dim=-1) - sorted_probs >= sampling.top_p  # keep the token crossing top_p
        sorted_z = sorted_z.masked_fill(drop, float("-inf"))
        z = torch.full_like(z, float("-inf")).scatter(-1, order, sorted_z)
    return sample_categorical(torch.softmax(z, dim=-1), generator)


def sample_categorical(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One index per row of ``probs`` (rows summing to 1, zeros allowed), drawn with probability
    ``probs[i]``: the first index whose cumulative probability exceeds a uniform draw scaled to the
    row's total. A zero-probability index is never drawn (its cumulative sum equals the one before
    it). About 40x faster than ``torch.multinomial`` over SmolLM2's 49,152 tokens on the CPU."""
    cumulative = probs.cumsum(dim=-1)
    draw = torch.rand((probs.shape[0], 1), generator=generator, device=probs.device, dtype=cumulative.dtype)
    chosen = torch.searchsorted(cumulative, draw * cumulative[:, -1:], right=True)
    return chosen[:, 0].clamp(max=probs.shape[-1] - 1)


def cut_after_stop(text: str, stop: Sequence[str]) -> str:
    ends = [text.find(s) + len(s) for s in stop if s in text]
    return text[: min(ends)] if ends else text
