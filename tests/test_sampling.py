"""Drawing the next token: the categorical draw, greedy and top-k / top-p."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from seed_agent.policies.base import SamplingParams  # noqa: E402
from seed_agent.policies.engine.sampling import sample_categorical, sample_tokens  # noqa: E402


def test_the_categorical_draw_follows_the_probabilities_and_never_draws_a_zero():
    probs = torch.tensor([0.0, 0.1, 0.0, 0.6, 0.3, 0.0])
    n = 200_000
    draws = sample_categorical(probs.expand(n, -1).contiguous(), torch.Generator().manual_seed(0))
    counts = torch.bincount(draws, minlength=6).double() / n
    assert counts[[0, 2, 5]].sum() == 0.0
    for p, f in zip(probs.tolist(), counts.tolist(), strict=True):
        assert abs(f - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12  # five standard errors


def test_a_draw_is_seeded_and_top_k_keeps_only_the_k_most_likely():
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0, 3.0]]).expand(4000, -1).contiguous()
    top2 = SamplingParams(temperature=1.0, top_k=2, seed=0)
    first = sample_tokens(logits, top2, torch.Generator().manual_seed(3))
    again = sample_tokens(logits, top2, torch.Generator().manual_seed(3))
    assert torch.equal(first, again)
    assert set(first.tolist()) == {0, 4}
    greedy = SamplingParams(temperature=0.0)
    assert sample_tokens(logits[:1], greedy, None).tolist() == [4]
