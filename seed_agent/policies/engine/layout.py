"""How the engine lays a batch out: the prefix every row shares, and the prefixes shared within
groups of rows on top of it. :class:`BatchLayout` answers both questions, for sampling and scoring
alike, and holds their switches; nothing else in the project asks them.

**The prefix every row shares** (``share_prefix``): rows that start with the same tokens (the system
message, the example turn, the env's rules) compute them once, where that is worth a pass of its
own: at least :data:`MIN_SHARED_PREFIX` tokens, more than one row, and no images.

**Prefixes shared within groups** (``share_groups``): SEED's teacher pass scores every step of an
episode under ``h_skill``: the steps of one episode read the same system message, example and rules
(the prefix the whole batch shares), then the same task line and skill (and, where the history does
not slide, the same history), and only then their own observation, actions and reply. A grouped
pass computes each part once:

    [ batch prefix (once) | group segment (once per group) | the row's own tokens ]

The batch prefix runs once (:meth:`GenerationEngine.shared_prefix`); the groups' segments run as
one batch of one row per group on top of it; each row then gathers its group's keys and values and
runs its own tokens. Segments and own parts are left-padded (padding masked out), positions count
real tokens only, so every row sees the attention and positions of its unshared pass.

A group's segment is its rows' true common token prefix, so rows labelled alike that differ early
(a history that slides, a step skill before the observation) share only what they share. A group
of one row in a batch has nothing to share: it runs the tokens that do not fit the batch's own
width as its "segment", so that it widens neither part.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

#: A prefix shorter than this is not worth a pass of its own.
MIN_SHARED_PREFIX = 32


class BatchLayout:
    """The engine's answers to the layout questions of a batch, with their switches.

    ``share_prefix``: rows that start alike compute that prefix once (:meth:`shared_prefix_length`).
    ``share_groups``: rows labelled alike also compute their common prefix past the batch's once
    (:meth:`group_layout`). Both on by default."""

    def __init__(self, share_prefix: bool = True, share_groups: bool = True) -> None:
        self.share_prefix = bool(share_prefix)
        self.share_groups = bool(share_groups)

    def shared_prefix_length(self, sequences: Sequence[Sequence[int]], vision: Sequence[dict], own: int = 1) -> int:
        """How many leading tokens every sequence shares, when that is worth computing once: at
        least :data:`MIN_SHARED_PREFIX` tokens, more than one row, no images, and sharing on.
        Each sequence keeps at least ``own`` tokens of its own (those whose logits are read).
        0 means "do not share"."""
        if not self.share_prefix or len(sequences) < 2 or any(vision):
            return 0
        n = common_prefix_length(sequences, min(len(s) for s in sequences) - own)
        return n if n >= MIN_SHARED_PREFIX else 0

    def group_layout(
        self,
        sequences: Sequence[Sequence[int]],
        vision: Sequence[dict],
        groups: Sequence[Hashable | None],
        own: int = 1,
    ) -> GroupLayout | None:
        """How rows labelled alike in ``groups`` share their common prefix past the batch's (see the
        module docstring); None where that is not worth a pass of its own, where the batch shares no
        prefix (so never with images, nor with sharing off), or where ``share_groups`` is off. Each
        row keeps at least ``own`` tokens of its own."""
        labelled = [g for g in groups if g is not None]
        if not self.share_groups or len(set(labelled)) == len(labelled):  # no two rows labelled alike
            return None
        shared = self.shared_prefix_length(sequences, vision, own)
        if not shared:
            return None
        return group_layout(sequences, groups, shared, own, MIN_SHARED_PREFIX)

    def of_rows(
        self,
        sequences: Sequence[Sequence[int]],
        vision: Sequence[dict],
        groups: Sequence[Hashable | None],
        own: int = 1,
    ) -> GroupLayout:
        """The layout a pass over these rows takes, always given: :meth:`group_layout` where rows
        share a group prefix, else each row a group of its own after the prefix every row shares
        (``shared`` 0: none)."""
        grouped = self.group_layout(sequences, vision, groups, own)
        if grouped is not None:
            return grouped
        shared = self.shared_prefix_length(sequences, vision, own)
        return GroupLayout(shared, tuple((row,) for row in range(len(sequences))), (shared,) * len(sequences))


def common_prefix_length(sequences: Sequence[Sequence[int]], limit: int) -> int:
    """How many leading tokens all ``sequences`` have in common, at most ``limit``."""
    if not sequences:
        return 0
    first = sequences[0]
    n = 0
    while n < limit and all(s[n] == first[n] for s in sequences):
        n += 1
    return n


@dataclass(frozen=True)
class GroupLayout:
    """Where each row's own tokens begin (``ends``, absolute token index) after the batch prefix of
    ``shared`` tokens and its group's segment; ``groups`` lists the row indices of each group."""

    shared: int
    groups: tuple[tuple[int, ...], ...]
    ends: tuple[int, ...]

    def group_of_rows(self) -> list[int]:
        """For every row, the position of its group in :attr:`groups`."""
        out = [0] * len(self.ends)
        for g, rows in enumerate(self.groups):
            for row in rows:
                out[row] = g
        return out


def group_layout(
    sequences: Sequence[Sequence[int]],
    labels: Sequence[Hashable | None],
    shared: int,
    own: int,
    minimum: int,
) -> GroupLayout | None:
    """The grouped layout of ``sequences`` (rows with the same ``label`` form a group; None is a
    group of its own) after a batch prefix of ``shared`` tokens, each row keeping at least ``own``
    tokens of its own. None where no group of two or more rows shares ``minimum`` tokens past the
    batch prefix (a grouped pass would not pay for itself)."""
    members: dict[Hashable, list[int]] = {}
    for row, label in enumerate(labels):
        members.setdefault(("row", row) if label is None else ("label", label), []).append(row)
    groups = [tuple(rows) for rows in members.values()]
    common = {
        g: common_prefix_length([sequences[r] for r in rows], min(len(sequences[r]) for r in rows) - own)
        for g, rows in enumerate(groups)
        if len(rows) > 1
    }
    if not any(end - shared >= minimum for end in common.values()):
        return None
    width = max(len(sequences[r]) - common[g] for g in common for r in groups[g])
    ends = [0] * len(sequences)
    for g, rows in enumerate(groups):
        for row in rows:
            ends[row] = max(shared, common[g] if g in common else len(sequences[row]) - width)
    return GroupLayout(shared, tuple(groups), tuple(ends))
