"""GiGPO's advantage and SEED's critical-step skills, against hand computations."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from corridor_support import TINY_CORRIDOR  # noqa: E402

from seed_agent.chat import SECTION_SEPARATOR  # noqa: E402
from seed_agent.history import EpisodeHistory  # noqa: E402
from seed_agent.prompts import PromptBuilder, prompt_spec  # noqa: E402
from seed_agent.skills import Skill, inject  # noqa: E402
from seed_agent.skills.inject import EPISODE_SKILL_HEADER, STEP_SKILL_HEADER  # noqa: E402
from seed_rl.algo.gigpo import (  # noqa: E402
    anchor_group_ids,
    discounted_returns,
    gigpo_advantages,
    step_credit,
)
from seed_rl.train.phases.skill_pass import keep_critical_steps  # noqa: E402

# Group 0: two trajectories that both win (their outcomes tie), one slower than the other.
#   trajectory 0: rewards -0.1, 1.0        anchors s0, s1
#   trajectory 1: rewards -0.1, -0.1, 1.0  anchors s0, s2, s1
# Group 1 reuses the anchor name s0, but its steps are another task's: never pooled with group 0's.
#   trajectory 2: reward 0.0 (lost)        anchor s0
#   trajectory 3: reward 1.0 (won)         anchor s0
GROUPS = [0, 0, 1, 1]
STEP_REWARDS = [[-0.1, 1.0], [-0.1, -0.1, 1.0], [0.0], [1.0]]
ANCHORS = [["s0", "s1"], ["s0", "s2", "s1"], ["s0"], ["s0"]]
OUTCOMES = [1.0, 1.0, 0.0, 1.0]
GAMMA = 0.5
# R_{i,t} = r_t + 0.5 R_{t+1}: trajectory 0: 1.0, then -0.1 + 0.5 = 0.4; trajectory 1: 1.0, 0.4, -0.1 + 0.2 = 0.1
RETURNS = [[0.4, 1.0], [0.1, 0.4, 1.0], [0.0], [1.0]]


def test_discounted_returns_by_hand():
    assert discounted_returns([0.0, 0.0, 1.0], 0.5) == pytest.approx([0.25, 0.5, 1.0])
    assert discounted_returns([1.0, 2.0, 3.0], 1.0) == pytest.approx([6.0, 5.0, 3.0])
    assert discounted_returns([1.0, 2.0], 0.0) == pytest.approx([1.0, 2.0])
    assert discounted_returns([], 0.9) == []
    with pytest.raises(ValueError, match="gamma"):
        discounted_returns([1.0], 1.5)


def test_anchor_groups_pool_equal_states_within_a_group_only():
    ids = anchor_group_ids(GROUPS, ANCHORS)
    assert ids[0][0] == ids[1][0]  # s0 in group 0
    assert ids[0][1] == ids[1][2]  # s1 in group 0, at different steps
    assert ids[2][0] == ids[3][0]  # s0 in group 1 ...
    assert ids[2][0] != ids[0][0]  # ... is not group 0's s0
    assert len({a for steps in ids for a in steps}) == 4  # (0,s0) (0,s1) (0,s2) (1,s0)


def test_step_advantages_by_hand_mean_norm():
    credit = step_credit(GROUPS, STEP_REWARDS, ANCHORS, gamma=GAMMA)
    assert credit.returns == [pytest.approx(r) for r in RETURNS]
    # (0,s0): returns 0.4 and 0.1, mean 0.25 -> +0.15, -0.15; (0,s1): 1.0 and 1.0 tie -> 0;
    # (0,s2): alone -> 0; (1,s0): 0.0 and 1.0, mean 0.5 -> -0.5, +0.5
    expected = [[0.15, 0.0], [-0.15, 0.0, 0.0], [-0.5], [0.5]]
    for got, want in zip(credit.step_advantages, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-6)
    assert credit.anchor_sizes == [[2, 2], [2, 1, 2], [2], [2]]
    assert credit.anchored_share == pytest.approx(6 / 7)
    assert credit.mean_abs_step_advantage == pytest.approx((0.15 + 0.15 + 0.5 + 0.5) / 7, abs=1e-6)


def test_step_advantages_by_hand_mean_std_norm():
    credit = step_credit(GROUPS, STEP_REWARDS, ANCHORS, gamma=GAMMA, normalize_std=True, eps=0.0)
    std_s0 = math.sqrt(2 * 0.15**2 / 1)  # unbiased std of (0.4, 0.1)
    std_g1 = math.sqrt(2 * 0.5**2 / 1)  # unbiased std of (0.0, 1.0)
    expected = [[0.15 / std_s0, 0.0], [-0.15 / std_s0, 0.0, 0.0], [-0.5 / std_g1], [0.5 / std_g1]]
    for got, want in zip(credit.step_advantages, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-5)


def test_total_advantage_is_episode_plus_weighted_step_term():
    credit = step_credit(GROUPS, STEP_REWARDS, ANCHORS, gamma=GAMMA)
    # A_E: group 0 ties (1, 1) -> 0, 0; group 1: 0 and 1, mean 0.5 -> -0.5, +0.5
    total = gigpo_advantages(OUTCOMES, GROUPS, credit, step_weight=0.5)
    expected = [[0.075, 0.0], [-0.075, 0.0, 0.0], [-0.5 - 0.25], [0.5 + 0.25]]
    for got, want in zip(total, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-6)


def test_only_the_step_term_carries_signal_where_outcomes_tie():
    # group 0's outcomes tie: GRPO gives its steps nothing, GiGPO rewards the faster trajectory's first step
    credit = step_credit(GROUPS[:2], STEP_REWARDS[:2], ANCHORS[:2], gamma=GAMMA)
    total = gigpo_advantages(OUTCOMES[:2], GROUPS[:2], credit)
    assert total[0][0] > 0 > total[1][0]
    assert total[0][0] == pytest.approx(0.15, abs=1e-6) and total[1][0] == pytest.approx(-0.15, abs=1e-6)
    without_steps = gigpo_advantages(OUTCOMES[:2], GROUPS[:2], credit, step_weight=0.0)
    assert all(a == 0.0 for steps in without_steps for a in steps)


def test_a_step_alone_in_its_state_gets_no_step_advantage():
    credit = step_credit([0, 0], [[1.0], [0.0]], [["a"], ["b"]], gamma=0.95)
    assert credit.step_advantages == [[0.0], [0.0]] and credit.anchored_share == 0.0
    assert gigpo_advantages([1.0, 0.0], [0, 0], credit) == [pytest.approx([0.5]), pytest.approx([-0.5])]


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="trajectory 0 has 2 step rewards but 1 anchors"):
        step_credit([0], [[1.0, 0.0]], [["a"]])
    with pytest.raises(ValueError, match="groups has 2 entries"):
        step_credit([0, 0], [[1.0]], [["a"]])


# ------------------------------------------------------------- critical steps
def test_spreads_are_the_return_ranges_of_shared_states():
    credit = step_credit(GROUPS, STEP_REWARDS, ANCHORS, gamma=GAMMA)
    spreads = credit.spreads()
    # trajectory 0: step 1 (s0: 0.4 vs 0.1) and step 2 (s1: 1.0 vs 1.0); trajectory 1: steps 1 and 3, not 2 (alone)
    assert spreads[0] == pytest.approx({1: 0.3, 2: 0.0})
    assert spreads[1] == pytest.approx({1: 0.3, 3: 0.0})
    assert spreads[2] == pytest.approx({1: 1.0}) and spreads[3] == pytest.approx({1: 1.0})


def test_critical_steps_keep_the_largest_spreads_in_step_order():
    skill = Skill("episode", step_skills=((1, "one"), (2, "two"), (3, "three"), (4, "four")))
    spreads = {1: 0.1, 2: 0.5, 3: 0.5, 5: 0.9}  # step 4 shared no state; step 5 has no step skill
    assert keep_critical_steps(skill, spreads, 2).step_skills == ((2, "two"), (3, "three"))
    assert keep_critical_steps(skill, spreads, 5).step_skills == ((1, "one"), (2, "two"), (3, "three"))
    assert keep_critical_steps(skill, spreads, 0).step_skills == ()
    # no step shared its state: the analyzer's own first K
    assert keep_critical_steps(skill, {}, 2).step_skills == ((1, "one"), (2, "two"))
    assert keep_critical_steps(skill, {}, 2).episode_skill == "episode"
    assert keep_critical_steps(None, spreads, 2) is None


def test_h_skill_with_both_skills_exact_text():
    history = EpisodeHistory()
    history.add("You are in a room.", "go to fridge 1")
    builder = PromptBuilder(prompt_spec("alfworld"), style="act", history_length=2)
    h = builder.build("put a mug in cabinet.", "The fridge 1 is closed.", ["open fridge 1"], history)
    skill = Skill("Open a closed receptacle before taking.", step_skills=((2, "Open the fridge first."),))
    h_skill = inject(h, skill, step=2)
    task, observation = h.section("task").text, h.section("observation").text
    expected = h.user_text.replace(
        task, f"{task}{SECTION_SEPARATOR}{EPISODE_SKILL_HEADER}\nOpen a closed receptacle before taking."
    ).replace(observation, f"{STEP_SKILL_HEADER} Open the fridge first.{SECTION_SEPARATOR}{observation}")
    assert h_skill.user_text == expected
    names = ["intro", "task", "skill", "history", "step_skill", "observation", "actions", "instruction"]
    assert h_skill.section_names() == names


# ------------------------------------------------------------------ in a run
CORRIDOR = [*TINY_CORRIDOR, "updates=1", "tasks_per_update=2", "group_size=4"]


def test_each_step_trains_on_its_own_gigpo_advantage(tmp_path):
    from seed_rl.config import load_config
    from seed_rl.train.phases.phase_timer import PhaseTimer
    from seed_rl.train.phases.train_rows import train_rows
    from seed_rl.train.phases.update_batch import advantage_batch
    from seed_rl.train.trainer import Trainer

    cfg = load_config(None, [*CORRIDOR, "advantage=gigpo", "step_advantage_w=2", f"run_dir={tmp_path}"])
    trainer = Trainer(cfg)
    episodes, _ = trainer.rollout(0)
    batch = advantage_batch(episodes, cfg)
    rows = train_rows(trainer.learner, batch, trainer.losses, trainer.row_passes, PhaseTimer())
    trainer.close()
    groups = [e.group for e in episodes]
    rewards = [[r.reward for r in e.rows] for e in episodes]
    anchors = [[r.anchor for r in e.rows] for e in episodes]
    credit = step_credit(groups, rewards, anchors, gamma=cfg.gamma, normalize_std=cfg.normalize_std)
    expected = gigpo_advantages(batch.rewards, groups, credit, step_weight=2.0, normalize_std=cfg.normalize_std)
    sampled = [(e, s) for e, episode in enumerate(episodes) for s, row in enumerate(episode.rows) if row.token_ids]
    assert [r.advantage for r in rows] == [expected[e][s] for e, s in sampled]
    assert all(row.anchor for e in episodes for row in e.rows)  # the corridor names its state
    assert credit.mean_abs_step_advantage > 0  # the step term took part


def test_critical_step_skills_in_a_run(tmp_path):
    import json

    from seed_rl.config import load_config
    from seed_rl.train.trainer import Trainer

    def run(name: str, *overrides: str) -> tuple[dict, list[dict]]:
        folder = tmp_path / name
        cfg = load_config(None, [*CORRIDOR, "algo=seed", "analyzer=scripted", f"run_dir={folder}", *overrides])
        (metrics,) = Trainer(cfg).run()
        return metrics, [json.loads(line) for line in (folder / "skills.jsonl").read_text().splitlines()]

    metrics, skills = run("steps", "step_skills=true", "max_step_skills=1")
    assert any(row.get("step_skills") for row in skills)  # the annotator wrote step skills ...
    assert all(len(row.get("step_skills", [])) <= 1 for row in skills)  # ... kept for one step at most
    assert 0 < metrics["opd_step_skill_share"] < 1
    assert 0 < metrics["anchored_step_share"] <= 1 and "step_advantage_abs_mean" in metrics
    metrics, skills = run("episode-only")  # the paper's setting: episode skills only
    assert not any(row.get("step_skills") for row in skills)
    assert metrics["opd_step_skill_share"] == 0 and "anchored_step_share" not in metrics
