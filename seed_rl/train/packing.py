"""Micro-batches of rows bounded by the tokens their pass computes (:func:`pack_by_tokens`)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from seed_agent.policies.engine.layout import grouped_cost, grouped_padded


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
