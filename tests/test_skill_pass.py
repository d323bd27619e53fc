"""SEED's analysis pass on hand-made episodes: what the skill-quality metrics count, and the warning."""

from __future__ import annotations

import math

from seed_agent.policies.base import Completion
from seed_rl.rollout import Episode, StepRow
from seed_rl.train.phases.skill_pass import AnalyzerSettings, low_parse_rate_warning, write_skills


def episode(index, task, observations, actions, won=False):
    rows = [
        StepRow(
            episode=index,
            group=0,
            step=i + 1,
            observation=obs,
            action=act,
            response=f"<action>{act}</action>",
            reply_valid=True,
            action_valid=True,
            env_reward=0.0,
            reward=0.0,
            info={},
        )
        for i, (obs, act) in enumerate(zip(observations, actions, strict=True))
    ]
    return Episode(index, 0, "seed/ALFWorld-v0", f"t{index}", task, {}, rows=rows, won=won)


class Replies:
    """An analyzer that answers the i-th prompt with the i-th reply (after the JSON prefill)."""

    def __init__(self, replies):
        self.replies = list(replies)

    def generate(self, prompts, images=None, sampling=None):
        out = []
        for prompt in prompts:
            reply = self.replies.pop(0)
            text = reply[len(prompt.prefill) :] if reply.startswith(prompt.prefill) else reply
            out.append(Completion(text=text, finish_reason="stop"))
        return out


EPISODES = [
    episode(0, "put a mug in the sink", ["You see a mug 1 and a sinkbasin 1."], ["take mug 1"], won=True),
    episode(1, "heat an apple", ["You see an apple 1."], ["go to microwave 1"]),
    episode(2, "cool a tomato", ["You see a fridge 1."], ["open fridge 1"]),
]
REPLIES = [
    '{"episode_summary": "Took it.", "episode_skill": "Take the mug first, then go to the sinkbasin."}',
    '{"episode_summary": "Lost.", "episode_skill": "Be careful and do the task well."}',
    "The agent did something.",  # no JSON: no skill
]


def test_parse_rate_mentions_and_lengths_are_counted_over_the_analysed_episodes():
    skills, report = write_skills(
        EPISODES,
        source="policy",
        settings=AnalyzerSettings(prefill=True),
        policy=Replies(REPLIES),
        count_tokens=lambda text: len(text.split()),  # words stand in for tokens here
    )
    assert [s is not None and hasattr(s, "episode_skill") for s in skills] == [True, True, False]
    m = report.metrics()
    assert m["skills_analyzed"] == 3 and m["skill_parse_rate"] == 2 / 3
    # the first names the episode's mug and sinkbasin; the second names nothing of its episode
    assert m["skill_mentions_trajectory"] == 1 / 2
    assert m["skill_tokens_mean"] == (9 + 7) / 2
    assert len(report.failures) == 1


def test_failed_only_analyses_the_lost_episodes():
    settings = AnalyzerSettings(prefill=True, failed_only=True)
    skills, report = write_skills(EPISODES, source="policy", settings=settings, policy=Replies(REPLIES[1:]))
    assert skills[0] is None and report.analyzed == 2 and report.parsed == 1


def test_a_low_parse_rate_warns_with_the_cause_and_the_fix():
    _, report = write_skills(
        EPISODES, source="policy", settings=AnalyzerSettings(), policy=Replies(["no", "no", REPLIES[0]])
    )
    warning = low_parse_rate_warning(report, "smollm2")
    assert warning is not None and "1/3" in warning and "Stage 1" in warning and "smollm2" in warning
    _, good = write_skills(EPISODES, source="policy", settings=AnalyzerSettings(), policy=Replies(REPLIES[:2] * 2))
    assert low_parse_rate_warning(good, "smollm2") is None
    assert math.isnan(write_skills([], source="policy", settings=AnalyzerSettings(), policy=Replies([]))[1].parse_rate)


def test_episodes_that_read_alike_share_one_greedy_reply():
    """A group's episodes that took the same actions give the analyzer equal prompts: it is asked once."""
    asked = []

    class Recording(Replies):
        def generate(self, prompts, images=None, sampling=None):
            asked.extend(prompts)
            return super().generate(prompts, images, sampling)

    twin = episode(3, "put a mug in the sink", ["You see a mug 1 and a sinkbasin 1."], ["take mug 1"], won=True)
    done = []
    skills, report = write_skills(
        [EPISODES[0], EPISODES[1], twin, EPISODES[2]],
        source="policy",
        settings=AnalyzerSettings(),
        policy=Recording(REPLIES),
        on_analyzed=done.append,
    )
    assert len(asked) == 3 and report.metrics()["analyzer_replies"] == 3
    assert skills[2] == skills[0] and skills[0].episode_skill.startswith("Take the mug")
    assert report.analyzed == 4 and report.parsed == 3 and sum(done) == 4
