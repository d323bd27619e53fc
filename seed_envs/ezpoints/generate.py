"""EZPoints deals, with held-out card pairs for ``valid_unseen``.

A deal follows the gym-cards recipe: the first card's rank is uniform in 2..K
(J, Q, K count as 10); the second card's number is ``12 // first`` with
probability 1/2 when ``first`` divides 12, else ``12 - first``; then the two
cards are swapped with probability 1/2. So every deal has a solution.

Splits are disjoint by construction: one unordered pair of card faces in
``PAIR_BUCKETS``, fixed by a hash of the pair, is dealt in ``valid_unseen`` only, and
``valid_unseen`` deals only those. Task ``index`` of a split is the first deal of the
split's side drawn from seeds (split, index, attempt) for attempt 0, 1, ...
"""

from __future__ import annotations

import numpy as np

from seed_envs.core import check_split, stable_bucket, stable_seed
from seed_envs.ezpoints.cards import SUITS, TARGET, Card, rank_for

PAIR_BUCKETS = 5  # one in five unordered card pairs is held out for valid_unseen


def deal(rng: np.random.Generator) -> tuple[Card, Card]:
    """Two cards whose numbers make 12 by ``+`` or ``*`` (the gym-cards recipe)."""
    first_rank = int(rng.integers(2, 14))
    first = Card(SUITS[int(rng.integers(4))], rank_for(first_rank))
    value = first.number
    second_value = TARGET // value if value in (1, 2, 3, 4, 6) and rng.random() <= 0.5 else TARGET - value
    second = Card(SUITS[int(rng.integers(4))], rank_for(second_value))
    return (second, first) if rng.random() <= 0.5 else (first, second)


def pair_is_unseen(cards: tuple[Card, Card]) -> bool:
    """True if this unordered pair of card faces is held out for ``valid_unseen``."""
    return stable_bucket(sorted(card.face for card in cards), PAIR_BUCKETS) == 0


def deal_for(split: str, index: int) -> tuple[Card, Card]:
    """The cards of task ``index`` of ``split``: deterministic in (split, index)."""
    want_unseen = check_split(split) == "valid_unseen"
    attempt = 0
    while True:
        cards = deal(np.random.default_rng(stable_seed("ezpoints", split, index, attempt)))
        if pair_is_unseen(cards) == want_unseen:
            return cards
        attempt += 1
