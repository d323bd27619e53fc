"""GRPO's group-relative outcome advantage.

Every trajectory of a group starts from the same task. Its advantage is its outcome
reward measured against the group's:

    A_i = R_i - mean_{j in G(i)} R_j                                   (default)
    A_i = (R_i - mean_{j in G(i)} R_j) / (std_{j in G(i)} R_j + eps)    (normalize_std)

and every action token of every step of trajectory ``i`` gets ``A_i``
(:func:`broadcast_to_tokens`). A group whose rewards all tie carries no signal: its
advantages are exactly zero (with or without normalisation).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def grpo_advantages(
    rewards: torch.Tensor | Sequence[float],
    group_ids: torch.Tensor | Sequence[int],
    normalize_std: bool = False,
    eps: float = 1e-6,
) -> torch.Tensor:
    """One advantage per trajectory: ``R_i - mean(R_group)``, divided by ``std(R_group) + eps``
    when ``normalize_std`` (the unbiased std, as GRPO's reference code uses; a group of one
    has std 0, so its advantage is 0).

    ``rewards`` and ``group_ids`` have one entry per trajectory; returns float32.
    """
    r = torch.as_tensor(rewards, dtype=torch.float64).flatten()
    g = torch.as_tensor(group_ids).flatten()
    if r.shape != g.shape:
        raise ValueError(f"rewards has {r.numel()} entries but group_ids has {g.numel()}")
    _, index = torch.unique(g, return_inverse=True)
    groups = int(index.max()) + 1 if index.numel() else 0
    count = torch.zeros(groups, dtype=torch.float64).index_add_(0, index, torch.ones_like(r))
    mean = torch.zeros(groups, dtype=torch.float64).index_add_(0, index, r) / count
    centred = r - mean[index]
    # exact zeros for tied groups, whatever the rounding of the mean
    tied = torch.zeros(groups, dtype=torch.float64).index_add_(0, index, (r - r[_first_of(index, groups)][index]).abs())
    centred = torch.where(tied[index] == 0, torch.zeros_like(centred), centred)
    if normalize_std:
        squares = torch.zeros(groups, dtype=torch.float64).index_add_(0, index, centred**2)
        std = torch.sqrt(squares / (count - 1).clamp(min=1))
        # a tied group (and a group of one) keeps its exact zeros, whatever eps
        centred = torch.where(centred == 0, centred, centred / (std[index] + eps))
    return centred.to(torch.float32)


def broadcast_to_tokens(advantages: torch.Tensor, token_counts: Sequence[int]) -> torch.Tensor:
    """Repeat ``advantages[k]`` ``token_counts[k]`` times: a trajectory's advantage on each of its
    action tokens, for rows laid out one after another."""
    counts = torch.as_tensor(list(token_counts), dtype=torch.long)
    return torch.repeat_interleave(advantages, counts)


def _first_of(index: torch.Tensor, groups: int) -> torch.Tensor:
    """The position of the first member of each group."""
    first = torch.full((groups,), index.numel(), dtype=torch.long)
    positions = torch.arange(index.numel())
    return first.scatter_reduce(0, index, positions, reduce="amin")
