"""GiGPO's two-level advantage: GRPO's episode advantage plus a step advantage computed among the
steps taken from the same state ("Group-in-Group Policy Optimization for LLM Agent Training",
arXiv 2505.10978).

A group is the trajectories of one task. For trajectory ``i`` of group ``G`` with step rewards
``r_{i,1} .. r_{i,T_i}`` and outcome reward ``R_i``:

**Discounted step returns**, backwards through the trajectory::

    R_{i,t} = r_{i,t} + gamma * R_{i,t+1},      R_{i,T_i+1} = 0

**Episode advantage**, the outcome reward against its group's (:func:`~seed_rl.algo.advantages.grpo_advantages`)::

    A_E(i) = R_i - mean_{j in G} R_j                                       (mean_norm)
    A_E(i) = (R_i - mean_{j in G} R_j) / (std_{j in G} R_j + eps)          (mean_std_norm)

**Anchor-state groups**: the steps of the group's trajectories whose current state (the env's
``info["anchor"]``: the observation, ignoring history) is the same::

    S_G(s) = {(j, k) : j in G, anchor_{j,k} = s}

**Step advantage**, each step's return against its anchor group's, normalised the same way::

    A_S(i, t) = R_{i,t} - mean_{(j,k) in S} R_{j,k}                        (mean_norm)
    A_S(i, t) = (R_{i,t} - mean_{S} R) / (std_{S} R + eps)                 (mean_std_norm)

with ``S = S_G(anchor_{i,t})``; a step alone in its anchor group gets ``A_S = 0``.

**Total**, on every action token of step ``(i, t)``::

    A(i, t) = A_E(i) + w * A_S(i, t)

The step term is where GiGPO's signal lives when a group's outcomes tie (every trajectory failed,
say): two steps taken from the same state whose futures differed still get opposite advantages.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch

from seed_rl.algo.advantages import grpo_advantages


def discounted_returns(rewards: Sequence[float], gamma: float) -> list[float]:
    """``R_t = r_t + gamma * R_{t+1}`` for every step of one trajectory, ``R_{T+1} = 0``."""
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    out = [0.0] * len(rewards)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = float(rewards[t]) + gamma * running
        out[t] = running
    return out


def anchor_group_ids(groups: Sequence[int], anchors: Sequence[Sequence[Hashable]]) -> list[list[int]]:
    """An id per step of every trajectory: equal for the steps of one group (``groups[i]``, the
    trajectory's task group) whose anchors are equal, different otherwise."""
    if len(groups) != len(anchors):
        raise ValueError(f"groups has {len(groups)} entries but anchors has {len(anchors)}")
    ids: dict[tuple[int, Hashable], int] = {}
    return [
        [ids.setdefault((group, anchor), len(ids)) for anchor in steps]
        for group, steps in zip(groups, anchors, strict=True)
    ]


@dataclass(frozen=True)
class StepCredit:
    """GiGPO's per-step quantities for a batch of trajectories (lists per trajectory, per step)."""

    #: ``R_{i,t}``, the discounted return from each step.
    returns: list[list[float]]
    #: The anchor-state group of each step (:func:`anchor_group_ids`).
    anchor_ids: list[list[int]]
    #: How many steps share each step's anchor group (itself included).
    anchor_sizes: list[list[int]]
    #: ``A_S(i, t)``.
    step_advantages: list[list[float]]

    @property
    def anchored_share(self) -> float:
        """The share of steps in anchor groups of two or more: where GiGPO's step term can carry signal."""
        sizes = [n for steps in self.anchor_sizes for n in steps]
        return sum(n > 1 for n in sizes) / len(sizes) if sizes else 0.0

    @property
    def mean_abs_step_advantage(self) -> float:
        """``mean |A_S|`` over every step."""
        values = [abs(a) for steps in self.step_advantages for a in steps]
        return sum(values) / len(values) if values else 0.0

    def spreads(self) -> list[dict[int, float]]:
        """Per trajectory: each step (1-based) in an anchor group of two or more, mapped to the
        spread (max - min) of the returns in that group: how much the choice taken there mattered."""
        lows: dict[int, float] = {}
        highs: dict[int, float] = {}
        for ids, returns in zip(self.anchor_ids, self.returns, strict=True):
            for a, r in zip(ids, returns, strict=True):
                lows[a], highs[a] = min(lows.get(a, r), r), max(highs.get(a, r), r)
        return [
            {t: highs[a] - lows[a] for t, (a, n) in enumerate(zip(ids, sizes, strict=True), start=1) if n > 1}
            for ids, sizes in zip(self.anchor_ids, self.anchor_sizes, strict=True)
        ]


def step_credit(
    groups: Sequence[int],
    step_rewards: Sequence[Sequence[float]],
    anchors: Sequence[Sequence[Hashable]],
    *,
    gamma: float = 0.95,
    normalize_std: bool = False,
    eps: float = 1e-6,
) -> StepCredit:
    """The step returns ``R_{i,t}``, the anchor-state groups and ``A_S(i, t)`` of a batch: one entry
    per trajectory in ``groups`` (its task group), ``step_rewards`` and ``anchors`` (per step)."""
    if len(step_rewards) != len(groups):
        raise ValueError(f"groups has {len(groups)} entries but step_rewards has {len(step_rewards)}")
    for i, (rewards, keys) in enumerate(zip(step_rewards, anchors, strict=True)):
        if len(rewards) != len(keys):
            raise ValueError(f"trajectory {i} has {len(rewards)} step rewards but {len(keys)} anchors")
    returns = [discounted_returns(rewards, gamma) for rewards in step_rewards]
    ids = anchor_group_ids(groups, anchors)
    flat_ids = [a for steps in ids for a in steps]
    counts: dict[int, int] = {}
    for a in flat_ids:
        counts[a] = counts.get(a, 0) + 1
    flat = grpo_advantages([r for steps in returns for r in steps], flat_ids, normalize_std=normalize_std, eps=eps)
    advantages, sizes, at = [], [], 0
    for steps in ids:
        advantages.append(flat[at : at + len(steps)].tolist())
        sizes.append([counts[a] for a in steps])
        at += len(steps)
    return StepCredit(returns=returns, anchor_ids=ids, anchor_sizes=sizes, step_advantages=advantages)


def gigpo_advantages(
    outcome_rewards: Sequence[float],
    groups: Sequence[int],
    credit: StepCredit,
    *,
    step_weight: float = 1.0,
    normalize_std: bool = False,
    eps: float = 1e-6,
) -> list[list[float]]:
    """``A(i, t) = A_E(i) + w * A_S(i, t)`` for every step of every trajectory (``w = step_weight``),
    ``A_E`` from the outcome rewards and their groups, ``A_S`` from ``credit`` (:func:`step_credit`)."""
    episode = grpo_advantages(torch.as_tensor(outcome_rewards), groups, normalize_std=normalize_std, eps=eps)
    if len(credit.step_advantages) != len(episode):
        raise ValueError(f"{len(episode)} outcome rewards but step credit for {len(credit.step_advantages)}")
    return [
        [float(a_e) + step_weight * a_s for a_s in steps]
        for a_e, steps in zip(episode.tolist(), credit.step_advantages, strict=True)
    ]
