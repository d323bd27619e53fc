"""Prefixes shared within groups of rows, on top of the prefix every row of a batch shares.

SEED's teacher pass scores every step of an episode under ``h_skill``: the steps of one episode
read the same system message, example and rules (the prefix the whole batch shares), then the same
task line and skill (and, where the history does not slide, the same history), and only then
their own observation, actions and reply. A grouped pass computes each part once:

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


def grouped_cost(lengths: Sequence[int], ends: Sequence[int], groups: Sequence[Hashable], shared: int) -> int:
    """Tokens a grouped pass over rows of ``lengths`` computes: the batch prefix once, each group's
    segment once (padded to the longest), each row's own part (padded to the longest). With every
    row its own group and ``ends == shared`` it is the ungrouped cost ``shared + n * (L - shared)``."""
    segment = max(end - shared for end in ends)
    own = max(length - end for length, end in zip(lengths, ends, strict=True))
    return shared + len(set(groups)) * segment + len(lengths) * own


def grouped_padded(lengths: Sequence[int], ends: Sequence[int], shared: int) -> int:
    """Padded tokens a grouped pass over rows of ``lengths`` holds keys and values for (every row
    reads the batch prefix, the longest segment and the longest own part)."""
    segment = max(end - shared for end in ends)
    own = max(length - end for length, end in zip(lengths, ends, strict=True))
    return len(lengths) * (shared + segment + own)
