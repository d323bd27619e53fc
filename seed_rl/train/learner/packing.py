"""Micro-batches of rows bounded by the tokens their pass computes (:func:`pack_by_tokens`).

What a pass computes follows the layout the policy's engine gives the rows
(``seed_agent/policies/engine/layout.py``): ``[batch prefix | group segment | own tokens]``, each
part padded to its longest (:func:`grouped_cost`, :func:`grouped_padded`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def pack_by_tokens(
    lengths: Sequence[int],
    budget: int,
    *,
    shared: int = 0,
    padded_cap: int | None = None,
    groups: Sequence[Hashable] | None = None,
    ends: Sequence[int] | None = None,
) -> list[list[int]]:
    """Micro-batches of row indices whose size stays within ``budget`` tokens.

    A batch of ``n`` rows, the longest ``L`` tokens, costs ``n * L`` padded tokens; where every row
    starts with the same ``shared`` tokens, computed once (``share_prefix``), it costs
    ``shared + n * (L - shared)``. With ``groups`` (a label per row) and ``ends`` (where each row's
    own tokens begin after its group's common prefix: a :class:`GroupLayout`), a batch of ``G``
    groups costs ``shared + G * S + n * O``, ``S`` its longest group segment and ``O`` its longest
    own part (:func:`grouped_cost`), and the rows of a group are taken together. ``padded_cap``
    also bounds the padded tokens (``n * L``, or :func:`grouped_padded`: what a memory budget
    allows). Rows are taken longest first (groups by their longest row), so rows of similar length
    share a batch and little padding is wasted; a group that does not fit the current batch starts
    the next, and is split only where it alone is over the budget; a row over the budget gets a
    batch of its own. Every index appears exactly once; the packing depends only on the arguments.
    """
    if budget < 1:
        raise ValueError("the token budget must be >= 1")
    labels = list(groups) if groups is not None else list(range(len(lengths)))
    starts = list(ends) if ends is not None else [shared] * len(lengths)

    def fits(rows: list[int]) -> bool:
        lens, row_ends = [lengths[i] for i in rows], [starts[i] for i in rows]
        cost = grouped_cost(lens, row_ends, [labels[i] for i in rows], shared) if shared else len(rows) * max(lens)
        padded = grouped_padded(lens, row_ends, shared) if shared else len(rows) * max(lens)
        return cost <= budget and (padded_cap is None or padded <= padded_cap)

    longest: dict[Hashable, int] = {}
    first: dict[Hashable, int] = {}
    for i, (label, length) in enumerate(zip(labels, lengths, strict=True)):
        longest[label] = max(longest.get(label, 0), length)
        first.setdefault(label, i)
    order = sorted(range(len(lengths)), key=lambda i: (-longest[labels[i]], first[labels[i]], -lengths[i], i))
    units: dict[Hashable, list[int]] = {}
    for i in order:
        units.setdefault(labels[i], []).append(i)
    batches: list[list[int]] = []
    current: list[int] = []
    for unit in units.values():
        if fits([*current, *unit]):
            current += unit
            continue
        if current:  # a group that does not fit starts a batch of its own ...
            batches.append(current)
            current = []
        for i in unit:  # ... and is split only where it alone is over the budget
            if current and not fits([*current, i]):
                batches.append(current)
                current = []
            current.append(i)
    if current:
        batches.append(current)
    return batches


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
