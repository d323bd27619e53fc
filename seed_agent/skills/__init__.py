"""Hindsight skills: the analyzer prompt, tolerant extraction, injection into ``h``, and a
static library.

SEED, per rollout: the policy reads its own finished trajectory through
:func:`analyzer_prompt` and writes a skill; :func:`extract_skill` turns the reply into a
:class:`Skill` (or :class:`NoSkill`); :func:`inject` builds ``h_skill`` from each step's
prompt ``h``; the trainer re-scores the sampled action tokens under both.
"""

from seed_agent.skills.analyzer import ANALYZER_SYSTEM, JSON_PREFILL, analyzer_images, analyzer_prompt
from seed_agent.skills.annotate import annotate, skill_json
from seed_agent.skills.extract import NoSkill, Skill, SkillResult, extract_skill
from seed_agent.skills.inject import EPISODE_SKILL_HEADER, STEP_SKILL_HEADER, inject, inject_within_budget
from seed_agent.skills.library import LibraryEntry, SkillLibrary
from seed_agent.skills.quality import mentions_trajectory, skill_words

__all__ = [
    "ANALYZER_SYSTEM",
    "EPISODE_SKILL_HEADER",
    "JSON_PREFILL",
    "STEP_SKILL_HEADER",
    "LibraryEntry",
    "NoSkill",
    "Skill",
    "SkillLibrary",
    "SkillResult",
    "analyzer_images",
    "analyzer_prompt",
    "annotate",
    "extract_skill",
    "inject",
    "inject_within_budget",
    "mentions_trajectory",
    "skill_json",
    "skill_words",
]
