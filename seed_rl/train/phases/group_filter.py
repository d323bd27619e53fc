"""Dynamic sampling (DAPO, Yu et al. 2025; ``filter_groups`` in verl): an update trains on the groups
whose outcomes differ: won (or score) without the invalid-action penalties
(:func:`~seed_rl.train.phases.update_batch.task_outcome`), as DAPO compares groups by accuracy. The
advantage still takes the penalties: they rank a kept group's episodes, but never make a group kept.

A group whose episodes all earn the same outcome reward has GRPO advantage ``A_i = 0`` on every
token (``A_i = (R_i - mean(R)) / std(R)``, with every ``R_i`` equal), so its rows move the policy
only through the KL term. With ``filter_groups=true`` the rollout plays further rounds of new tasks
until it holds ``tasks_per_update`` groups that differ, at most ``max_rollout_rounds`` rounds in all,
and the update keeps those; where too few differ, tied groups fill the batch in the order played,
so every update trains on the same number of groups. The episodes left out are still counted:
``episodes_played`` and the training success are over every episode played.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from seed_rl.rollout import Episode


def group_outcomes(episodes: Sequence[Episode], rewards: Sequence[float]) -> dict[int, list[float]]:
    """Each group's outcome rewards, in the order its episodes were played."""
    groups: dict[int, list[float]] = {}
    for episode, reward in zip(episodes, rewards, strict=True):
        groups.setdefault(episode.group, []).append(reward)
    return groups


def differing_groups(episodes: Sequence[Episode], rewards: Sequence[float]) -> int:
    """How many groups of ``episodes`` have outcome rewards that are not all equal."""
    return sum(len(set(r)) > 1 for r in group_outcomes(episodes, rewards).values())


def _members(episodes: Sequence[Episode]) -> dict[int, list[Episode]]:
    groups: dict[int, list[Episode]] = {}
    for episode in episodes:
        groups.setdefault(episode.group, []).append(episode)
    return groups


def keep_groups(
    rounds: Sequence[tuple[Sequence[Episode], Sequence[float]]], groups: int, *, first_group: int = 0
) -> tuple[list[Episode], list[Episode]]:
    """From rounds of played episodes (each with its episodes' outcome rewards), ``groups`` groups:
    the groups whose rewards differ, in the order played, then tied groups to fill. The kept
    episodes are renumbered as one round would have numbered them (episode indices from 0, groups
    from ``first_group``, each row pointing at its episode); returns them and the episodes left out.
    """
    differ, tied = [], []
    for episodes, rewards in rounds:
        outcomes = group_outcomes(episodes, rewards)
        for group, members in _members(episodes).items():
            (differ if len(set(outcomes[group])) > 1 else tied).append(members)
    ordered = differ + tied
    kept: list[Episode] = []
    for slot, members in enumerate(ordered[:groups]):
        for episode in members:
            kept.append(renumbered(episode, index=len(kept), group=first_group + slot))
    return kept, [e for members in ordered[groups:] for e in members]


def renumbered(episode: Episode, *, index: int, group: int) -> Episode:
    """``episode`` as episode ``index`` of group ``group``, its rows pointing at it."""
    rows = [replace(row, episode=index, group=group) for row in episode.rows]
    return replace(episode, index=index, group=group, rows=rows)
