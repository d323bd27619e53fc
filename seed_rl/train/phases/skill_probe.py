"""The skill probe: on each update's own training batch, does the policy act better with its
hindsight skill in context than without? SEED's premise, measured as training goes.

OPD distils ``pi(a | h_skill)`` into ``pi(a | h)``; that helps only while the teacher acts better
than the student. With ``skill_probe: true`` a SEED run plays every episode that got a skill once
more, on the same task, with that skill in every prompt as the teacher pass injects it (its step
skills in the prompts of their steps: :func:`~seed_agent.skills.inject.inject`), sampled as the
rollout samples. Each such episode is paired with itself in the rollout, where it played without
the skill: the update's metrics give both success rates and the episodes only one of them won.

The probe changes nothing in training: no gradient, its own envs and its own sampling seed (a
:class:`torch.Generator` of its own, so the run's RNG streams and a resumed run are untouched). It
costs one more rollout of the episodes with a skill (about the rollout phase's time), timed as the
``probe`` phase.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seed_agent.policies.base import Policy, SamplingParams
from seed_agent.prompts import PromptBuilder
from seed_agent.skills import Skill, SkillResult
from seed_rl.evaluate.play import evaluate
from seed_rl.rollout import Episode
from seed_rl.train.phases.skill_prompt import task_skill_builders


def probe_skills(
    policy: Policy,
    base: PromptBuilder,
    max_tokens: int | None,
    episodes: Sequence[Episode],
    skills: Sequence[SkillResult | None],
    *,
    env: str,
    split: str,
    sampling: SamplingParams,
    env_kwargs: dict[str, Any],
) -> list[bool | None]:
    """Per episode: whether its task, played again with the episode's skill in context, was won
    (None where the episode got no skill). ``base`` builds the prompts without the skill, within
    room for one; ``max_tokens`` bounds a prompt with it."""
    if len(skills) != len(episodes):
        raise ValueError(f"{len(episodes)} episodes but {len(skills)} skills")
    probed = [i for i, skill in enumerate(skills) if isinstance(skill, Skill)]
    won: list[bool | None] = [None] * len(episodes)
    if not probed:
        return won
    played = evaluate(
        policy,
        base,
        env=env,
        split=split,
        task_ids=[episodes[i].task_id for i in probed],
        sampling=sampling,
        seeds=(sampling.seed if sampling.seed is not None else 0,),
        env_kwargs=env_kwargs,
        task_builders=task_skill_builders(base, max_tokens, [skills[i] for i in probed]),
        progress=False,
    )
    for i, episode in zip(probed, played.episodes, strict=True):
        won[i] = bool(episode.won)
    return won


def probe_metrics(without: Sequence[bool], with_skill: Sequence[bool | None]) -> dict[str, float]:
    """The probe's metrics over the probed episodes (``with_skill`` not None), each paired with its
    own rollout outcome ``without`` the skill: both success rates, how many episodes only the skill
    won (``skill_probe_gained``) and only the rollout won (``skill_probe_lost``)."""
    pairs = [(bool(w), s) for w, s in zip(without, with_skill, strict=True) if s is not None]
    if not pairs:
        return {}
    n = len(pairs)
    return {
        "skill_probe_episodes": float(n),
        "skill_probe_success": sum(s for _, s in pairs) / n,
        "skill_probe_success_without": sum(w for w, _ in pairs) / n,
        "skill_probe_gained": float(sum(s and not w for w, s in pairs)),
        "skill_probe_lost": float(sum(w and not s for w, s in pairs)),
    }
