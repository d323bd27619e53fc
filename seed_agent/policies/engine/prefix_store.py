"""Shared prompt prefixes kept between sampling calls while the weights stay the same.

Every turn of a rollout starts with the same system message, example turn and rules (412 of the
about 560 tokens of a Sokoban prompt). Within ``GenerationEngine.reusing_prefixes`` (a rollout,
an evaluation) that prefix runs once instead of once per ``generate`` call; each use gets its own
copy of the keys and values, since the rows' pass extends and repeats them in place.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch

#: Distinct prefixes kept at once (rows of one env share one; a batch over several envs or
#: prompt variants may have a few).
MAX_PREFIXES = 8


@dataclass
class SharedPrefix:
    """The ``length`` leading tokens every row of a batch shares (0: none), their keys and values
    as a one-row cache, and, when sampling keeps them, their hidden states entering the first
    trained layer ``(length, hidden)``."""

    length: int
    cache: Any = None
    states: torch.Tensor | None = None


class PrefixStore:
    """The most recently used :data:`MAX_PREFIXES` shared prefixes, by their token ids."""

    def __init__(self, capacity: int = MAX_PREFIXES) -> None:
        self.capacity = int(capacity)
        self._entries: OrderedDict[tuple[int, ...], SharedPrefix] = OrderedDict()

    def __contains__(self, ids: tuple[int, ...]) -> bool:
        return ids in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def closest(self, ids: tuple[int, ...]) -> tuple[tuple[int, ...] | None, int]:
        """The stored prefix sharing the most leading tokens with ``ids``, and how many it shares
        (a stored prefix of ``ids`` shares all of its own)."""
        best, best_score = None, (0, False)
        for known in self._entries:
            n = 0
            for a, b in zip(known, ids, strict=False):
                if a != b:
                    break
                n += 1
            score = (n, n == len(known))  # on a tie, one that can be extended as it is
            if score > best_score:
                best, best_score = known, score
        return best, best_score[0]

    def get(self, ids: tuple[int, ...]) -> SharedPrefix:
        """A copy of the stored prefix whose cache the caller may extend."""
        self._entries.move_to_end(ids)
        entry = self._entries[ids]
        return SharedPrefix(entry.length, copy.deepcopy(entry.cache), entry.states)

    def put(self, ids: tuple[int, ...], prefix: SharedPrefix) -> None:
        """Keep a copy of ``prefix`` (the caller goes on to extend its own)."""
        self._entries[ids] = SharedPrefix(prefix.length, copy.deepcopy(prefix.cache), prefix.states)
        self._entries.move_to_end(ids)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
