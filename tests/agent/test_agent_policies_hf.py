"""The transformers back end on tiny random models: log-prob agreement, batching, stops, images."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from seed_agent.history import EpisodeHistory  # noqa: E402
from seed_agent.policies.base import Policy, SamplingParams  # noqa: E402
from seed_agent.prompts import PromptBuilder, prompt_spec  # noqa: E402
from seed_agent.skills import Skill, inject  # noqa: E402

TOLERANCE = 1e-4
SKILL = Skill("When the box is next to a wall, walk around it before pushing.", step_skills=((2, "Push down now."),))


def prompts(n: int = 4, style: str = "think"):
    """Prompts of different lengths (so the batch is really left-padded)."""
    builder = PromptBuilder(prompt_spec("sokoban"), style=style)
    out = []
    for i in range(n):
        history = EpisodeHistory()
        for j in range(i):
            history.add(f"room {j} " * (3 * j + 1), "up")
        out.append(builder.build("Push the box onto the target.", "#_P_#\n" * (i + 1), ["up", "down"], history))
    return out


def max_gap(completions, scores):
    gaps = [abs(a - b) for c, s in zip(completions, scores, strict=True) for a, b in zip(c.logprobs, s, strict=True)]
    return max(gaps)


def test_is_a_policy(tiny_llama_policy):
    assert isinstance(tiny_llama_policy, Policy)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampled_logprobs_equal_a_teacher_forced_rescore_under_h_and_h_skill(tiny_llama_policy, temperature):
    policy = tiny_llama_policy
    sampling = SamplingParams(temperature=temperature, top_p=0.95, max_new_tokens=24, seed=1)
    h = prompts()
    h_skill = [inject(p, SKILL) for p in h]
    assert all(a != b for a, b in zip(h, h_skill, strict=True))
    for batch in (h, h_skill):
        completions = policy.generate(batch, sampling=sampling)
        assert all(len(c.token_ids) == len(c.logprobs) > 0 for c in completions)
        scores = policy.score(batch, [c.token_ids for c in completions], temperature=temperature)
        gap = max_gap(completions, scores)
        print(f"T={temperature} max |generate - score| = {gap:.2e}")
        assert gap < TOLERANCE
        # the same completions, scored one at a time, give the same numbers as in a batch
        alone = [
            policy.score([p], [c.token_ids], temperature=temperature)[0]
            for p, c in zip(batch, completions, strict=True)
        ]
        assert max_gap(completions, alone) < TOLERANCE


def test_h_skill_rescoring_of_h_tokens_differs_from_h(tiny_llama_policy):
    """The SEED teacher pass: the tokens sampled under h, re-scored under h_skill."""
    policy = tiny_llama_policy
    h = prompts(2)
    completions = policy.generate(h, sampling=SamplingParams(max_new_tokens=12, seed=3))
    ids = [c.token_ids for c in completions]
    under_h = policy.score(h, ids)
    under_skill = policy.score([inject(p, SKILL) for p in h], ids)
    assert [len(x) for x in under_skill] == [len(x) for x in under_h]
    assert max(abs(a - b) for x, y in zip(under_h, under_skill, strict=True) for a, b in zip(x, y, strict=True)) > 1e-3


def test_padding_matters_so_the_agreement_test_can_fail(tiny_llama_policy):
    """Negative control: a left-padded batch scored while attending to its padding is off."""
    policy = tiny_llama_policy
    h = prompts(3)
    completions = policy.generate(h, sampling=SamplingParams(max_new_tokens=8, seed=0))
    ids, _ = policy.encode(h)
    batch = policy.engine.batch([p + c.token_ids for p, c in zip(ids, completions, strict=True)], [{}] * 3)
    with torch.no_grad():
        logits = policy.model(
            input_ids=batch.input_ids,
            position_ids=batch.position_ids,
            attention_mask=torch.ones_like(batch.attention_mask),
        ).logits.float()
    lp = torch.log_softmax(logits[:, :-1], -1).gather(-1, batch.input_ids[:, 1:, None])[..., 0]
    wrong = [lp[row, lp.shape[1] - len(c.token_ids) :].tolist() for row, c in enumerate(completions)]
    assert max_gap(completions, wrong) > 1e-3


def test_greedy_is_batch_invariant_and_seeded_sampling_repeats(tiny_llama_policy):
    policy = tiny_llama_policy
    h = prompts(3)
    greedy = SamplingParams(temperature=0, max_new_tokens=10)
    together = policy.generate(h, sampling=greedy)
    alone = [policy.generate([p], sampling=greedy)[0] for p in h]
    assert [c.token_ids for c in together] == [c.token_ids for c in alone]
    seeded = SamplingParams(max_new_tokens=10, seed=11)
    assert [c.token_ids for c in policy.generate(h, sampling=seeded)] == [
        c.token_ids for c in policy.generate(h, sampling=seeded)
    ]


def test_stop_strings_and_lengths(tiny_llama_policy):
    policy = tiny_llama_policy
    h = prompts(4, style="act")
    long = policy.generate(h, sampling=SamplingParams(max_new_tokens=40, seed=5))
    for c in long:
        assert len(c.token_ids) <= 40
        assert c.finish_reason in ("length", "eos")
        assert c.finish_reason != "length" or len(c.token_ids) == 40
    # stop on a string the model really produced: its first new word
    word = next(w for c in long for w in c.text.split() if len(w) >= 2)
    stopped = policy.generate(h, sampling=SamplingParams(max_new_tokens=40, seed=5, stop=(word,)))
    hit = [c for c in stopped if c.finish_reason == "stop"]
    assert hit
    for c in hit:
        assert c.text.endswith(word)
        assert len(c.token_ids) == len(c.logprobs)


def test_budgeted_builder_uses_the_policy_tokenizer(tiny_llama_policy):
    policy = tiny_llama_policy
    history = EpisodeHistory()
    for i in range(5):
        history.add("long observation " * 40, f"go to cabinet {i}")
    spec = prompt_spec("alfworld")
    full = PromptBuilder(spec).build("put a mug in fridge.", "You see a mug. " * 30, ["look"], history)
    budget = policy.count_tokens(full) - 200
    fitted = PromptBuilder(spec, count_tokens=policy.count_tokens, max_prompt_tokens=budget).build(
        "put a mug in fridge.", "You see a mug. " * 30, ["look"], history
    )
    assert policy.count_tokens(fitted) <= budget
    ids, _ = policy.encode([fitted])
    assert len(ids[0]) == policy.count_tokens(fitted)


# ---------------------------------------------------------------- VLM
def frames(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size=(56 + 28 * (i % 2), 84, 3), dtype=np.uint8) for i in range(n)]


def visual_prompts(n: int):
    builder = PromptBuilder(prompt_spec("sokoban"), style="act", visual=True)
    return [builder.build("Push the box.", "The room is shown in the image. " * (i + 1), ["up"]) for i in range(n)]


def test_vlm_logprobs_agree_under_h_and_h_skill(tiny_vl_policy):
    policy = tiny_vl_policy
    images = [[f] for f in frames(3)]
    h = visual_prompts(3)
    for batch in (h, [inject(p, SKILL) for p in h]):
        completions = policy.generate(batch, images=images, sampling=SamplingParams(max_new_tokens=12, seed=2))
        scores = policy.score(batch, [c.token_ids for c in completions], images=images)
        gap = max_gap(completions, scores)
        print(f"VLM max |generate - score| = {gap:.2e}")
        assert gap < TOLERANCE


def test_vlm_needs_its_3d_positions(tiny_vl_policy):
    """Negative control: plain 1-D positions in a VLM batch with images change the log-probs."""
    policy = tiny_vl_policy
    h = visual_prompts(2)
    images = [[f] for f in frames(2)]
    completions = policy.generate(h, images=images, sampling=SamplingParams(max_new_tokens=6, seed=4))
    ids, vision = policy.encode(h, images)
    batch = policy.engine.batch([p + c.token_ids for p, c in zip(ids, completions, strict=True)], vision)
    assert batch.position_ids.dim() == 3
    flat = (batch.attention_mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        logits = policy.model(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask, position_ids=flat, **batch.vision
        ).logits.float()
    lp = torch.log_softmax(logits[:, :-1], -1).gather(-1, batch.input_ids[:, 1:, None])[..., 0]
    wrong = [lp[row, lp.shape[1] - len(c.token_ids) :].tolist() for row, c in enumerate(completions)]
    assert max_gap(completions, wrong) > 1e-4


def test_vlm_sees_the_image(tiny_vl_policy):
    policy = tiny_vl_policy
    h = visual_prompts(1)
    completion = policy.generate(h, images=[frames(1, seed=0)], sampling=SamplingParams(max_new_tokens=8, seed=0))[0]
    same = policy.score(h, [completion.token_ids], images=[frames(1, seed=0)])[0]
    other = policy.score(h, [completion.token_ids], images=[frames(1, seed=9)])[0]
    assert max(abs(a - b) for a, b in zip(same, completion.logprobs, strict=True)) < TOLERANCE
    assert max(abs(a - b) for a, b in zip(same, other, strict=True)) > 1e-4


def test_image_count_mismatches_are_rejected(tiny_vl_policy, tiny_llama_policy):
    h = visual_prompts(1)
    with pytest.raises(ValueError, match="placeholder"):
        tiny_vl_policy.generate(h, images=[[]])
    with pytest.raises(ValueError, match="text-only"):
        tiny_llama_policy.generate(h, images=[frames(1)])
    with pytest.raises(ValueError, match="image lists"):
        tiny_vl_policy.generate(h, images=[frames(1), frames(1)])


def test_vlm_loads_from_a_saved_folder(tmp_path, tiny_vl_policy):
    """``from_pretrained(vlm=True)``: model, tokenizer, image processor and the processor's chat template."""
    from seed_agent.policies.hf import TransformersPolicy

    folder = tmp_path / "tiny-vl"
    tiny_vl_policy.model.save_pretrained(folder)
    tiny_vl_policy.tokenizer.save_pretrained(folder)
    tiny_vl_policy.image_processor.save_pretrained(folder)
    template = tiny_vl_policy.tokenizer.chat_template
    (folder / "chat_template.jinja").write_text(template, encoding="utf-8")
    loaded = TransformersPolicy.from_pretrained(str(folder), vlm=True)
    h = visual_prompts(2)
    images = [[f] for f in frames(2)]
    completions = tiny_vl_policy.generate(h, images=images, sampling=SamplingParams(max_new_tokens=6, seed=8))
    again = loaded.score(h, [c.token_ids for c in completions], images=images)
    assert max_gap(completions, again) < TOLERANCE


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_each_sampled_token_reports_the_entropy_of_its_distribution(tiny_llama_policy, temperature):
    policy = tiny_llama_policy
    (completion,) = policy.generate(
        prompts(1, style="act"), sampling=SamplingParams(temperature=temperature, max_new_tokens=3, seed=0)
    )
    assert len(completion.entropies) == len(completion.token_ids) > 0
    ids = torch.tensor([completion.prompt_token_ids + completion.token_ids])
    with torch.no_grad():
        logits = policy.model(input_ids=ids).logits[0].float()
    start = len(completion.prompt_token_ids) - 1
    for t, reported in enumerate(completion.entropies):
        log_p = torch.log_softmax(logits[start + t] / temperature, dim=-1)
        by_hand = float(-(log_p.exp() * log_p).sum())
        assert reported == pytest.approx(by_hand, abs=1e-3)


