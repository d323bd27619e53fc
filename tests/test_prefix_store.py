"""Shared prompt prefixes kept between sampling calls (``TransformersPolicy.reusing_prefixes``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from seed_agent.policies.base import SamplingParams, reusing_prefixes  # noqa: E402
from seed_agent.policies.engine.prefix_store import PrefixStore, SharedPrefix  # noqa: E402
from seed_agent.prompts import PromptBuilder, prompt_spec  # noqa: E402
from seed_agent.tiny_models import tiny_random_policy  # noqa: E402
from seed_rl.train.learner.learner import Learner, LoraSettings  # noqa: E402


def test_the_store_keeps_the_most_recent_prefixes_and_hands_out_copies():
    store = PrefixStore(capacity=2)
    for ids in ((1,), (2,), (3,)):
        store.put(ids, SharedPrefix(len(ids), cache=[ids]))
    assert (1,) not in store and (2,) in store and (3,) in store and len(store) == 2
    taken = store.get((2,))
    taken.cache.append("extended by a pass")
    assert store.get((2,)).cache == [(2,)]  # the stored keys and values are not the caller's
    store.put((4,), SharedPrefix(1, cache=[]))  # (3,) is now the least recently used
    assert (3,) not in store and (2,) in store


def test_reusing_prefixes_enters_the_back_ends_own_context_or_one_that_does_nothing():
    events = []

    class WithStore:
        @contextlib.contextmanager
        def reusing_prefixes(self) -> Iterator[str]:
            events.append("enter")
            yield "store"
            events.append("exit")

    with reusing_prefixes(WithStore()) as inside:
        assert inside == "store" and events == ["enter"]
    assert events == ["enter", "exit"]

    bare = SimpleNamespace()
    with reusing_prefixes(bare) as inside:
        assert inside is None
    assert vars(bare) == {}  # nothing set on a back end without a store
    with pytest.raises(KeyError), reusing_prefixes(bare):  # and errors are not swallowed
        raise KeyError("inside")


def test_a_stored_prefix_samples_exactly_what_a_fresh_one_does(monkeypatch):
    """Three generate calls over the same prompts and seed: outside the context, then twice inside
    it (the second takes the prefix from the store, one forward pass fewer). Tokens, log-probs and
    the frozen states agree exactly."""
    torch.manual_seed(0)
    learner = Learner(tiny_random_policy(seed=3), finetune="lora", lora=LoraSettings(layers=1))
    policy = learner.policy
    builder = PromptBuilder(prompt_spec("sokoban"), style="act")
    prompts = [builder.build("Push the box.", "#_P_#\n" * (i + 1), ["up", "down"]) for i in range(3)]
    sampling = SamplingParams(temperature=1.0, max_new_tokens=5, seed=7)
    passes = []
    engine, original = type(policy.engine), type(policy.engine).forward
    monkeypatch.setattr(engine, "forward", lambda self, *a, **k: passes.append(1) or original(self, *a, **k))
    with policy.keeping_frozen_states(1 << 30):
        runs, counts = [policy.generate(prompts, sampling=sampling)], [len(passes)]
        with policy.reusing_prefixes():
            for _ in range(2):
                runs.append(policy.generate(prompts, sampling=sampling))
                counts.append(len(passes) - sum(counts))
            assert len(policy.engine.prefix_store) == 1
    assert policy.engine.prefix_store is None  # dropped with the context: the weights may change after it
    assert counts[1] == counts[0] and counts[2] == counts[0] - 1
    fresh = runs[0]
    for run in runs[1:]:
        assert [c.token_ids for c in run] == [c.token_ids for c in fresh]
        assert [c.logprobs for c in run] == [c.logprobs for c in fresh]
        for a, b in zip(run, fresh, strict=True):
            assert torch.equal(a.frozen_states.span(0), b.frozen_states.span(0))


def test_the_closest_stored_prefix_by_hand():
    store = PrefixStore()
    store.put((1, 2, 3, 4), SharedPrefix(4))
    store.put((1, 2, 9), SharedPrefix(3))
    assert store.closest((1, 2, 3, 4, 5)) == ((1, 2, 3, 4), 4)  # a stored prefix of the ids
    assert store.closest((1, 2, 3, 7)) == ((1, 2, 3, 4), 3)  # shares 3 tokens, then differs
    assert store.closest((1, 2, 9, 9)) == ((1, 2, 9), 3)
    assert store.closest((5,)) == (None, 0)


def test_batches_whose_shared_prefix_is_longer_or_shorter_than_a_stored_one_sample_the_same(monkeypatch):
    """Within the context, batches whose rows share more, or fewer, tokens than a stored prefix
    (observations alike up to some line) extend or cut it; what they sample agrees with fresh
    passes to float error."""
    torch.manual_seed(0)
    policy = Learner(tiny_random_policy(seed=3), finetune="lora", lora=LoraSettings(layers=1)).policy
    builder = PromptBuilder(prompt_spec("sokoban"), style="act")
    sets = {
        "alike first line": ["#####\n" + "#_P_#\n" * (i + 1) for i in range(3)],
        "different at once": [f"{i}#_P_#\n" for i in range(3)],
        "alike two lines": ["#####\n#_P_#\n" + "#__B#\n" * (i + 1) for i in range(3)],
    }
    sampling = SamplingParams(temperature=1.0, max_new_tokens=4, seed=5)
    prompts = {name: [builder.build("Push the box.", o, ["up", "down"]) for o in obs] for name, obs in sets.items()}
    lengths = {
        name: policy.engine.layout.shared_prefix_length(policy.encode(p)[0], [{}] * 3) for name, p in prompts.items()
    }
    assert lengths["different at once"] < lengths["alike first line"] < lengths["alike two lines"]
    with policy.keeping_frozen_states(1 << 30):
        fresh = {name: policy.generate(p, sampling=sampling) for name, p in prompts.items()}
    passes = []
    original = type(policy.engine)._prefix_pass
    monkeypatch.setattr(
        type(policy.engine),
        "_prefix_pass",
        lambda self, ids, base, s: passes.append(base is not None) or original(self, ids, base, s),
    )
    with policy.reusing_prefixes(), policy.keeping_frozen_states(1 << 30):
        stored = [(name, policy.generate(prompts[name], sampling=sampling)) for name in [*sets, *sets]]
    # the first batch's prefix runs whole; the second's is cut from it (a pass over the common
    # tokens, whole); the third extends the first (a pass over its extra tokens); the rest are stored
    assert passes == [False, False, True]
    for name, completions in stored:
        for a, b in zip(completions, fresh[name], strict=True):
            assert a.token_ids == b.token_ids
            assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-5
            assert (a.frozen_states.span(0) - b.frozen_states.span(0)).abs().max() < 1e-5


def test_distinct_rows_by_hand():
    from seed_agent.policies.engine.generation import distinct_rows

    assert distinct_rows([[1], [2], [1], [3], [2]]) == ([0, 1, 3], [0, 1, 0, 2, 1])
    assert distinct_rows([[1], [2]]) == ([0, 1], None)


def test_identical_prompts_prefill_once_and_sample_as_if_each_ran(monkeypatch):
    """A batch with repeated prompts (a group's episodes at their first turn): the prompts' pass
    runs over the distinct ones only, and tokens, log-probs and frozen states agree with a batch
    in which every row runs (fp32, to 1e-5)."""
    import seed_agent.policies.engine.generation as generation

    torch.manual_seed(0)
    policy = Learner(tiny_random_policy(seed=3), finetune="lora", lora=LoraSettings(layers=1)).policy
    builder = PromptBuilder(prompt_spec("sokoban"), style="act")
    a, b = (builder.build("Push the box.", o, ["up", "down"]) for o in ("#_P_#\n", "#_PB#\n#___#\n"))
    prompts = [a, a, b, a, b]
    sampling = SamplingParams(temperature=1.0, max_new_tokens=5, seed=2)
    rows_run = []
    original = type(policy.engine).prefix_forward
    monkeypatch.setattr(
        type(policy.engine),
        "prefix_forward",
        lambda self, seqs, *x, **k: rows_run.append(len(seqs)) or original(self, seqs, *x, **k),
    )
    with policy.keeping_frozen_states(1 << 30):
        once = policy.generate(prompts, sampling=sampling)
        monkeypatch.setattr(generation, "distinct_rows", lambda ids: (list(range(len(ids))), None))
        every = policy.generate(prompts, sampling=sampling)
    assert rows_run == [2, 5]
    for x, y in zip(once, every, strict=True):
        assert x.token_ids == y.token_ids
        assert max(abs(p - q) for p, q in zip(x.logprobs, y.logprobs, strict=True)) < 1e-5
        assert (x.frozen_states.span(0) - y.frozen_states.span(0)).abs().max() < 1e-5
