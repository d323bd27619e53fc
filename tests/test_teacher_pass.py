"""SEED's teacher pass with each episode's shared ``h_skill`` prefix computed once
(``share_groups``): the same log-probs as the pass that runs every row whole, on hand-made
Sokoban episodes of several steps, with and without step skills, with and without history."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from seed_agent.history import EpisodeHistory  # noqa: E402
from seed_agent.policies.engine.generation import GenerationEngine  # noqa: E402
from seed_agent.policies.engine.layout import MIN_SHARED_PREFIX, group_layout  # noqa: E402
from seed_agent.prompts import PromptBuilder, prompt_spec  # noqa: E402
from seed_agent.skills import NoSkill, Skill  # noqa: E402
from seed_agent.tiny_models import tiny_random_policy  # noqa: E402
from seed_rl.rollout import Episode, StepRow  # noqa: E402
from seed_rl.train.learner.learner import Learner  # noqa: E402
from seed_rl.train.learner.packing import grouped_cost, pack_by_tokens  # noqa: E402
from seed_rl.train.phases.skill_pass import teacher_logprobs, teacher_rows  # noqa: E402
from seed_rl.train.phases.train_rows import encode_steps  # noqa: E402

#: The episodes' lengths in steps: a group of one, and groups of several (the last has no skill).
STEPS = (3, 1, 4, 2)


@pytest.fixture(scope="module")
def learner():
    torch.manual_seed(0)  # peft draws lora_A from the global generator
    learner = Learner(tiny_random_policy(seed=3), finetune="lora", lr=0.0, token_budget=10**6)
    with torch.no_grad():  # non-zero adapters: the policy differs from the base model
        for name, p in learner.model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn_like(p) * 0.5)
    return learner


def make_episodes(learner, history_length):
    """Episodes of :data:`STEPS` steps, each step's prompt as sampled and random reply tokens."""
    builder = PromptBuilder(prompt_spec("sokoban"), style="act", history_length=history_length)
    gen = torch.Generator().manual_seed(history_length)
    episodes = []
    for e, steps in enumerate(STEPS):
        history, rows = EpisodeHistory(), []
        for s in range(steps):
            observation = f"Player at row {s + 1}, column {e + 2}.\nBox at row 3, column {s + e}." * (1 + s % 2)
            prompt = builder.build(f"Push the box onto the target in room {e}.", observation, ["up", "left"], history)
            ((ids,), _) = learner.policy.encode([prompt])
            tokens = torch.randint(5, 500, (2 + (s + e) % 4,), generator=gen).tolist()
            rows.append(StepRow(e, 0, s + 1, observation, "up", "up", True, True, 0.0, 0.0, {}, prompt, ids, tokens))
            history.add(observation, "up")
        episodes.append(Episode(e, 0, "seed/Sokoban-v0", f"t{e}", f"room {e}", {}, rows=rows))
    return episodes


def make_skills(step_skills):
    skills = []
    for e, steps in enumerate(STEPS):
        per_step = tuple((s, f"step {s}: push the box {'left' if s % 2 else 'up'} once") for s in (1, 3) if s <= steps)
        text = f"Room {e}: walk around the box first, " + "then push it twice, " * e + "and stop."
        skills.append(Skill(text, "", per_step * step_skills))  # skills of different lengths
    skills[3] = NoSkill("did not parse")  # an episode without a skill has no teacher rows
    return skills


def teacher(learner, episodes, skills, share_groups):
    places = [(e, s) for e, episode in enumerate(episodes) for s in range(len(episode.rows))]
    learner.policy.engine.layout.share_groups = share_groups
    try:
        return teacher_logprobs(
            learner,
            episodes,
            skills,
            places,
            lambda steps, prompts: encode_steps(learner, steps, prompts),
            max_prompt_tokens=4000,
            temperature=1.0,
        )
    finally:
        learner.policy.engine.layout.share_groups = True


def skill_rows(learner, episodes, skills):
    """The teacher pass's rows: each step under ``h_skill``, labelled with its episode."""
    places = [(e, s) for e, episode in enumerate(episodes) for s in range(len(episode.rows))]

    def encode(steps, prompts):
        return encode_steps(learner, steps, prompts)

    return teacher_rows(learner, episodes, skills, places, encode, max_prompt_tokens=4000).rows


def assert_close(a, b, tol=1e-5):
    """Equal up to float rounding, relative to the size of the log-probs."""
    assert a.keys() == b.keys()
    for i in a:
        scale = max(1.0, float(a[i][0].abs().max()))
        assert float((a[i][0] - b[i][0]).abs().max()) <= tol * scale, i
        assert a[i][1] == b[i][1]


