"""Build ``h_skill`` from ``h``: the same prompt with a skill inserted.

- the episode skill goes right after the task line (section ``task``);
- the skill for the current step, if the skill has one, goes after the episode skill and the
  history, right before the current turn (section ``observation``).

Nothing else changes: same system message, same example turns, same prefill. So
``h`` and ``h_skill`` end with the same tokens, and the action tokens sampled under
``h`` can be appended to ``h_skill`` and re-scored there (SEED's teacher pass).
"""

from __future__ import annotations

from collections.abc import Callable

from seed_agent.chat import ChatPrompt, Section
from seed_agent.history import cut_text
from seed_agent.skills.extract import Skill, SkillResult

EPISODE_SKILL_HEADER = "Skill learned from experience with this kind of task (follow it):"
STEP_SKILL_HEADER = "Skill for this step:"
#: The episode skill is never cut below this many characters by :func:`inject_within_budget`.
MIN_SKILL_CHARS = 48


def inject(h: ChatPrompt, skill: SkillResult | None, step: int | None = None) -> ChatPrompt:
    """``h`` with ``skill`` inserted; ``h`` itself if there is no skill.

    ``step`` selects the step skill; by default the prompt's own step (``h.meta["step"]``).
    """
    if not isinstance(skill, Skill):
        return h
    step = h.meta.get("step") if step is None else step
    h_skill = h.insert_after("task", Section("skill", f"{EPISODE_SKILL_HEADER}\n{skill.episode_skill}"))
    step_text = skill.for_step(step) if isinstance(step, int) else None
    if step_text:
        h_skill = h_skill.insert_before("observation", Section("step_skill", f"{STEP_SKILL_HEADER} {step_text}"))
    return h_skill


def inject_within_budget(
    h: ChatPrompt,
    skill: SkillResult | None,
    count_tokens: Callable[[ChatPrompt], int],
    max_tokens: int,
    step: int | None = None,
) -> tuple[ChatPrompt, Skill | None]:
    """``inject`` that keeps ``h_skill`` within ``max_tokens``.

    Shortens in this order: drop the step skill; halve the episode skill (cut with a
    marker) down to :data:`MIN_SKILL_CHARS`; give up and return ``(h, None)``. Returns
    the prompt and the skill that was actually injected. ``h`` is never changed, so
    the action tokens stay comparable.
    """
    if not isinstance(skill, Skill):
        return h, None
    tried = inject(h, skill, step)
    if count_tokens(tried) <= max_tokens:
        return tried, skill
    candidate = Skill(skill.episode_skill, skill.episode_summary, ())
    chars = len(candidate.episode_skill)
    while True:
        prompt = inject(h, candidate, step)
        if prompt != tried and count_tokens(prompt) <= max_tokens:  # a prompt already tried does not fit
            return prompt, candidate
        tried = prompt
        if chars <= MIN_SKILL_CHARS:
            return h, None
        chars = max(MIN_SKILL_CHARS, chars // 2)
        candidate = Skill(cut_text(skill.episode_skill, chars), skill.episode_summary, ())
