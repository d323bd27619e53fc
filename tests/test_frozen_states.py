"""Training passes that start from the sampler's hidden states below the first trained layer."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from seed_agent.policies.base import SamplingParams  # noqa: E402
from seed_agent.policies.engine.frozen_states import FrozenStates, decoder_stack, row_states  # noqa: E402
from seed_agent.prompts import PromptBuilder, prompt_spec  # noqa: E402
from seed_agent.tiny_models import tiny_random_policy  # noqa: E402
from seed_rl.records.rows import ScoreRow  # noqa: E402
from seed_rl.train.learner.learner import Learner, LoraSettings  # noqa: E402


def test_spans_cross_from_the_shared_prefix_into_a_rows_own_states():
    prefix = torch.arange(3.0)[:, None]  # tokens 0..2, hidden size 1
    states = FrozenStates(layer=1, prefix=prefix, own=torch.tensor([[10.0], [11.0]]))
    assert len(states) == 5
    assert states.span(0, 2).flatten().tolist() == [0.0, 1.0]
    assert states.span(2).flatten().tolist() == [2.0, 10.0, 11.0]
    assert states.span(4).flatten().tolist() == [11.0]
    assert states.span(1, 2).data_ptr() == prefix[1:2].data_ptr()  # within the prefix: not copied


def test_row_states_lay_out_prefix_prompt_and_fed_tokens_by_hand():
    """Two rows, a 2-token shared prefix, prompts of 4 and 3 tokens (left-padded to 2 own tokens),
    three decode steps; row 0 sampled 3 tokens (2 fed back), row 1 sampled 1 (none fed back)."""
    prefix = torch.tensor([[1.0], [2.0]])  # (P=2, h=1)
    prompt_pass = torch.tensor([[[3.0], [4.0]], [[-1.0], [5.0]]])  # row 1 has one own token
    decode = [torch.tensor([[[6.0]], [[-2.0]]]), torch.tensor([[[7.0]], [[-3.0]]]), torch.tensor([[[8.0]], [[-4.0]]])]
    out = row_states([prompt_pass, *decode], 1, [[0] * 4, [0] * 3], prefix, [[9, 9, 9], [9]])
    assert [s.span(0).flatten().tolist() for s in out] == [[1.0, 2.0, 3.0, 4.0, 6.0, 7.0], [1.0, 2.0, 5.0]]
    assert out[0].prefix.data_ptr() == out[1].prefix.data_ptr() == prefix.data_ptr()  # shared, not copied
    unshared = row_states([prompt_pass, *decode], 1, [[0] * 2, [0]], None, [[9, 9], [9, 9]])
    assert [s.span(0).flatten().tolist() for s in unshared] == [[3.0, 4.0, 6.0], [5.0, -2.0]]


@pytest.fixture(scope="module")
def top_layer_learner():
    torch.manual_seed(0)
    policy = tiny_random_policy(seed=3)  # 2 decoder layers: LoRA in the top one, layer 0 frozen
    return Learner(policy, finetune="lora", lora=LoraSettings(layers=1), lr=0.0)


def sampled(policy, n=5, seed=11):
    builder = PromptBuilder(prompt_spec("sokoban"), style="act")
    prompts = [builder.build("Push the box.", "#_P_#\n" * (i + 1), ["up", "down"]) for i in range(n)]
    with policy.keeping_frozen_states(1 << 30):
        return policy.generate(prompts, sampling=SamplingParams(temperature=1.0, max_new_tokens=6, seed=seed))


def logprobs_and_grad(learner, completions, with_states):
    rows = [
        ScoreRow(c.prompt_token_ids, c.token_ids, states=c.frozen_states if with_states else None) for c in completions
    ]
    learner.optimizer.zero_grad(set_to_none=True)
    logps = learner.logprobs(rows, grad=True)
    torch.cat(logps).sum().backward()
    grad = {n: p.grad.detach().clone() for n, p in learner.model.named_parameters() if p.requires_grad}
    learner.optimizer.zero_grad(set_to_none=True)
    return [lp.detach() for lp in logps], grad


@pytest.mark.parametrize("rows", [[0, 1, 2, 3, 4], [2, 4], [3]], ids=["the-sampling-batch", "two-rows", "one-row"])
def test_a_pass_from_the_samplers_states_matches_the_full_pass(top_layer_learner, rows, monkeypatch):
    """fp32: per-token log-probs and gradients from the sampler's layer-1 states agree with the
    full pass within 1e-5, whether the scored rows share the sampling batch's prefix, a longer
    one (two rows) or none (one row)."""
    learner = top_layer_learner
    policy = learner.policy
    assert policy.engine.frozen_layers == 1
    completions = [sampled(policy)[i] for i in rows]
    assert all(len(c.frozen_states) == len(c.prompt_token_ids) + len(c.token_ids) - 1 for c in completions)
    calls = []
    original = type(policy)._score_from_states
    monkeypatch.setattr(type(policy), "_score_from_states", lambda self, *a: calls.append(1) or original(self, *a))
    reused, grad_reused = logprobs_and_grad(learner, completions, with_states=True)
    assert calls  # the states were used, not silently skipped
    full, grad_full = logprobs_and_grad(learner, completions, with_states=False)
    for a, b, c in zip(reused, full, completions, strict=True):
        assert a.shape == b.shape == (len(c.token_ids),)
        assert (a - b).abs().max() < 1e-5
        assert max(abs(x - y) for x, y in zip(a.tolist(), c.logprobs, strict=True)) < 1e-4  # the sampler's own
    scale = max(g.abs().max() for g in grad_full.values())
    assert scale > 0
    for name, g in grad_full.items():
        assert (grad_reused[name] - g).abs().max() < 1e-5 * scale, name


def test_states_of_another_row_are_refused(top_layer_learner):
    learner = top_layer_learner
    a, b = sampled(learner.policy, n=2)[:2]
    row = ScoreRow(a.prompt_token_ids, a.token_ids, states=b.frozen_states)
    with pytest.raises(ValueError, match="another row or model"):
        learner.logprobs([row], grad=False)


def test_only_a_model_with_frozen_bottom_layers_keeps_states():
    everywhere = Learner(tiny_random_policy(seed=4), finetune="lora", lora=LoraSettings(layers=0))
    assert everywhere.policy.engine.frozen_layers == 0
    assert sampled(everywhere.policy, n=2)[0].frozen_states is None
    switched_off = Learner(
        tiny_random_policy(seed=4), finetune="lora", lora=LoraSettings(layers=1), reuse_frozen_states=False
    )
    assert switched_off.policy.engine.frozen_layers == 0
    full = Learner(tiny_random_policy(seed=4), finetune="full", keep_reference=False)
    assert full.policy.engine.frozen_layers == 0


def test_states_are_kept_only_when_asked_and_within_their_room(top_layer_learner):
    """No states outside ``keeping_frozen_states`` (evaluation, the analyzer); within it, a batch
    whose states would overflow the room keeps none, and nothing is kept after it."""
    policy = top_layer_learner.policy
    builder = PromptBuilder(prompt_spec("sokoban"), style="act")
    prompts = [builder.build("Push the box.", "#_P_#\n" * (i + 1), ["up", "down"]) for i in range(3)]
    sampling = SamplingParams(temperature=1.0, max_new_tokens=4, seed=1)
    assert all(c.frozen_states is None for c in policy.generate(prompts, sampling=sampling))
    with policy.keeping_frozen_states(1 << 30):
        kept = policy.generate(prompts, sampling=sampling)
    one_batch = kept[0].frozen_states.prefix.numel() * kept[0].frozen_states.prefix.element_size()
    one_batch += sum(c.frozen_states.own.numel() * c.frozen_states.own.element_size() for c in kept)
    with policy.keeping_frozen_states(one_batch):  # room for exactly one batch
        first, second = (policy.generate(prompts, sampling=sampling) for _ in range(2))
    assert all(c.frozen_states is not None for c in first)
    assert all(c.frozen_states is None for c in second)
    with policy.keeping_frozen_states(one_batch - 1):
        assert all(c.frozen_states is None for c in policy.generate(prompts, sampling=sampling))


def test_states_from_the_frozen_layers_alone_match_the_full_pass(top_layer_learner, monkeypatch):
    """Stage 1 trains each pair several times: its states below the trained layer come from one pass
    over the frozen layers only (which stops there), and every pass from them matches the full one."""
    learner = top_layer_learner
    policy = learner.policy
    completions = sampled(policy, n=4, seed=5)
    entered = []
    top = decoder_stack(learner.model).layers[1]
    handle = top.register_forward_hook(lambda *_: entered.append(1))  # after the layer ran
    try:
        states = policy.engine.states_of([c.prompt_token_ids for c in completions], [c.token_ids for c in completions])
    finally:
        handle.remove()
    assert not entered  # the pass stopped below the trained layer
    for state, c in zip(states, completions, strict=True):
        assert len(state) == len(c.prompt_token_ids) + len(c.token_ids) - 1
        kept = c.frozen_states.span(0)  # what sampling kept, in another batch layout: to float error
        assert (state.span(0) - kept).abs().max() < 1e-5 * kept.abs().max()
    assert all(s.prefix.data_ptr() == states[0].prefix.data_ptr() for s in states)  # the shared prefix ran once
    assert 32 <= states[0].prefix.shape[0] < min(len(s) for s in states)
    rows = [ScoreRow(c.prompt_token_ids, c.token_ids, states=s) for c, s in zip(completions, states, strict=True)]
    learner.optimizer.zero_grad(set_to_none=True)
    torch.cat(learner.logprobs(rows, grad=True)).sum().backward()
    grad_states = {n: p.grad.detach().clone() for n, p in learner.model.named_parameters() if p.requires_grad}
    learner.optimizer.zero_grad(set_to_none=True)
    full, grad_full = logprobs_and_grad(learner, completions, with_states=False)
    reused = learner.logprobs(rows, grad=False)
    for a, b in zip(reused, full, strict=True):
        assert (a - b).abs().max() < 1e-5
    scale = max(g.abs().max() for g in grad_full.values())
    for name, g in grad_full.items():
        assert (grad_states[name] - g).abs().max() < 1e-5 * scale, name


def test_no_states_without_frozen_layers():
    assert tiny_random_policy(seed=1).engine.states_of([[1, 2, 3]], [[4, 5]]) is None


def test_states_with_and_without_the_shared_prefix_agree(top_layer_learner):
    """The prefix every row shares runs once in ``states_of``; with sharing off every row runs whole:
    the same states either way (rows of unequal length, more rows than one pass holds)."""
    policy = top_layer_learner.policy
    completions = sampled(policy, n=10, seed=7)
    prompts, tokens = [c.prompt_token_ids for c in completions], [c.token_ids for c in completions]
    shared = policy.engine.states_of(prompts, tokens)
    policy.engine.layout.share_prefix = False
    try:
        whole = policy.engine.states_of(prompts, tokens)
    finally:
        policy.engine.layout.share_prefix = True
    assert all(s.prefix.shape[0] == 0 for s in whole) and shared[0].prefix.shape[0] > 0
    for a, b in zip(shared, whole, strict=True):
        assert len(a) == len(b)
        assert (a.span(0) - b.span(0)).abs().max() < 1e-5 * b.span(0).abs().max()
