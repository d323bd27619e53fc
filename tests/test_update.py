"""The update step: token-bounded micro-batches, exact gradient accumulation, and the
gradients of L = L_GRPO + c KL + lambda L_opd against hand-built losses."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from seed_agent.tiny_models import tiny_random_policy  # noqa: E402
from seed_rl.records.rows import ScoreRow, TrainRow  # noqa: E402
from seed_rl.train.learner.learner import Learner  # noqa: E402
from seed_rl.train.learner.packing import pack_by_tokens  # noqa: E402
from seed_rl.train.phases.update import LossSettings, minibatch_episodes, optimize  # noqa: E402


def test_pack_by_tokens_bounds_padded_size_and_keeps_every_row():
    lengths = [50, 10, 300, 40, 40, 5, 1000, 60]
    batches = pack_by_tokens(lengths, budget=200)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        longest = max(lengths[i] for i in batch)
        assert len(batch) == 1 or longest * len(batch) <= 200
    assert [6] in batches and [2] in batches  # rows over the budget go alone
    assert pack_by_tokens(lengths, 10**6) == [sorted(range(8), key=lambda i: -lengths[i])]
    with pytest.raises(ValueError):
        pack_by_tokens(lengths, 0)


def test_pack_by_tokens_counts_a_shared_prefix_once_and_keeps_the_padded_cap():
    lengths = [100, 100, 100, 100, 90]  # every row starts with the same 80 tokens
    # cost of n rows, the longest L: 80 + n * (L - 80); by hand, all five: 80 + 5 * 20 = 180
    assert pack_by_tokens(lengths, budget=180, shared=80) == [[0, 1, 2, 3, 4]]
    assert pack_by_tokens(lengths, budget=179, shared=80) == [[0, 1, 2, 3], [4]]  # 80 + 4 * 20 = 160
    assert pack_by_tokens(lengths, budget=180) == [[0], [1], [2], [3], [4]]  # unshared: 100 per row
    # a padded cap (the memory budget) still bounds rows * longest: 3 * 100 = 300
    assert pack_by_tokens(lengths, budget=180, shared=80, padded_cap=300) == [[0, 1, 2], [3, 4]]


def test_minibatches_hold_whole_trajectories():
    chunks = minibatch_episodes([0, 0, 1, 2, 2, 2, 3], 2, np.random.default_rng(0))
    assert sorted(e for c in chunks for e in c) == [0, 1, 2, 3] and len(chunks) == 2


class Captured:
    """Stands in for ``Learner.step``: keeps the accumulated gradient instead of stepping."""

    def __init__(self, learner):
        self.learner = learner
        self.grads = []

    def __call__(self):
        self.grads.append(
            {
                n: p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
                for n, p in self.learner.model.named_parameters()
                if p.requires_grad
            }
        )
        self.learner.optimizer.zero_grad(set_to_none=True)
        return 0.0


@pytest.fixture(scope="module")
def learner():
    policy = tiny_random_policy(seed=3)
    torch.manual_seed(0)  # peft draws lora_A from the global generator: the same adapters every run
    learner = Learner(policy, finetune="lora", lr=0.0, token_budget=10**6)
    # give the adapters non-zero weights, so the LoRA model differs from its reference
    with torch.no_grad():
        for name, p in learner.model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn_like(p) * 0.5)
    return learner


def make_rows(learner, n=5, seed=0, with_skill=True):
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for i in range(n):
        prompt = torch.randint(5, 500, (int(torch.randint(8, 40, (1,), generator=gen)),), generator=gen).tolist()
        tokens = torch.randint(5, 500, (int(torch.randint(1, 6, (1,), generator=gen)),), generator=gen).tolist()
        score = ScoreRow(prompt, tokens)
        with torch.no_grad():
            old = learner.logprobs([score], grad=False)[0]
            ref = learner.logprobs([score], grad=False, reference=True)[0]
        skill = old + torch.randn(len(tokens), generator=gen) if with_skill and i % 2 == 0 else None
        rows.append(
            TrainRow(
                episode=i // 2,
                score=score,
                old_logp=old,
                advantage=float(i % 3) - 1.0,
                sampler_logp=old,
                ref_logp=ref,
                skill_logp=skill,
            )
        )
    return rows


def grads(learner, rows, settings, budget):
    learner.token_budget = budget
    captured = Captured(learner)
    original = learner.step
    learner.step = captured
    try:
        stats = optimize(learner, rows, settings)
    finally:
        learner.step = original
        learner.token_budget = 10**6
    return captured.grads[0], stats


def assert_same(a, b, tol=1e-5):
    """Equal up to float rounding: the largest difference within ``tol`` of the largest entry."""
    for name in a:
        scale = max(1.0, float(a[name].abs().max()))
        assert float((a[name] - b[name]).abs().max()) <= tol * scale, name


SETTINGS = LossSettings(kl_coef=0.05, lambda_opd=0.3, beta_opd=5.0)


def test_micro_batches_accumulate_to_the_full_batch_gradient(learner):
    rows = make_rows(learner)
    whole, stats_whole = grads(learner, rows, SETTINGS, budget=10**6)
    split, stats_split = grads(learner, rows, SETTINGS, budget=30)  # about one row per micro-batch
    assert_same(whole, split)
    for key in ("loss", "grpo_loss", "kl", "opd_loss", "gate_mean"):
        assert stats_whole[key] == pytest.approx(stats_split[key], rel=1e-5, abs=1e-7)
    assert any(float(g.abs().sum()) > 0 for g in whole.values())


def test_the_update_gradient_equals_the_hand_built_loss(learner):
    rows = make_rows(learner, seed=1)
    got, stats = grads(learner, rows, SETTINGS, budget=10**6)
    # the same total written out by hand: token means over the whole batch
    learner.optimizer.zero_grad(set_to_none=True)
    logps = learner.logprobs([r.score for r in rows], grad=True)
    logp = torch.cat(logps)
    adv = torch.cat([torch.full((r.tokens,), r.advantage) for r in rows])
    old = torch.cat([r.old_logp for r in rows])
    ref = torch.cat([r.ref_logp for r in rows])
    ratio = torch.exp(logp - old)
    grpo = torch.maximum(-adv * ratio, -adv * ratio.clamp(0.8, 1.2)).mean()
    d = ref - logp
    kl = (torch.exp(d) - d - 1).mean()
    skilled = [i for i, r in enumerate(rows) if r.skill_logp is not None]
    lp_s = torch.cat([logps[i] for i in skilled])
    teacher = torch.cat([rows[i].skill_logp for i in skilled])
    gate = torch.sigmoid(5.0 * (teacher - lp_s.detach()))
    opd = (gate * (teacher - lp_s)).mean()
    total = grpo + 0.05 * kl + 0.3 * opd
    total.backward()
    expected = {n: p.grad.detach().clone() for n, p in learner.model.named_parameters() if p.requires_grad}
    learner.optimizer.zero_grad(set_to_none=True)
    assert_same(got, expected)
    assert stats["loss"] == pytest.approx(float(total), rel=1e-5)


def test_trajectory_mean_gives_every_trajectory_one_share_by_hand(learner):
    rows = make_rows(learner, n=6, seed=4, with_skill=False)
    settings = LossSettings(kl_coef=0.0, lambda_opd=0.0, loss_agg="trajectory-mean")
    got, stats = grads(learner, rows, settings, budget=30)  # several micro-batches
    # by hand: each trajectory's token mean of the clipped term, then the mean over trajectories
    learner.optimizer.zero_grad(set_to_none=True)
    logps = learner.logprobs([r.score for r in rows], grad=True)
    per_episode = {}
    for r, lp in zip(rows, logps, strict=True):
        ratio = torch.exp(lp - r.old_logp)
        term = torch.maximum(-r.advantage * ratio, -r.advantage * ratio.clamp(0.8, 1.2))
        per_episode.setdefault(r.episode, []).append(term)
    total = torch.stack([torch.cat(terms).mean() for terms in per_episode.values()]).mean()
    total.backward()
    expected = {n: p.grad.detach().clone() for n, p in learner.model.named_parameters() if p.requires_grad}
    learner.optimizer.zero_grad(set_to_none=True)
    assert_same(got, expected)
    assert stats["grpo_loss"] == pytest.approx(float(total), rel=1e-5, abs=1e-7)
    token_mean_grads, _ = grads(learner, rows, LossSettings(kl_coef=0.0, lambda_opd=0.0), budget=10**6)
    assert any(not torch.allclose(got[n], token_mean_grads[n]) for n in got)  # the rows differ in length


def test_lambda_zero_means_no_opd_gradient(learner):
    rows = make_rows(learner, seed=2)
    no_skill = [TrainRow(r.episode, r.score, r.old_logp, r.advantage, r.sampler_logp, r.ref_logp, None) for r in rows]
    off = LossSettings(kl_coef=0.05, lambda_opd=0.0)
    with_skills, stats = grads(learner, rows, off, budget=10**6)
    without, _ = grads(learner, no_skill, off, budget=10**6)
    assert_same(with_skills, without, tol=0.0)
    assert "gate_mean" in stats  # still reported


def test_with_lambda_zero_the_gate_is_the_mean_over_the_rows_trained(learner):
    """The OPD statistics of lambda_opd = 0 (the seed-lambda0 control) cover the rows scored:
    rows of tied groups are skipped, and must not dilute the gate mean."""
    rows = make_rows(learner, n=6, seed=5)
    settings = LossSettings(kl_coef=0.0, lambda_opd=0.0, beta_opd=5.0)
    _, stats = grads(learner, rows, settings, budget=10**6)
    trained = [r for r in rows if r.advantage != 0 and r.skill_logp is not None]
    skipped = [r for r in rows if r.advantage == 0 and r.skill_logp is not None]
    assert trained and skipped  # the case the bug hid in
    with torch.no_grad():
        logp = torch.cat(learner.logprobs([r.score for r in trained], grad=False))
    gate = torch.sigmoid(5.0 * (torch.cat([r.skill_logp for r in trained]) - logp))
    assert stats["gate_mean"] == pytest.approx(float(gate.mean()), rel=1e-5)


def test_zero_advantage_rows_without_kl_or_skill_are_skipped_but_counted(learner):
    rows = make_rows(learner, seed=4, with_skill=False)
    settings = LossSettings(kl_coef=0.0, lambda_opd=0.0)
    got, stats = grads(learner, rows, settings, budget=10**6)
    zero = sum(r.advantage == 0 for r in rows)
    assert zero > 0 and stats["rows_skipped"] == zero
    # the skipped rows still count in the token mean: compare with a hand-built loss over all rows
    learner.optimizer.zero_grad(set_to_none=True)
    logp = torch.cat(learner.logprobs([r.score for r in rows], grad=True))
    adv = torch.cat([torch.full((r.tokens,), r.advantage) for r in rows])
    (-adv * torch.exp(logp - torch.cat([r.old_logp for r in rows]))).mean().backward()
    expected = {n: p.grad.detach().clone() for n, p in learner.model.named_parameters() if p.requires_grad}
    learner.optimizer.zero_grad(set_to_none=True)
    assert_same(got, expected)


def test_generation_logprobs_are_the_learners_old_logprobs(learner):
    from seed_agent.policies.base import SamplingParams
    from seed_agent.prompts import PromptBuilder, prompt_spec

    builder = PromptBuilder(prompt_spec("sokoban"), style="act")
    prompts = [builder.build("Push the box.", "#_P_#\n" * (i + 1), ["up", "down"]) for i in range(3)]
    completions = learner.policy.generate(prompts, sampling=SamplingParams(temperature=1.0, max_new_tokens=6, seed=5))
    rows = [ScoreRow(c.prompt_token_ids, c.token_ids) for c in completions]
    for grad in (False, True):
        scored = learner.logprobs(rows, grad=grad)
        gap = max(
            float((lp.detach() - torch.tensor(c.logprobs)).abs().max())
            for lp, c in zip(scored, completions, strict=True)
        )
        assert gap < 1e-4


def test_a_shared_prompt_prefix_changes_neither_logprobs_nor_gradients(learner):
    """Rows that start alike compute that prefix once; per-token log-probs and the gradient agree
    with the unshared pass within 1e-5 (fp32), in sampling and in training."""
    from seed_agent.policies.base import SamplingParams
    from seed_agent.prompts import PromptBuilder, prompt_spec

    policy = learner.policy
    builder = PromptBuilder(prompt_spec("sokoban"), style="act")
    prompts = [builder.build("Push the box.", "#_P_#\n" * (i + 1), ["up", "down"]) for i in range(4)]
    ids, vision = policy.encode(prompts)
    assert policy.engine.layout.shared_prefix_length(ids, vision) >= 32  # the system message and the example turn
    sampling = SamplingParams(temperature=1.0, max_new_tokens=6, seed=11)
    runs = {}
    for share in (True, False):
        policy.engine.layout.share_prefix = share
        completions = policy.generate(prompts, sampling=sampling)
        rows = [ScoreRow(c.prompt_token_ids, c.token_ids) for c in completions]
        learner.optimizer.zero_grad(set_to_none=True)
        logps = learner.logprobs(rows, grad=True)
        torch.cat(logps).sum().backward()
        grad = {n: p.grad.detach().clone() for n, p in learner.model.named_parameters() if p.requires_grad}
        learner.optimizer.zero_grad(set_to_none=True)
        runs[share] = (completions, [lp.detach() for lp in logps], grad)
    policy.engine.layout.share_prefix = True
    (c_on, lp_on, g_on), (c_off, lp_off, g_off) = runs[True], runs[False]
    assert [c.token_ids for c in c_on] == [c.token_ids for c in c_off]
    for a, b in zip(c_on, c_off, strict=True):
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-5
    for a, b in zip(lp_on, lp_off, strict=True):
        assert float((a - b).abs().max()) < 1e-5
    assert_same(g_on, g_off)


def test_rows_sharing_a_prefix_pack_into_fewer_micro_batches_with_the_same_gradient(learner):
    prefix = torch.randint(5, 500, (60,), generator=torch.Generator().manual_seed(12)).tolist()
    rows = make_rows(learner, n=6, seed=13)
    for r in rows:
        r.score = ScoreRow(prefix + r.score.prompt_ids, r.score.token_ids)
        with torch.no_grad():
            r.old_logp = r.sampler_logp = learner.logprobs([r.score], grad=False)[0]
            r.ref_logp = learner.logprobs([r.score], grad=False, reference=True)[0]
    longest = max(r.score.length for r in rows)
    budget = 60 + len(rows) * (longest - 60)  # room for all when the prefix counts once, not otherwise
    assert learner.layout([r.score for r in rows]).shared >= 60
    counts, got = {}, {}
    for share in (False, True):
        learner.policy.engine.layout.share_prefix = share
        got[share], _ = grads(learner, rows, SETTINGS, budget=budget)
        learner.token_budget = budget
        counts[share] = len(learner.micro_batches([r.score for r in rows]))
        learner.token_budget = 10**6
    assert counts[True] == 1 < counts[False]
    assert_same(got[True], got[False])


def test_fixed_rows_per_micro_batch_is_the_naive_split(learner):
    rows = [r.score for r in make_rows(learner, n=5, seed=14)]
    learner.micro_batch_rows = 2
    try:
        assert learner.micro_batches(rows) == [[0, 1], [2, 3], [4]]
    finally:
        learner.micro_batch_rows = 0


def test_old_logprobs_from_the_pass_itself_equal_a_separate_rescore(learner):
    """One optimizer step: each row's pass with gradient, before the step, is the learner's old
    log-prob. The loss, statistics and gradient equal those of a separate re-scoring pass, and the
    importance weights correct for the sampler."""
    settings = LossSettings(kl_coef=0.05, lambda_opd=0.3, correct_sampler=True)
    rescored = make_rows(learner, seed=15)
    noise = torch.Generator().manual_seed(16)
    for r in rescored:  # a sampler that differs from the learner by up to 0.3 per token
        r.sampler_logp = r.old_logp + 0.3 * (torch.rand(r.tokens, generator=noise) * 2 - 1)
    deferred = [
        TrainRow(r.episode, r.score, r.sampler_logp.clone(), r.advantage, r.sampler_logp, r.ref_logp, r.skill_logp)
        for r in rescored
    ]
    for r in deferred:
        r.old_from_pass = True
    got_rescored, stats_rescored = grads(learner, rescored, settings, budget=10**6)
    got_deferred, stats_deferred = grads(learner, deferred, settings, budget=10**6)
    assert_same(got_rescored, got_deferred)
    for key in ("loss", "grpo_loss", "kl", "opd_loss", "is_weight_mean"):
        assert stats_deferred[key] == pytest.approx(stats_rescored[key], rel=1e-5, abs=1e-7), key
    assert stats_deferred["sampler_gap_max"] == pytest.approx(0.3, abs=0.05)  # measured from the pass
    for a, b in zip(deferred, rescored, strict=True):
        assert float((a.old_logp - b.old_logp).abs().max()) < 1e-5  # the learner's, after the pass
    with pytest.raises(ValueError, match="one optimizer step"):
        optimize(learner, deferred, settings, minibatches=2)


def test_the_mean_importance_weight_runs_over_the_rows_trained(learner):
    """Skipped rows (advantage 0, no KL, no skill) take no importance weight: the logged mean is the
    token mean of ``min(exp(old - sampler), cap)`` over the trained rows, by hand."""
    from seed_rl.algo.losses import truncated_is_weights

    settings = LossSettings(kl_coef=0.0, lambda_opd=0.0, correct_sampler=True)
    rows = make_rows(learner, n=6, seed=17, with_skill=False)
    noise = torch.Generator().manual_seed(18)
    for r in rows:
        r.sampler_logp = r.old_logp + 0.4 * (torch.rand(r.tokens, generator=noise) * 2 - 1)
    trained = [r for r in rows if r.advantage != 0]
    assert 0 < len(trained) < len(rows)
    weights = torch.cat([truncated_is_weights(r.old_logp, r.sampler_logp, settings.is_cap) for r in trained])
    _, stats = grads(learner, rows, settings, budget=10**6)
    assert stats["is_weight_mean"] == pytest.approx(float(weights.mean()), rel=1e-5)


def test_gradient_checkpointing_gives_the_same_gradient():
    torch.manual_seed(0)  # peft draws the LoRA A matrices from torch's global generator
    plain = Learner(tiny_random_policy(seed=5), finetune="lora", lr=0.0)
    torch.manual_seed(0)
    checkpointed = Learner(tiny_random_policy(seed=5), finetune="lora", lr=0.0, gradient_checkpointing=True)
    model = checkpointed.model
    assert getattr(model, "is_activation_checkpointing", None) or model.is_gradient_checkpointing
    for a, b in zip(plain.model.parameters(), checkpointed.model.parameters(), strict=True):
        assert torch.equal(a, b)
    rows = make_rows(plain, n=3, seed=6)
    got = [grads(learner, rows, SETTINGS, budget=10**6)[0] for learner in (plain, checkpointed)]
    assert_same(*got)


def test_bfloat16_base_weights_keep_fp32_adapters_and_fp32_logprobs():
    policy = tiny_random_policy(seed=7)
    policy.model.to(torch.bfloat16)
    learner = Learner(policy, finetune="lora", lr=0.0)
    dtypes = {n.split(".")[-2] if "lora_" in n else "base": p.dtype for n, p in learner.model.named_parameters()}
    assert dtypes["base"] == torch.bfloat16
    assert {p.dtype for p in learner.trainable} == {torch.float32}
    rows = make_rows(learner, n=2, seed=8)
    assert all(lp.dtype == torch.float32 for lp in learner.logprobs([r.score for r in rows], grad=False))
    # the LM head gets a contiguous input (one matmul, not a batched one over copies of its weight)
    seen = []
    hook = learner.model.get_output_embeddings().register_forward_pre_hook(
        lambda module, args: seen.append(args[0].is_contiguous())
    )
    learner.logprobs([r.score for r in rows], grad=False)
    hook.remove()
    assert seen and all(seen)


def test_dtype_auto_is_bfloat16_only_where_the_hardware_has_it(monkeypatch):
    import seed_agent.models as models

    monkeypatch.setattr(models, "native_bf16", lambda: "a CPU with AVX512-BF16")
    assert models.resolve_dtype("auto") == "bfloat16"
    monkeypatch.setattr(models, "native_bf16", lambda: "")
    assert models.resolve_dtype("auto") == "float32"
    assert models.resolve_dtype("bfloat16") == "bfloat16"
    with pytest.raises(ValueError, match="allowed: auto, float32, bfloat16"):
        models.resolve_dtype("fp8")


def test_lora_layers_puts_adapters_in_the_top_layers_only():
    from seed_rl.train.learner.learner import LoraSettings

    learner = Learner(tiny_random_policy(seed=9), finetune="lora", lora=LoraSettings(layers=1))
    names = [n for n, p in learner.model.named_parameters() if p.requires_grad]
    assert names and all(".layers.1." in n for n in names)  # the tiny Llama has layers 0 and 1