@pytest.mark.parametrize(("history_length", "step_skills"), [(2, False), (2, True), (0, True), (0, False)])
def test_the_per_episode_shared_prefix_gives_the_full_pass_logprobs(learner, monkeypatch, history_length, step_skills):
    episodes, skills = make_episodes(learner, history_length), make_skills(step_skills)
    layouts = []
    original = GenerationEngine._grouped_forward
    monkeypatch.setattr(
        GenerationEngine,
        "_grouped_forward",
        lambda self, seqs, prefix, layout, keep: layouts.append(layout) or original(self, seqs, prefix, layout, keep),
    )
    shared = teacher(learner, episodes, skills, share_groups=True)
    assert len(layouts) == 1  # one batched pass over every episode
    whole = teacher(learner, episodes, skills, share_groups=False)
    assert len(layouts) == 1
    assert_close(shared, whole)
    assert any(flag for _, flag in shared.values()) == step_skills
    (layout,) = layouts
    # every episode of several steps shares more than the batch's prefix: at least the task and skill
    for rows in layout.groups:
        if len(rows) > 1:
            assert {layout.ends[r] for r in rows} == {layout.ends[rows[0]]}
            assert layout.ends[rows[0]] - layout.shared >= MIN_SHARED_PREFIX


def test_gradients_through_the_grouped_pass_equal_the_full_pass(learner):
    rows = skill_rows(learner, make_episodes(learner, history_length=2), make_skills(True))
    assert len(learner.layout(rows).groups) < len(rows)  # some rows share a group prefix
    runs = {}
    for share in (True, False):
        learner.policy.engine.layout.share_groups = share
        learner.optimizer.zero_grad(set_to_none=True)
        logps = learner.logprobs(rows, grad=True)
        torch.cat(logps).sum().backward()
        grads = {n: p.grad.clone() for n, p in learner.model.named_parameters() if p.requires_grad}
        runs[share] = ([lp.detach() for lp in logps], grads)
    learner.policy.engine.layout.share_groups = True
    learner.optimizer.zero_grad(set_to_none=True)
    for a, b in zip(runs[True][0], runs[False][0], strict=True):
        assert float((a - b).abs().max()) <= 1e-5 * max(1.0, float(a.abs().max()))
    for name, grad in runs[True][1].items():
        assert float((grad - runs[False][1][name]).abs().max()) <= 1e-5 * max(1.0, float(grad.abs().max())), name


def test_micro_batches_keep_an_episode_together_and_score_the_same(learner, monkeypatch):
    episodes, skills = make_episodes(learner, history_length=2), make_skills(True)
    rows = skill_rows(learner, episodes, skills)
    layout = learner.layout(rows)
    groups, ends, shared = layout.group_of_rows(), list(layout.ends), layout.shared
    lengths = [r.length for r in rows]
    first_two = [i for i, r in enumerate(rows) if r.group in (0, 2)]
    budget = grouped_cost(*([seq[i] for i in first_two] for seq in (lengths, ends, groups)), shared)
    assert budget < grouped_cost(lengths, ends, groups, shared)  # not every episode fits one pass
    calls = []
    original = type(learner.policy).score_ids
    monkeypatch.setattr(
        type(learner.policy), "score_ids", lambda self, *a, **k: calls.append(k["groups"]) or original(self, *a, **k)
    )
    whole = teacher(learner, episodes, skills, share_groups=False)
    calls.clear()
    learner.token_budget = budget
    try:
        split = teacher(learner, episodes, skills, share_groups=True)
    finally:
        learner.token_budget = 10**6
    assert len(calls) > 1
    held = {label: sum(label in labels for labels in calls) for labels in calls for label in labels}
    assert set(held) == {0, 1, 2} and set(held.values()) == {1}  # no episode split over two passes
    assert_close(split, whole)


def test_the_group_layout_by_hand():
    shared = [1, 2, 3]
    a = [*shared, 7, 7, 7, 1, 1]
    b = [*shared, 7, 7, 7, 2, 2, 2]
    c = [*shared, 7, 5, 5, 5]  # labelled with a and b, but differs earlier: shares only what it shares
    d = [*shared, *[9] * 8]  # alone in its group
    layout = group_layout([a, b, c, d], ["x", "x", "x", None], shared=3, own=1, minimum=1)
    assert layout.groups == ((0, 1, 2), (3,))
    # the group shares 4 tokens; its widest own part is b's 5 (from 4 to 9); d keeps 5 of its 11
    assert layout.ends == (4, 4, 4, 6)
    assert layout.group_of_rows() == [0, 0, 0, 1]
    assert group_layout([a, c], ["x", "x"], shared=3, own=1, minimum=2) is None  # 1 token past the prefix
    assert group_layout([a, d], ["x", "y"], shared=3, own=1, minimum=1) is None  # no group of two rows
    # each row keeps `own` tokens: two identical rows share all but those
    assert group_layout([a, a, d], [0, 0, 1], shared=3, own=2, minimum=1).ends == (6, 6, 9)