@pytest.mark.parametrize("visual", [False, True])
def test_greedy_rows_that_stop_leave_the_batch_without_changing_the_others(tiny_llama_policy, tiny_vl_policy, visual):
    policy = tiny_vl_policy if visual else tiny_llama_policy
    h = visual_prompts(3) if visual else prompts(4, style="act")
    images = [[f] for f in frames(3)] if visual else None
    greedy = SamplingParams(temperature=0, max_new_tokens=16)
    free = policy.generate(h, images=images, sampling=greedy)
    # end rows at different steps: each row's own token at a different position becomes an end token
    ends = {c.token_ids[2 + 3 * i] for i, c in enumerate(free[:2])}
    engine = policy.engine
    saved = engine.eos_ids
    runs = {}
    try:
        engine.eos_ids = frozenset(saved | ends)
        for prune in (False, True):
            engine.prune_finished = prune
            runs[prune] = policy.generate(h, images=images, sampling=greedy)
    finally:
        engine.eos_ids, engine.prune_finished = saved, True
    lengths = {len(c.token_ids) for c in runs[True]}
    assert len(lengths) > 1  # rows really stopped at different steps (so rows left the batch)
    for pruned, kept in zip(runs[True], runs[False], strict=True):
        assert pruned.token_ids == kept.token_ids and pruned.finish_reason == kept.finish_reason
        assert pruned.logprobs == pytest.approx(kept.logprobs, abs=1e-5)