def test_pack_by_tokens_takes_groups_together_and_counts_their_prefix_once():
    lengths = [100, 100, 100, 95, 95]
    groups = [0, 0, 1, 1, 0]
    ends = [80, 80, 90, 90, 80]  # group 0 shares 80 tokens, group 1 90, past a batch prefix of 50
    # both groups at once: 50 + 2 * 40 + 5 * 20 = 230 tokens
    assert pack_by_tokens(lengths, 230, shared=50, groups=groups, ends=ends) == [[0, 1, 4, 2, 3]]
    # a budget of 229: group 1 starts the next batch, whole: 50 + 30 + 3 * 20 = 140 and 50 + 40 + 2 * 10 = 110
    assert pack_by_tokens(lengths, 229, shared=50, groups=groups, ends=ends) == [[0, 1, 4], [2, 3]]
    # a padded cap of 299 splits group 0, which alone holds 3 * (50 + 30 + 20) = 300
    assert pack_by_tokens(lengths, 10**6, shared=50, padded_cap=299, groups=groups, ends=ends) == [[0, 1], [4], [2, 3]]
    # without groups, the rows alone: as before
    assert pack_by_tokens(lengths, 10**6, shared=50) == [[0, 1, 2, 3, 4]]


def test_images_or_no_shared_prefix_fall_back_to_whole_rows(learner):
    policy = learner.policy
    sequences = [[*range(5, 60), i, i] for i in range(4)]
    labels = [0, 0, 1, 1]
    assert policy.engine.layout.group_layout(sequences, [{}] * 4, labels) is None  # nothing past the batch prefix
    sequences = [[*range(5, 45), *[g] * 40, i] for i, g in enumerate(labels)]
    assert policy.engine.layout.group_layout(sequences, [{}] * 4, labels) is not None
    assert policy.engine.layout.group_layout(sequences, [{}, {}, {"pixel_values": torch.zeros(1)}, {}], labels) is None
    policy.engine.layout.share_prefix = False  # as under FSDP, where an extra pass would break the processes' lockstep
    try:
        assert policy.engine.layout.group_layout(sequences, [{}] * 4, labels) is None
    finally:
        policy.engine.layout.share_prefix = True


def test_episodes_alike_to_the_end_are_scored_once_and_get_the_same_logprobs(learner, monkeypatch):
    episodes, skills = make_episodes(learner, 2), make_skills(False)
    twin = Episode(4, 0, "seed/Sokoban-v0", "t0", "room 0", {}, rows=list(episodes[0].rows))  # episode 0 again
    scored = []
    original = Learner.logprobs
    monkeypatch.setattr(
        Learner, "logprobs", lambda self, rows, **kw: scored.append(len(rows)) or original(self, rows, **kw)
    )
    alone = teacher(learner, episodes, skills, share_groups=True)
    with_twin = teacher(learner, [*episodes, twin], [*skills, skills[0]], share_groups=True)
    rows_of = {e: len(episode.rows) for e, episode in enumerate(episodes)}
    assert scored == [sum(rows_of.values()) - rows_of[3]] * 2  # the twin's 3 rows were not scored again
    first = len(with_twin) - STEPS[0]
    twin_rows = sorted(with_twin)[first:]
    for i, j in zip(range(STEPS[0]), twin_rows, strict=True):  # the twin's rows took episode 0's log-probs
        assert torch.equal(with_twin[j][0], with_twin[i][0])
    assert_close({i: with_twin[i] for i in alone}, alone)
    # with another skill the twin's rows differ from episode 0's, so they are scored
    other = teacher(learner, [*episodes, twin], [*skills, skills[1]], share_groups=True)
    assert scored[-1] == scored[0] + STEPS[0] and len(other) == len(with_twin)


def test_distinct_rows_by_hand():
    from seed_rl.records.rows import ScoreRow
    from seed_rl.train.phases.skill_pass import distinct_rows

    rows = [ScoreRow([1, 2], [3]), ScoreRow([1, 2], [4]), ScoreRow([1, 2], [3]), ScoreRow([1], [2, 3])]
    assert distinct_rows(rows) == ([0, 1, 3], [0, 1, 0, 2])
    image = {"pixel_values": torch.zeros(1)}
    assert distinct_rows([ScoreRow([1], [2], image), ScoreRow([1], [2], image)]) == ([0, 1], [0, 1])
